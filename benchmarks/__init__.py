"""Speed and memory benchmarks: our models side by side with what users run today, same weights, same data.

Run them with ``python -m benchmarks.run`` (see ``benchmarks/run.py``); each entry lives in its own module and
returns rows for a table, the ratios that matter and the targets they are held to:

- ``translation``: ``translation.py``; ``batch1_overhead``: ``batch1_overhead.py`` (both decode with the model of
  ``translation_model.py``, with the searches of ``beam_search.py`` and the accounting of ``decoder_calls.py``);
- ``incremental``, ``training``, ``scaling``, ``static_cache``, ``transformer_vs_marian``: the modules of those
  names (the language models they measure are built by ``models.py``, the tutorial baselines by ``tutorial.py``).

What they share (sizes and overrides, timing, peak memory, the result record) is in ``common.py``: every time is
taken by its ``timed`` or ``interleaved``. Quality (BLEU, perplexity) is measured in ``hf_seqmodels/comparison/``:
the suites of ``scripts/compare.py`` and the experiments ``translation_bleu``, ``ptb_lm`` and
``multi30k_training_options`` (``python -m hf_seqmodels.comparison.<name>``), and on a GPU by
``scripts/quality_gpu.sh``.
"""
