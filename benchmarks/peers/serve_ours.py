"""Our decoding server (`serving`'s protocol): a folder saved by scripts/run_translation.py loaded once, then per
measurement, timed: for each batch (`serving.batches`), the tokenizer call, ``model.generate(num_beams,
length_penalty, max_new_tokens, early_stopping=True)`` and ``batch_decode`` -- what `translation.translate` does per
batch, and what a user of the package calls.

    python -m benchmarks.peers.serve_ours --model MODEL_DIR --source test.en --tokenizer DATA/tokenizer/tokenizer.json \\
        --threads 1 --batch_sizes 1 64 --rounds 1 --sentences 20
"""

import argparse

import torch

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.tasks import translation

from . import serving


def translator(model, tokenizers: translation.TranslationTokenizers, **generate_kwargs) -> serving.Decoder:
    """Our `serving.Decoder`: the sentences' lengths in pieces (for the batches), then per batch the tokenizer call,
    generate() and batch_decode."""
    model.eval()

    @torch.no_grad()
    def decode(texts: list[str], batch_size: int) -> list[str]:
        lengths = [len(ids) for ids in tokenizers.source(texts)["input_ids"]]
        translations = [""] * len(texts)
        for rows in serving.batches(lengths, batch_size):
            batch = tokenizers.source([texts[i] for i in rows], padding=True, return_tensors="pt").to(model.device)
            batch.pop("token_type_ids", None)
            generated = model.generate(**batch, **generate_kwargs)
            for i, text in zip(rows, tokenizers.target.batch_decode(generated, skip_special_tokens=True)):
                translations[i] = text.strip()
        return translations

    return decode


def load(args: argparse.Namespace) -> serving.Decoder:
    return translator(translation.load_translation_model(args.model), translation.load_tokenizers(args.model),
                      num_beams=args.num_beams, length_penalty=args.length_penalty,
                      max_new_tokens=args.max_new_tokens, early_stopping=True)


def main(argv: list[str] | None = None) -> None:
    args = serving.parser(__doc__).parse_args(argv)
    serving.serve("ours", args, load, serving.versions_of("hf_seqmodels", "transformers", "torch", "tokenizers"))


if __name__ == "__main__":
    main()
