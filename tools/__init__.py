"""The repository's own tooling, run from a checkout and never installed (``pyproject.toml`` packages only
``hf_seqmodels``): `tools.render` renders the figures of README.md and docs/ and the cards of ``model_cards/`` from
the committed results files; `tools.output_digests` fingerprints what a fixed set of seeded models computes."""
