"""Our trained Transformer served by CTranslate2 (its export, fp32 and int8) against our own generate(), on
Multi30k test2016 (en->de): how often the outputs are token-identical, the BLEU of each, and how much faster it
translates.

    python -m benchmarks.peers.ctranslate2_speed --model_dir outputs/multi30k-transformer
    python -m benchmarks.peers.ctranslate2_speed --model_dir outputs/multi30k-transformer --max_sentences 64 \\
        --rounds 1 --out /tmp/ct2_smoke                                  # a quick check that it runs

The model: a folder of scripts/run_translation.py --model_type transformer (see docs/serving.md for the command of
the published run). It is exported (hf_seqmodels.ctranslate2_export) to ``<model_dir>-ctranslate2`` (float32) and
``<model_dir>-ctranslate2-int8`` (weights int8, computing in int8 where CTranslate2 can).

Engines, each translating the same batches of test sentences (``--batch_size``, sorted by length; tokenization and
detokenization untimed), all with ``--threads`` CPU threads (torch's intra-op threads, CTranslate2's intra_threads):
- ``generate``: our model's ``generate()`` with transformers' search (``custom_generate=None``), the model's saved
  generation defaults;
- ``custom_generate``: the same through our decoding loop (our models' ``generate()`` by default, what our scripts
  use);
- ``ctranslate2 float32`` and ``ctranslate2 int8``: ``CTranslate2Translator.translate_ids``.
Parity and BLEU: one untimed pass of every test sentence per engine, greedy and with ``--num_beams``, each
engine's tokens against generate()'s (custom_generate's are generate()'s: its own tests hold it to that). Speed, on
every ``--timing_stride``-th batch: a first pass (warm-up), then ``--rounds`` rounds in which the engines take turns
batch by batch (the order reversed from one batch to the next,
`benchmarks.helpers.common.first_pass_then_rounds_by_item`); a ratio is the median over the rounds of that round's
generate() (or custom_generate) seconds / the engine's seconds.
Results: ``<out>.json`` and ``<out>.md`` (default results/peers_ctranslate2).
"""

import argparse
import datetime
import json
import shlex
import sys
from importlib.metadata import version
from pathlib import Path

import torch

from hf_seqmodels.data.paths import data_dir
from hf_seqmodels.evaluation import translation_metrics, translation_signatures
from hf_seqmodels.provenance import provenance
from hf_seqmodels.serving.ctranslate2_export import CTranslate2Translator, as_translated, export_ctranslate2
from hf_seqmodels.serving.inference import load_translator
from hf_seqmodels.tasks.translation import batches_by_length

from ..helpers.common import first_pass_then_rounds_by_item, paired_ratio, rate, read_jsonl

ENGINES = ("generate", "custom_generate", "ctranslate2 float32", "ctranslate2 int8")
COMPUTE_TYPES = {"ctranslate2 float32": "float32", "ctranslate2 int8": "int8"}


def engines(model, translators: dict, num_beams: int) -> dict:
    """Per engine, a function of one batch (its ``tensors`` for our model, its ``ids`` for CTranslate2) that returns
    the translations' token ids (without the start token, through the end token)."""
    eos = set(translators["ctranslate2 float32"].options()["end_token"])

    @torch.no_grad()
    def ours(batch: dict, **loop) -> list[list[int]]:
        sequences = model.generate(**batch["tensors"], num_beams=num_beams, **loop)
        return [as_translated(row.tolist(), eos) for row in sequences]

    functions = {"generate": lambda batch: ours(batch, custom_generate=None), "custom_generate": ours}
    for name, translator in translators.items():
        functions[name] = lambda batch, t=translator: [ids for (ids, _), *_ in t.translate_ids(
            batch["ids"], num_beams=num_beams)]
    return functions


def identical(outputs: dict, name: str, reference: str = "generate") -> float:
    """The percentage of sentences whose tokens from ``name`` equal those from ``reference``."""
    pairs = list(zip(outputs[name], outputs[reference], strict=True))
    return round(100 * sum(a == b for a, b in pairs) / len(pairs), 2)


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    model_dir = Path(args.model_dir)
    model, tokenizers = load_translator(model_dir)
    exports = {"ctranslate2 float32": Path(f"{model_dir}-ctranslate2"),
               "ctranslate2 int8": Path(f"{model_dir}-ctranslate2-int8")}
    for name, folder in exports.items():
        export_ctranslate2(model_dir, folder, quantization=COMPUTE_TYPES[name])
    translators = {name: CTranslate2Translator(folder, compute_type=COMPUTE_TYPES[name], intra_threads=args.threads)
                   for name, folder in exports.items()}
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "test.jsonl.gz")[: args.max_sentences]
    sources, references = [row["en"] for row in rows], [row["de"] for row in rows]
    order = list(batches_by_length(sources, args.batch_size))
    batches = []
    for indices in order:
        tensors = tokenizers.source([sources[i] for i in indices], padding=True, return_tensors="pt",
                                    return_token_type_ids=False)
        batches.append({"tensors": tensors, "ids": tokenizers.source([sources[i] for i in indices])["input_ids"]})

    def in_order(per_batch: list[list[list[int]]]) -> list[list[int]]:
        """The translations of every sentence, in the order of the test set."""
        result = [None] * len(sources)
        for indices, translations in zip(order, per_batch, strict=True):
            for i, ids in zip(indices, translations, strict=True):
                result[i] = ids
        return result

    greedy_fns, beam_fns = engines(model, translators, 1), engines(model, translators, args.num_beams)
    # Parity and BLEU: every sentence, one untimed pass per engine (custom_generate's tokens are generate()'s: its
    # own tests hold it to that). Speed: the rounds, on every --timing_stride-th batch.
    greedy = {name: in_order([greedy_fns[name](batch) for batch in batches]) for name in ("generate", *translators)}
    beam = {name: in_order([beam_fns[name](batch) for batch in batches]) for name in ("generate", *translators)}
    timed_batches = batches[:: args.timing_stride]
    timed_sentences = sum(len(batch["ids"]) for batch in timed_batches)
    first, rounds = first_pass_then_rounds_by_item(beam_fns, timed_batches, args.rounds, "cpu")
    texts = {name: [tokenizers.target.decode(ids, skip_special_tokens=True).strip() for ids in outputs]
             for name, outputs in beam.items()}
    table = []
    for name in ENGINES:
        row = {"engine": name}
        if name in beam:
            scores = translation_metrics(texts[name], references)
            row.update({"bleu": round(scores["bleu"], 2), "chrf": round(scores["chrf"], 2),
                        "greedy_identical_to_generate_pct": identical(greedy, name),
                        "beam_identical_to_generate_pct": identical(beam, name)})
        table.append({**row, "sentences_per_s": rate(timed_sentences, rounds, name),
                      "speedup_vs_generate": paired_ratio(rounds, "generate", name),
                      "speedup_vs_custom_generate": paired_ratio(rounds, "custom_generate", name),
                      "first_pass_s": round(first[name], 2)})
    training = json.loads((model_dir / "results.json").read_text())
    return {
        "title": "CTranslate2 export of our Transformer vs our generate(), Multi30k en->de test2016",
        "command": "python -m benchmarks.peers.ctranslate2_speed " + shlex.join(sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {package: version(package) for package in ("torch", "transformers", "ctranslate2", "sacrebleu")},
        "provenance": provenance([training["arguments"]["seed"]], ["test"], note=args.machine_note),
        "machine_note": f"The machine: {args.machine_note} (the load average at the end is below); absolute speeds "
                        "vary with the load, the ratios (engines taking turns batch by batch) less.",
        "model": {"folder": str(model_dir), "training_command": args.training_command,
                  "seed": training["arguments"]["seed"], "steps": training["steps"],
                  "train_runtime_s": round(training["train_runtime_s"], 1), "test_bleu": training["test_bleu"],
                  "parameters": sum(p.numel() for p in model.parameters()),
                  "generation": {key: getattr(model.generation_config, key)
                                 for key in ("num_beams", "length_penalty", "max_new_tokens", "early_stopping")}},
        "settings": {"sentences": len(sources), "batch_size": args.batch_size, "num_beams": args.num_beams,
                     "threads": args.threads, "rounds": args.rounds, "timing_stride": args.timing_stride,
                     "timed_sentences": timed_sentences,
                     "ctranslate2_compute_types": COMPUTE_TYPES},
        "bleu_signature": translation_signatures()["bleu_signature"],
        "chrf_signature": translation_signatures()["chrf_signature"],
        "rows": table,
        "round_seconds": rounds.seconds,
    }


def markdown(result: dict) -> str:
    settings, model = result["settings"], result["model"]
    lines = [
        f"# {result['title']}", "",
        f"Model: `{model['folder']}`, {model['parameters'] / 1e6:.2f}M parameters, trained by "
        f"`{model['training_command']}` ({model['steps']} steps, {model['train_runtime_s'] / 60:.1f} min; its own "
        f"test BLEU {model['test_bleu']:.2f}). Decoding: the model's saved defaults {model['generation']}, "
        f"`num_beams` {settings['num_beams']} in the timed rounds.",
        "",
        f"{settings['sentences']} sentences in batches of {settings['batch_size']} (sorted by length), "
        f"{settings['threads']} CPU threads for every engine. BLEU, chrF and token identity: every sentence, one pass "
        f"per engine (custom_generate: speed only). Speed: every {settings['timing_stride']}th batch ({settings['timed_sentences']} sentences), a "
        f"warm-up pass then {settings['rounds']} rounds with the engines taking turns batch by batch; speed-ups are "
        "the median (quartiles) over the rounds of generate()'s (or custom_generate's) seconds / the engine's. "
        + result["machine_note"],
        "",
        "| engine | BLEU | chrF | greedy tokens = generate() | beam-5 tokens = generate() | sentences/s | "
        "speed-up vs generate() | speed-up vs custom_generate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        speed, versus, custom = row["sentences_per_s"], row["speedup_vs_generate"], row["speedup_vs_custom_generate"]
        quality = [f"{row[key]}{unit}" if key in row else "-" for key, unit in (
            ("bleu", ""), ("chrf", ""), ("greedy_identical_to_generate_pct", "%"),
            ("beam_identical_to_generate_pct", "%"))]
        lines.append(
            f"| {row['engine']} | {' | '.join(quality)} | {speed['median']} ({speed['quartiles'][0]}-"
            f"{speed['quartiles'][1]}) | {versus['ratio']}x ({versus['quartiles'][0]}-{versus['quartiles'][1]}) | "
            f"{custom['ratio']}x ({custom['quartiles'][0]}-{custom['quartiles'][1]}) |")
    versions = ", ".join(f"{name} {value}" for name, value in result["versions"].items())
    lines += [
        "",
        f"BLEU: {result['bleu_signature']}; chrF: {result['chrf_signature']} (detokenized, one call per engine).",
        f"Command: `{result['command']}`, commit {(result['provenance']['commit'] or 'unknown')[:7]}, "
        f"{result['date']}; {versions}; CPU: {result['provenance']['machine']['cpu']}, load average at the end "
        f"{result['provenance']['machine']['load_average']}.",
        "Parity tests: tests/test_ctranslate2_export.py (test_translations_are_token_identical, "
        "test_language_model_continuations_are_token_identical, test_translate_nbest_matches_ours).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", default="outputs/multi30k-transformer",
                        help="A Transformer saved by scripts/run_translation.py --model_type transformer.")
    parser.add_argument("--training_command", default="(not given)",
                        help="The command that trained --model_dir, recorded in the results.")
    parser.add_argument("--batch_size", type=int, default=32, help="Sentences per batch, every engine.")
    parser.add_argument("--num_beams", type=int, default=5, help="Beam size of the timed rounds.")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of every engine.")
    parser.add_argument("--rounds", type=int, default=3, help="Timed rounds after the warm-up pass.")
    parser.add_argument("--max_sentences", type=int, default=None, help="Only the first N test sentences.")
    parser.add_argument("--timing_stride", type=int, default=4,
                        help="Time every N-th batch (all of them: 1); parity and BLEU cover every sentence.")
    parser.add_argument("--machine_note", default="shared with other jobs running at the same time",
                        help="What else ran on the machine, recorded with the results (e.g. 'quiet: nothing else "
                             "running').")
    parser.add_argument("--out", type=Path, default=Path("results") / "peers_ctranslate2",
                        help="Results go to <out>.json and <out>.md.")
    args = parser.parse_args(argv)
    for name in ("batch_size", "num_beams", "threads", "rounds", "max_sentences", "timing_stride"):
        if (value := getattr(args, name)) is not None and value < 1:
            parser.error(f"--{name} must be at least 1, got {value}.")
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
