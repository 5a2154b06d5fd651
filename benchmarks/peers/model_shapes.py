"""The equal-architecture table's facts: what each toolkit built for the main job's attention GRU, read from the
configuration its trained model saved (ours: config.json; JoeyNMT: model/config.yaml; eole: model/config.json), in
the same words for every toolkit. `benchmarks.peers.run` records it with each run (``train.model_shape``); for runs
trained before it did:

    python -m benchmarks.peers.model_shapes results/peers.json   # fills the runs whose trained model is on disk
"""

import argparse
import json
import shlex
from pathlib import Path

import yaml

from hf_seqmodels.comparison.runner import write_json
from tools.render.figures import Table


REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout the runs' relative paths start from
# Each toolkit's name for the attention all three build: score(q, k) = q^T W k.
LUONG_GENERAL = "Luong general (bilinear)"
ATTENTION = {"ours": {"luong_general": LUONG_GENERAL}, "joeynmt": {"luong": LUONG_GENERAL},
             "eole": {"general": LUONG_GENERAL}}
FIELDS = ("embeddings", "encoder", "decoder", "attention", "input feeding", "decoder's first state",
          "output layer tied to the target embeddings", "position encodings")


def attention(toolkit: str, name: str) -> str:
    """``toolkit``'s attention ``name`` in the words all three share, where it is the one they build."""
    return ATTENTION[toolkit].get(name, name)


def encoder_words(cell: str, layers: int, size: int, bidirectional: bool) -> str:
    return f"{cell.upper()}, {layers} layer(s), " + (f"{size} per direction" if bidirectional else f"{size}")


def ours(model: Path) -> dict:
    config = json.loads((model / "config.json").read_text())
    cell = config["cell_type"]
    return {"embeddings": config["embedding_size"],
            "encoder": encoder_words(cell, config["encoder_layers"], config["hidden_size"],
                                     config["bidirectional_encoder"]),
            "decoder": encoder_words(cell, config["decoder_layers"], config["hidden_size"], False),
            "attention": attention("ours", config["attention_type"]), "input feeding": bool(config["input_feeding"]),
            # modeling_attention_seq2seq's bridge, which no config field turns off
            "decoder's first state": "tanh(Linear(encoder's final states))",
            "output layer tied to the target embeddings": bool(config["tie_word_embeddings"]),
            "position encodings": "none"}


def joeynmt(model: Path) -> dict:
    config = yaml.safe_load((model / "config.yaml").read_text())["model"]
    encoder, decoder = config["encoder"], config["decoder"]
    size = encoder["hidden_size"]  # JoeyNMT's bidirectional encoder has hidden_size per direction
    first = {"bridge": "tanh(Linear(encoder's final states))", "last": "the encoder's final states",
             "zero": "zeros"}[decoder.get("init_hidden", "bridge")]
    return {"embeddings": decoder["embeddings"]["embedding_dim"],
            "encoder": encoder_words(encoder["rnn_type"], encoder["num_layers"], size, encoder["bidirectional"]),
            "decoder": encoder_words(decoder["rnn_type"], decoder["num_layers"], decoder["hidden_size"], False),
            "attention": attention("joeynmt", decoder["attention"]), "input feeding": bool(decoder["input_feeding"]),
            "decoder's first state": first,
            "output layer tied to the target embeddings": bool(config.get("tied_softmax", False)),
            "position encodings": "none"}


def eole(model: Path) -> dict:
    config = json.loads((model / "config.json").read_text())["model"]
    encoder, decoder = config["encoder"], config["decoder"]
    bidirectional = encoder["encoder_type"] == "brnn"  # brnn splits hidden_size over the two directions
    size = encoder["hidden_size"] // 2 if bidirectional else encoder["hidden_size"]
    embeddings = config["embeddings"]
    return {"embeddings": embeddings.get("tgt_word_vec_size") or embeddings["word_vec_size"],
            "encoder": encoder_words(encoder["rnn_type"], encoder["layers"], size, bidirectional),
            "decoder": encoder_words(decoder["rnn_type"], decoder["layers"], decoder["hidden_size"], False),
            "attention": attention("eole", decoder["global_attention"]),
            "input feeding": bool(config.get("input_feed", 1)),
            "decoder's first state": ("tanh(Linear(encoder's final states))" if encoder.get("bridge")
                                      else "the encoder's final states"),
            "output layer tied to the target embeddings": bool(config.get("share_decoder_embeddings", False)),
            "position encodings": embeddings.get("position_encoding_type") or "none"}


READERS = {"ours": ours, "joeynmt": joeynmt, "eole": eole}


def shape(name: str, folder: Path) -> dict:
    """What ``name`` built in ``folder`` (a run's folder: its model in ``folder/model``), in `FIELDS`' words."""
    return READERS[name](folder / "model")


def folder_of(run: dict) -> Path:
    """The folder a recorded run trained in, from its command: ours's ``--output_dir`` (the folder's ``model``), a
    peer's config (``train.yaml`` in the folder)."""
    words = shlex.split(run["train"]["command"])
    path = Path(words[words.index("--output_dir") + 1]).parent if "--output_dir" in words else Path(
        next(word for word in words if word.endswith("train.yaml"))).parent
    return path if path.is_absolute() else REPO_ROOT / path


def fill(results_path: Path) -> list[str]:
    """Record ``train.model_shape`` in the runs of ``results_path`` that lack it and whose model is on disk; the runs
    filled, by toolkit and seed."""
    results = json.loads(results_path.read_text())
    filled = []
    for run in results["runs"]:
        folder = folder_of(run)
        if "model_shape" not in run["train"] and run["toolkit"] in READERS and (folder / "model").is_dir():
            run["train"]["model_shape"] = shape(run["toolkit"], folder)
            filled.append(f"{run['toolkit']} seed {run['seed']}")
    write_json(results_path, results)
    return filled


def words(value) -> str:
    return {True: "yes", False: "no"}[value] if isinstance(value, bool) else str(value)


def section(results: dict) -> list[str]:
    """peers.md's equal-architecture table: a row per `FIELDS` and the parameters, a column per toolkit, from the
    runs that recorded their model's shape (a cell lists every value its seeds gave); nothing where none did."""
    runs = [run for run in results["runs"] if "model_shape" in run["train"]]
    if not runs:
        return []
    names = list(dict.fromkeys(run["toolkit"] for run in results["runs"]))

    def cell(name: str, value_of) -> str:
        values = list(dict.fromkeys(words(value_of(run)) for run in runs if run["toolkit"] == name))
        return " / ".join(values) if values else "not recorded"

    rows = [(field, *(cell(name, lambda run, field=field: run["train"]["model_shape"][field]) for name in names))
            for field in FIELDS]
    rows.append(("parameters (each toolkit's own count)",
                 *(cell(name, lambda run: f"{run['train']['parameters']:,}") for name in names)))
    recorded = ", ".join(f"{run['toolkit']} seed {run['seed']}" for run in runs)
    return ["## Equal architecture", "",
            "The model each toolkit built for the comparison above, as the configuration its trained model saved "
            f"says (recorded from: {recorded}); every difference that could not be removed is listed under What "
            "differs.", "", *Table(("", *names), rows).render().split("\n")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="peers.json")
    args = parser.parse_args(argv)
    print("filled:", ", ".join(fill(args.results)) or "none")


if __name__ == "__main__":
    main()
