"""The comparisons `benchmarks.peers` runs (``--architecture`` of its sweep and runs): the main job's attention GRU
beside JoeyNMT and eole (`recipe`), and our Transformer beside JoeyNMT's, eole's and transformers' MarianMTModel
(`transformer_recipe`). Each has its recipe, its toolkits and tuning, and its own results files and work folder, so
that one never touches the other's."""

import argparse
import dataclasses
from pathlib import Path
from types import ModuleType

from . import recipe, transformer_recipe


@dataclasses.dataclass(frozen=True)
class Architecture:
    """One comparison: ``module`` writes its recipe in every toolkit's terms (`ours_arguments`, `joeynmt_config`,
    `eole_config`, `same_for_all`, and its `SWEEP`, `SCHEDULE_WORDS` and `DIFFERENCES`)."""

    name: str  # the value of --architecture
    recipe: type  # its recipe class (`recipe.Recipe`, `transformer_recipe.TransformerRecipe`)
    module: ModuleType
    toolkits: tuple[str, ...]  # ours (every seed's baseline) first
    longest_first: tuple[str, ...]  # the toolkits by training time, the slowest first (the quality phase's order)
    stem: str  # of its results files in --out: <stem>.json, <stem>_sweep.json, <stem>_decoding.json,
    # <stem>_translations/, <stem>.md
    work: str  # its default --work folder, under the repository's outputs/
    recipes: str  # where each toolkit's configurations come from, in words (the sweep's section of the report)
    title: str  # of its report (<stem>.md)

    @property
    def sweep(self) -> dict:
        """Toolkit -> its configurations (`Tuning`), the same number for each."""
        return self.module.SWEEP

    @property
    def schedule_words(self) -> dict:
        return self.module.SCHEDULE_WORDS

    @property
    def differences(self) -> dict:
        return self.module.DIFFERENCES

    @property
    def results(self) -> str:
        """The quality phase's results file (benchmarks.peers.run)."""
        return f"{self.stem}.json"

    @property
    def sweep_results(self) -> str:
        """The sweep's results file (benchmarks.peers.sweep)."""
        return f"{self.stem}_sweep.json"

    @property
    def decoding_results(self) -> str:
        """The decoding grid's results file (benchmarks.peers.decoding_grid)."""
        return f"{self.stem}_decoding.json"

    @property
    def translations(self) -> str:
        """The folder of the quality runs' test translations, <toolkit>.seed<n>.txt, beside `results`."""
        return f"{self.stem}_translations"


RNN = Architecture(name="rnn", recipe=recipe.Recipe, module=recipe, toolkits=("ours", "joeynmt", "eole"),
                   longest_first=("joeynmt", "ours", "eole"), stem="peers", work="peers",
                   recipes="each from its documented defaults and RNN examples",
                   title="Beside JoeyNMT and eole: the main job (attention GRU, Multi30k En->De)")
TRANSFORMER = Architecture(
    name="transformer", recipe=transformer_recipe.TransformerRecipe, module=transformer_recipe,
    toolkits=("ours", "joeynmt", "eole", "marian"), longest_first=("joeynmt", "ours", "marian", "eole"),
    stem="peers_transformer", work="peers_transformer",
    recipes="each from its documented Transformer recipe (benchmarks/peers/transformer_recipe.py)",
    title="Beside JoeyNMT, eole and MarianMTModel: our Transformer (Multi30k En->De)")
ARCHITECTURES = {architecture.name: architecture for architecture in (RNN, TRANSFORMER)}


def of(recipe_: object) -> Architecture:
    """The comparison whose recipe ``recipe_`` is."""
    return next(architecture for architecture in ARCHITECTURES.values() if isinstance(recipe_, architecture.recipe))


TOOLKITS = tuple(dict.fromkeys(name for architecture in ARCHITECTURES.values() for name in architecture.toolkits))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that pick a comparison and what of it runs where: --architecture, --toolkits and --work (their
    defaults the architecture's, set by `parsed`)."""
    parser.add_argument("--architecture", default=RNN.name, choices=ARCHITECTURES,
                        help="the comparison: 'rnn', the main job's attention GRU beside JoeyNMT and eole, or "
                             "'transformer', our Transformer beside JoeyNMT's, eole's and transformers' MarianMTModel "
                             "(ours is every seed's baseline); each has its own results files and work folder")
    parser.add_argument("--toolkits", nargs="+", default=None, choices=TOOLKITS,
                        help="the toolkits to run (default: every one of the architecture's; marian is the "
                             "transformer's alone)")
    parser.add_argument("--work", type=Path, default=None,
                        help="models, logs, configs, translations and the prepared data (default: "
                             "outputs/<the architecture's folder>: outputs/peers, outputs/peers_transformer)")


def parsed(parser: argparse.ArgumentParser, args: argparse.Namespace, outputs: Path) -> Architecture:
    """The architecture ``args`` picked, with its defaults filled in: every toolkit of it, and the work folder under
    ``outputs``; a toolkit the architecture lacks is refused (``parser.error``)."""
    architecture = ARCHITECTURES[args.architecture]
    args.toolkits = args.toolkits or list(architecture.toolkits)
    strangers = [name for name in args.toolkits if name not in architecture.toolkits]
    if strangers:
        parser.error(f"--toolkits {' '.join(strangers)}: not in the {architecture.name} comparison; valid options: "
                     f"{', '.join(architecture.toolkits)}.")
    args.work = args.work or outputs / architecture.work
    return architecture
