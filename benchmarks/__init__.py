"""Speed and memory benchmarks: our models side by side with what users run today, same weights, same data.

Grouped by kind:

- ``run.py``: ``python -m benchmarks.run`` runs the entries and writes ``results/benchmarks.{json,md}``;
  ``gpu_run.sh`` runs them (and the CUDA tests and a training run) on a lent GPU in one call (docs/gpu.md).
- ``entries/``: one module per entry of ``benchmarks.run``, each returning rows for a table, the ratios that matter
  and the targets they are held to: ``translation`` (``translation_decoding.py``) and ``batch1_overhead``, which
  decode with a trained translation model; ``incremental``, ``training`` (``lm_training.py``), ``scaling`` and
  ``static_cache`` on language models; ``transformer_vs_marian`` (also a command of its own).
- ``helpers/``: what entries and studies share: ``common.py`` (sizes and overrides, timing, peak memory, data, the
  result record: every time is taken by its ``timed`` or ``interleaved``), the hand-written searches
  (``beam_search.py``) and decoder-call accounting (``decoder_calls.py``), the timed translation model and its test
  sources (``translation_model.py``), the language models (``language_models.py``) and the tutorial baselines
  (``tutorial.py``).
- ``studies/``: standalone measurements with their own command and results file (``python -m
  benchmarks.studies.<name>``): ``decoding_loop``, ``gradient_checkpointing_memory``, ``translation_training``.
- ``peers/``: JoeyNMT and eole trained and decoded beside ours (docs/peers.md).

Quality (BLEU, perplexity) is measured in ``hf_seqmodels/comparison/``: the suites of ``scripts/compare.py`` and the
experiments ``translation_bleu``, ``ptb_lm`` and ``multi30k_training_options`` (``python -m
hf_seqmodels.comparison.<name>``), and on a GPU by ``scripts/quality_gpu.sh``.
"""
