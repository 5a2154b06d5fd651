"""The one renderer of the repository's documents: ``python -m tools.render`` rewrites every block of figures in
README.md and docs/ and the cards of ``model_cards/`` from the results files; ``--check`` changes nothing and names
what is stale.

* `figures`: the cells (each names the results file and key path of its figure), `Table` and `Text` blocks, the
  ``<!-- figures:NAME -->`` markers, and the check that prose outside the blocks quotes no measured figure.
* `tables`: `DOCUMENTS`, every Markdown file and its blocks (docs/peers.md's from ``benchmarks/peers/report.py``,
  which builds its tables with `figures` too).
* `reference`: the cards of ``model_cards/``, each rendered by ``hf_seqmodels.cards.render_card``; `main_job`: the
  main job's card, from its row of ``results/translation_bleu.json``.
"""
