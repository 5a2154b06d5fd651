"""Our Transformer served by CTranslate2 (`serving`'s protocol): a folder saved by scripts/run_translation.py
exported once at load (`export_ctranslate2`, into a temporary folder: part of loading, not timed), its weights and
computations in ``--quantization`` (float32 or int8), then per measurement, timed: for each batch (`serving.batches`,
the batches of `serve_ours`), the tokenizer call, ``CTranslate2Translator.translate_ids`` with serve_ours's search
(beam, length penalty, longest output; beam search ends once ``num_beams`` hypotheses have finished, generate()'s
``early_stopping=True``) and ``batch_decode``.

    python -m benchmarks.peers.serve_ctranslate2 --model MODEL_DIR --quantization int8 --source test.en \\
        --tokenizer DATA/tokenizer/tokenizer.json --threads 1 --batch_sizes 1 64 --rounds 1 --sentences 20

Needs ctranslate2 in our environment (``pip install -e ".[serve]"``).
"""

import argparse
import tempfile
from pathlib import Path

from hf_seqmodels.serving.ctranslate2_export import (
    CTranslate2Translator,
    export_ctranslate2,
)

from . import serving
from .serve_ours import BatchTranslator, batched

QUANTIZATIONS = ("float32", "int8")  # of the export's weights, and CTranslate2's compute type


def translating(translator: CTranslate2Translator, **options) -> BatchTranslator:
    """A `BatchTranslator` through the export: the tokenizer call, ``translate_ids`` (``options``: its search) and
    batch_decode of each best hypothesis."""
    tokenizers = translator.tokenizers

    def translate(texts: list[str]) -> list[str]:
        found = translator.translate_ids(tokenizers.source(texts)["input_ids"], **options)
        return [text.strip() for text in tokenizers.target.batch_decode([hypotheses[0][0] for hypotheses in found],
                                                                          skip_special_tokens=True)]

    return translate


def load(args: argparse.Namespace) -> serving.Decoder:
    with tempfile.TemporaryDirectory() as folder:  # CTranslate2 holds the model in memory once it has loaded it
        export = export_ctranslate2(args.model, Path(folder) / "export", quantization=args.quantization)
        translator = CTranslate2Translator(export, compute_type=args.quantization, intra_threads=args.threads)
    return batched(translator.tokenizers, translating(translator, num_beams=args.num_beams,
                                                      length_penalty=args.length_penalty,
                                                      max_new_tokens=args.max_new_tokens))


def main(argv: list[str] | None = None) -> None:
    parser = serving.parser(__doc__)
    parser.add_argument("--quantization", choices=QUANTIZATIONS, default="float32",
                        help="the export's weights and CTranslate2's compute type")
    args = parser.parse_args(argv)
    serving.serve("ctranslate2", args, load, serving.versions_of("hf_seqmodels", "ctranslate2", "transformers",
                                                                 "torch", "tokenizers"))


if __name__ == "__main__":
    main()
