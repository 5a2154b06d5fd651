"""Our decoding server (`serving`'s protocol): a folder saved by scripts/run_translation.py loaded once, then per
measurement, timed: for each batch (`serving.batches`), the tokenizer call, ``model.generate(num_beams,
length_penalty, max_new_tokens, early_stopping=True)`` and ``batch_decode`` -- what `translation.translate` does per
batch, and what a user of the package calls. ``generate()`` runs our decoding loop (the package's default);
``--generationmixin`` asks for transformers' own (``custom_generate=None``); ``--int8`` quantizes a recurrent model for
serving when it loads (`quantize_for_serving`). A MarianMTModel trained through our pipeline decodes here too (its
generate() is transformers').

    python -m benchmarks.peers.serve_ours --model MODEL_DIR --source test.en --tokenizer DATA/tokenizer/tokenizer.json \\
        --threads 1 --batch_sizes 1 64 --rounds 1 --sentences 20
"""

import argparse
from collections.abc import Callable

import torch

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.serving.quantization import quantize_for_serving
from hf_seqmodels.tasks import translation

from . import serving

# One batch's translation: its raw source lines in, their detokenized translations out (in the same order).
BatchTranslator = Callable[[list[str]], list[str]]


def batched(tokenizers: translation.TranslationTokenizers, translate: BatchTranslator) -> serving.Decoder:
    """A `serving.Decoder` of our tokenizers: the sentences' lengths in our source tokens (for the batches), then
    ``translate`` on each batch."""
    def decode(texts: list[str], batch_size: int) -> list[str]:
        lengths = [len(ids) for ids in tokenizers.source(texts)["input_ids"]]
        translations = [""] * len(texts)
        for rows in serving.batches(lengths, batch_size):
            for i, text in zip(rows, translate([texts[i] for i in rows]), strict=True):
                translations[i] = text
        return translations

    return decode


def generating(model, tokenizers: translation.TranslationTokenizers, **generate_kwargs) -> BatchTranslator:
    """A `BatchTranslator` through ``model``: the tokenizer call, generate() and batch_decode."""
    model.eval()

    @torch.no_grad()
    def translate(texts: list[str]) -> list[str]:
        batch = tokenizers.source(texts, padding=True, return_tensors="pt").to(model.device)
        batch.pop("token_type_ids", None)
        generated = model.generate(**batch, **generate_kwargs)
        return [text.strip() for text in tokenizers.target.batch_decode(generated, skip_special_tokens=True)]

    return translate


def load(args: argparse.Namespace) -> serving.Decoder:
    tokenizers = translation.load_tokenizers(args.model)
    loop = {"custom_generate": None} if args.generationmixin else {}
    model = translation.load_translation_model(args.model).eval()
    if args.int8:
        quantize_for_serving(model)
    return batched(tokenizers, generating(model, tokenizers,
                                          num_beams=args.num_beams, length_penalty=args.length_penalty,
                                          max_new_tokens=args.max_new_tokens, early_stopping=True, **loop))


def main(argv: list[str] | None = None) -> None:
    parser = serving.parser(__doc__)
    parser.add_argument("--generationmixin", action="store_true",
                        help="decode with transformers' GenerationMixin loop (generate(custom_generate=None)) "
                             "instead of ours")
    parser.add_argument("--int8", action="store_true",
                        help="quantize the recurrent model for serving when it loads (int8 linear layers and LSTM/GRU "
                             "kernels)")
    args = parser.parse_args(argv)
    serving.serve("ours", args, load, serving.versions_of("hf_seqmodels", "transformers", "torch", "tokenizers"))


if __name__ == "__main__":
    main()
