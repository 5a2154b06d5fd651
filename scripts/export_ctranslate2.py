#!/usr/bin/env python
"""Export a Transformer saved by scripts/run_translation.py (or run_clm.py) into a CTranslate2 model folder, with its
tokenizers and generation defaults beside it; scripts/translate.py --engine ctranslate2 translates with it. Needs
pip install "hf-seqmodels[serve]". The output folder must be new, empty or an earlier export (which is replaced).

    python scripts/export_ctranslate2.py outputs/multi30k-transformer outputs/multi30k-ct2
    python scripts/export_ctranslate2.py outputs/multi30k-transformer outputs/multi30k-ct2-int8 --quantization int8

A config that CTranslate2's Transformer cannot express is refused with the field that blocks it.
"""

import argparse

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.serving.inference import check_model_folder


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A Transformer folder saved by scripts/run_translation.py or run_clm.py.")
    parser.add_argument("output_dir", help="The CTranslate2 folder to write.")
    parser.add_argument("--quantization", default=None,
                        help="How the weights are stored: int8, int8_float32, float16, ... (default: float32).")
    args = parser.parse_args()
    check_model_folder(args.model_dir, "scripts/run_translation.py or run_clm.py")
    from hf_seqmodels.serving.ctranslate2_export import export_ctranslate2

    print(export_ctranslate2(args.model_dir, args.output_dir, args.quantization))


if __name__ == "__main__":
    main()
