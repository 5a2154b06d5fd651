"""A trained recurrent translator in float32 and quantized to int8 for the CPU (`quantize_for_serving`,
hf_seqmodels.serving.quantization) on Multi30k test2016 (English -> German): the test BLEU of each, their speed and
how many times faster int8 is.

    python -m benchmarks.studies.int8_recurrent --model outputs/multi30k-gru --threads 2 \\
        --machine_note "quiet: nothing else running"                  # writes results/int8_recurrent.json
    python -m benchmarks.studies.int8_recurrent --model <folder> --sentences 8 --batch_sizes 1,4 --rounds 1 \\
        --out /tmp/int8_recurrent.json                                 # a quick check that it runs

The model: a folder of scripts/run_translation.py (an attention GRU or LSTM; a Transformer is served in int8 by its
CTranslate2 export, benchmarks/peers/ctranslate2_speed.py). Both variants decode the first ``--sentences`` test
sentences with generate() (beam search, ``--num_beams`` beams, ``--length_penalty``, at most ``--max_new_tokens``
tokens; the model's other saved generation defaults), in batches of each of ``--batch_sizes`` sentences of similar
lengths (as translate.py batches them), on ``--threads`` CPU threads. For each batch size: a first pass (warm-up),
then ``--rounds`` rounds in which the two take turns batch by batch, the order reversed from one batch to the next
(`benchmarks.helpers.common.first_pass_then_rounds_by_item`). Reported per batch size and variant: the test BLEU of
its translations (sacreBLEU, one corpus call; an int8 model's outputs depend on the batch, whose range its
activations are quantized to, so each batch size has its own), sentences/s and output tokens/s (the translations'
tokens, the end token not counted) as medians and quartiles over the rounds; per batch size, the speed-up of int8
(the median of each round's float32 seconds / int8 seconds) and the share of sentences translated identically.
"""

import argparse
import copy
import json
from pathlib import Path

import torch

from hf_seqmodels.comparison.runner import write_json
from hf_seqmodels.data.paths import data_dir
from hf_seqmodels.evaluation import translation_metrics, translation_signatures
from hf_seqmodels.provenance import provenance
from hf_seqmodels.serving.quantization import quantize_for_serving, quantized_module_names
from hf_seqmodels.tasks.translation import batches_by_length, load_tokenizers

from ..helpers.beam_search import strip
from ..helpers.common import first_pass_then_rounds_by_item, paired_ratio, rate, read_jsonl
from ..helpers.translation_model import bleu_model

VARIANTS = ("float32", "int8")


def read_test2016(count: int) -> tuple[list[str], list[str]]:
    """The first ``count`` English sources of Multi30k test2016 and their German references."""
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "test.jsonl.gz")[:count]
    return [row["en"] for row in rows], [row["de"] for row in rows]


def training_seeds(folder: Path) -> list[int]:
    """The seed of the run that trained the model in ``folder`` (from its results.json), for the provenance."""
    results = folder / "results.json"
    seed = json.loads(results.read_text()).get("arguments", {}).get("seed") if results.is_file() else None
    return [] if seed is None else [seed]


def batch_items(tokenizers, sources: list[str], batch_size: int) -> list[dict]:
    """The sources in batches of ``batch_size`` of similar lengths: each its sentences' positions and its tensors."""
    return [{"positions": positions,
             "tensors": tokenizers.source([sources[i] for i in positions], padding=True, return_tensors="pt",
                                          return_token_type_ids=False)}
            for positions in batches_by_length(sources, batch_size)]


def translator(model, options: dict):
    """A function of one batch item: each sentence's output tokens (without the start token, up to the end token)."""
    @torch.no_grad()
    def translate(item: dict) -> list[list[int]]:
        sequences = model.generate(**item["tensors"], **options)
        return [strip(row[1:], model.config) for row in sequences.tolist()]

    return translate


def in_order(items: list[dict], outputs: list[list[list[int]]], count: int) -> list[list[int]]:
    """The outputs of every batch item, by the sentences' positions in the test set."""
    found = [None] * count
    for item, tokens in zip(items, outputs, strict=True):
        for position, ids in zip(item["positions"], tokens, strict=True):
            found[position] = ids
    return found


def compare(models: dict, tokenizers, sources: list[str], references: list[str], batch_size: int, rounds: int,
            options: dict) -> dict:
    """Both variants at ``batch_size``: their rows (BLEU, speeds), the speed-up of int8, the share of identical
    outputs, and every round's seconds."""
    items = batch_items(tokenizers, sources, batch_size)
    functions = {name: translator(model, options) for name, model in models.items()}
    first, measured = first_pass_then_rounds_by_item(functions, items, rounds, "cpu")
    outputs = {name: in_order(items, measured.last[name], len(sources)) for name in models}
    rows = []
    for name in models:
        texts = [tokenizers.target.decode(ids, skip_special_tokens=True).strip() for ids in outputs[name]]
        tokens = sum(map(len, outputs[name]))
        rows.append({"batch_size": batch_size, "variant": name,
                     "test_bleu": round(translation_metrics(texts, references)["bleu"], 2),
                     "sentences_per_s": rate(len(sources), measured, name),
                     "output_tokens_per_s": rate(tokens, measured, name), "output_tokens": tokens,
                     "first_pass_s": round(first[name], 3)})
    same = sum(a == b for a, b in zip(*outputs.values(), strict=True))
    return {"rows": rows, "speedup_int8": paired_ratio(measured, "float32", "int8"),
            "identical_outputs_percent": round(100 * same / len(sources), 2), "round_seconds": measured.seconds}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a folder saved by scripts/run_translation.py")
    parser.add_argument("--sentences", type=int, default=1000, help="test2016 sentences (1000: all)")
    parser.add_argument("--batch_sizes", default="1,64", help="comma-separated batch sizes (default 1,64)")
    parser.add_argument("--num_beams", type=int, default=5)
    parser.add_argument("--length_penalty", type=float, default=1.0)
    parser.add_argument("--max_new_tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds after the first pass")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--machine_note", default=None, help='what to say about the machine ("shared machine")')
    parser.add_argument("--out", type=Path, default=Path("results/int8_recurrent.json"))
    args = parser.parse_args(argv)
    batch_sizes = [int(size) for size in args.batch_sizes.split(",") if size]
    if not batch_sizes or min(batch_sizes) < 1 or args.sentences < 1 or args.rounds < 1:
        parser.error("--batch_sizes, --sentences and --rounds must be positive")
    if args.threads:
        torch.set_num_threads(args.threads)

    timed = bleu_model(Path(args.model), "cpu")
    models = {"float32": timed.model, "int8": quantize_for_serving(copy.deepcopy(timed.model))}
    tokenizers = load_tokenizers(args.model)
    sources, references = read_test2016(args.sentences)
    options = {"num_beams": args.num_beams, "length_penalty": args.length_penalty,
               "max_new_tokens": args.max_new_tokens, "do_sample": False}
    results = {
        "title": "int8 (dynamic quantization) vs float32 of our recurrent translator, Multi30k en->de test2016",
        "provenance": provenance(training_seeds(Path(args.model)), ["test"], note=args.machine_note),
        "model": {**timed.origin, "cell_type": timed.model.config.cell_type,
                  "attention_type": timed.model.config.attention_type,
                  "parameters": sum(param.numel() for param in timed.model.parameters())},
        "quantized_modules": quantized_module_names(timed.model),
        "settings": {"sentences": len(sources), "batch_sizes": batch_sizes, "rounds": args.rounds,
                     "threads": torch.get_num_threads(), **options},
        "bleu_signature": translation_signatures()["bleu_signature"],
        "by_batch_size": {str(size): compare(models, tokenizers, sources, references, size, args.rounds, options)
                          for size in batch_sizes},
    }
    print(json.dumps({size: {"rows": found["rows"], "speedup_int8": found["speedup_int8"]}
                      for size, found in results["by_batch_size"].items()}, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
