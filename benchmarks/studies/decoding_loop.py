"""Our decoding loop (``generate(custom_generate=decode)``, finished sentences leave the batch) against
GenerationMixin's own, on a trained attention seq2seq folder and Multi30k test2016 (English -> German).

Reported:
- agreement, on every sentence asked for (the whole test set by default): beam search in length-sorted batches,
  the share of sentences with identical outputs and the largest difference of ``sequences_scores``;
- speed, as sentences/s (median and quartiles of ``--rounds`` interleaved rounds, after an untimed one) and the
  per-round speed-up of ours over GenerationMixin: batched beam search (length-sorted batches), and greedy and beam
  search at batch 1.

    python -m benchmarks.studies.decoding_loop --model outputs/multi30k-gru --out results/decoding_loop.json
    python -m benchmarks.studies.decoding_loop --smoke   # tiny stand-in model, a few sentences: checks the script runs
"""

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import torch

from hf_seqmodels.models.decoding import decode
from hf_seqmodels.provenance import provenance

from ..entries import translation_decoding
from ..helpers.common import Settings, columns, interleaved, paired_ratio, rate
from ..helpers.translation_model import (
    SMOKE, add_study_arguments, bleu_model, english_test2016, parse_study_arguments, stand_in_model,
)

LOOPS = {"generation_mixin": None, "ours": decode}


def longest_first(sources: list[list[int]]) -> list[int]:
    return sorted(range(len(sources)), key=lambda i: -len(sources[i]))


def translate(model, batches, custom_generate, **options) -> dict[int, tuple[list[int], float | None]]:
    """Each sentence's output tokens (padding after EOS removed) and score, by position in the test set."""
    pad = model.config.pad_token_id
    found = {}
    with torch.no_grad():
        for chosen, ids, mask in batches:
            result = model.generate(input_ids=ids, attention_mask=mask, **options, custom_generate=custom_generate,
                                    return_dict_in_generate=True, output_scores=options.get("num_beams", 1) > 1)
            scores = result.get("sequences_scores")
            for row, position in enumerate(chosen):
                tokens = result.sequences[row].tolist()
                while tokens and tokens[-1] == pad:
                    tokens.pop()
                found[position] = (tokens, None if scores is None else scores[row].item())
    return found


def agreement(model, batches, options: dict) -> dict:
    """How often our loop's outputs equal GenerationMixin's, and the largest score difference."""
    theirs, ours = (translate(model, batches, loop, **options) for loop in LOOPS.values())
    same = sum(theirs[i][0] == ours[i][0] for i in theirs)
    differences = [abs(theirs[i][1] - ours[i][1]) for i in theirs if theirs[i][1] is not None]
    return {"sentences": len(theirs), "identical_outputs_percent": round(100 * same / len(theirs), 2),
            "max_score_difference": max(differences, default=None)}


def timings(model, batches, sentences: int, rounds: int, options: dict, device: str) -> dict:
    """Sentences/s of each loop over ``batches`` and the per-round speed-up of ours."""
    def run(loop: Callable | None) -> Callable[[], object]:
        return lambda: translate(model, batches, loop, **options)

    measured = interleaved({name: run(loop) for name, loop in LOOPS.items()}, rounds, device)
    figures = {}
    for name in LOOPS:
        figures.update(columns(f"{name}_sentences_per_s", rate(sentences, measured, name)))
    figures.update(columns("speedup_ours", paired_ratio(measured, "generation_mixin", "ours")))
    return figures


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_study_arguments(parser)
    parser.add_argument("--sentences", type=int, default=1000, help="test2016 sentences (1000: all)")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--batch1_sentences", type=int, default=100, help="sentences decoded one at a time")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    args = parse_study_arguments(parser, argv)
    if args.smoke:
        timed = stand_in_model("gru", SMOKE, Settings(device=args.device, smoke=True), "smoke run")
        args.sentences, args.batch_size, args.batch1_sentences = 8, 4, 2
        args.num_beams, args.max_new_tokens = 3, 6
    else:
        timed = bleu_model(Path(args.model), args.device)
    model, config = timed.model, timed.model.config
    sources = english_test2016(timed.tokenizer, args.sentences)
    beam = {"num_beams": args.num_beams, "max_new_tokens": args.max_new_tokens, "do_sample": False,
            "early_stopping": True, "length_penalty": 1.0}
    greedy = {"num_beams": 1, "max_new_tokens": args.max_new_tokens, "do_sample": False}
    batches = translation_decoding.batches(sources, longest_first(sources), args.batch_size, config.pad_token_id,
                                           args.device)
    singles = translation_decoding.batches(sources, longest_first(sources[:args.batch1_sentences]), 1,
                                           config.pad_token_id, args.device)
    results = {
        "provenance": provenance([0] if args.smoke else [], ["test"], args.device),  # the smoke stand-in's seed
        "model": timed.origin, "threads": torch.get_num_threads(), "device": args.device,
        "settings": {name: getattr(args, name) for name in ("sentences", "batch_size", "num_beams",
                                                            "max_new_tokens", "batch1_sentences", "rounds")},
        "agreement_beam": agreement(model, batches, beam),
        "agreement_greedy": agreement(model, batches, greedy),
        "beam_batched": timings(model, batches, len(sources), args.rounds, beam, args.device),
        "beam_batch1": timings(model, singles, len(singles), args.rounds, beam, args.device),
        "greedy_batch1": timings(model, singles, len(singles), args.rounds, greedy, args.device),
    }
    print(json.dumps(results, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
