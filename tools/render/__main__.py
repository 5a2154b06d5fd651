"""``python -m tools.render [--check]``: render every table of figures in README.md and docs/ and the cards of
``model_cards/`` from the results files; with ``--check``, change nothing and exit 1 naming what is stale: a block
or card that differs from its rendering, a label its results entry contradicts, a measured figure in the prose, a
suite model that does not train with the recipe its search chose on validation."""

import argparse
import sys

from .figures import REPO_ROOT, render_files, stale_documents, stale_prose
from .recipes import stale_recipes
from .reference import render_reference_cards, stale_reference_cards
from .tables import DOCUMENTS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.render", description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="compare the committed text with its rendering instead of rewriting it")
    args = parser.parse_args(argv)
    if args.check:
        stale = (stale_documents(DOCUMENTS) + stale_prose(REPO_ROOT) + stale_reference_cards()
                 + stale_recipes(REPO_ROOT / "results"))
        print("\n".join(stale) if stale else "every table and card is current")
        return 1 if stale else 0
    changed = render_files(DOCUMENTS) + render_reference_cards()
    print("rendered: " + (", ".join(changed) if changed else "nothing changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
