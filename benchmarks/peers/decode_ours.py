"""Translate a file with a model folder saved by scripts/run_translation.py, as the peers' own decoding commands do:
load, translate every line with beam search in batches of similar lengths (`translation.translate`), write one
detokenized translation per line, and print as JSON the seconds the translation took (loading not counted).

    python -m benchmarks.peers.decode_ours MODEL_DIR SOURCE OUTPUT --batch_size 64 --num_beams 5 \\
        --length_penalty 1.0 --max_new_tokens 64
"""

import argparse
import json
import time
from pathlib import Path

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.tasks import translation


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir")
    parser.add_argument("source", type=Path, help="one source sentence per line")
    parser.add_argument("output", type=Path, help="where the translations go, one per line")
    parser.add_argument("--batch_size", type=int, required=True, help="sentences per batch")
    parser.add_argument("--num_beams", type=int, required=True, help="beam size")
    parser.add_argument("--length_penalty", type=float, required=True, help="beam scores are divided by "
                                                                            "length ** this")
    parser.add_argument("--max_new_tokens", type=int, required=True, help="longest translation, eos included")
    args = parser.parse_args(argv)
    model = translation.load_translation_model(args.model_dir)
    tokenizers = translation.load_tokenizers(args.model_dir)
    sources = args.source.read_text(encoding="utf-8").splitlines()
    start = time.perf_counter()
    translations = translation.translate(model, tokenizers, sources, batch_size=args.batch_size,
                                         num_beams=args.num_beams, length_penalty=args.length_penalty,
                                         max_new_tokens=args.max_new_tokens, early_stopping=True)
    seconds = time.perf_counter() - start
    args.output.write_text("".join(f"{line}\n" for line in translations), encoding="utf-8")
    result = {"seconds": seconds, "sentences": len(sources)}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
