"""One module per task, each callable from Python: its arguments, data, tokenizer, model, training, evaluation and
results, with a ``run(*arguments)`` that does all of it and returns the results written to ``results.json``.

* `translation`: an encoder-decoder (attention seq2seq or Transformer), BLEU / chrF.
* `language_modeling`: a causal LM (recurrent or Transformer), perplexity.
* `text_classification`, `token_classification`: a classifier or tagger (recurrent, Transformer, or a pretrained
  checkpoint), accuracy / F1; what they share is in `labelling`.

Shared arguments and the one route from ``--model_type`` to a config are in `arguments`; the scripts in
``scripts/`` only parse (`arguments.task_parser`) and call ``run``.
"""
