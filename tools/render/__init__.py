"""The one renderer of the repository's documents: ``python -m tools.render`` rewrites every block of figures in
README.md and docs/ and the cards of ``model_cards/`` from the results files; ``--check`` changes nothing and names
what is stale.

* `figures`: the cells (each names the results file and key path of its figure), `Table` and `Text` blocks, the
  ``<!-- figures:NAME -->`` markers, and the checks: blocks that differ from their rendering (`stale_documents`),
  measured figures in the prose outside the blocks (`stale_prose`).
* `labels`: the cells that label a table from the results entries it renders: the split, the seeds, the device.
* `prose`: what counts as a measured figure in prose: every number, less those a rule of ``NOT_MEASURED`` excepts.
* `tables`: `DOCUMENTS`, every Markdown file and its blocks (docs/peers.md's from ``benchmarks/peers/report.py``,
  which builds its tables with `figures` too).
* `recipes`: the check that a suite model trains with the recipe its search chose on validation
  (``results/<suite>_recipe_search.json``).
* `reference`: the cards of ``model_cards/``, each rendered by ``hf_seqmodels.cards.render_card``; `main_job`: the
  main job's card, from its row of ``results/translation_bleu.json``.
"""
