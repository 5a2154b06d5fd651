#!/usr/bin/env python
"""Translate sentences, one a line, with a model folder saved by scripts/run_translation.py: from standard input (or
--input) to standard output (or --output), in batches, in the order read; an empty line gives an empty line.

    echo "Two dogs are running through the snow." | python scripts/translate.py outputs/multi30k-gru
    python scripts/translate.py outputs/multi30k-gru --input sentences.en --output sentences.de --num_beams 5
    python scripts/translate.py outputs/multi30k-gru --input sentences.en --num_beams 5 --num_return_sequences 3

With --num_return_sequences N > 1 each sentence gives N lines, best first: `<sentence number from 0>\t<score>\t
<translation>` (the score is beam search's: log-probability / length ** length_penalty). --attention_dir DIR draws
the attention of each sentence into DIR/<line number from 1>.png. Options left out take the model's saved
generation defaults.

--engine ctranslate2 translates with a CTranslate2 export of a Transformer (scripts/export_ctranslate2.py; needs
pip install "hf-seqmodels[serve]"): pass the export's folder, the options are the same.

    python scripts/export_ctranslate2.py outputs/multi30k-transformer outputs/multi30k-ct2 --quantization int8
    python scripts/translate.py outputs/multi30k-ct2 --engine ctranslate2 --input sentences.en --num_beams 5

--int8 translates with our recurrent model quantized for the CPU (its linear layers and LSTM/GRU kernels int8,
hf_seqmodels.serving.quantization); a Transformer is served in int8 by its CTranslate2 export instead.

    python scripts/translate.py outputs/multi30k-gru --int8 --input sentences.en --num_beams 5
"""

import argparse

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.serving import inference


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A folder saved by scripts/run_translation.py (with --engine ctranslate2: "
                                          "one written by scripts/export_ctranslate2.py).")
    parser.add_argument("--engine", default="transformers", choices=inference.ENGINES,
                        help="What decodes: our generate() (transformers) or CTranslate2.")
    parser.add_argument("--int8", action="store_true",
                        help="Quantize our recurrent model to int8 for the CPU (linear layers, LSTM/GRU kernels).")
    parser.add_argument("--num_threads", type=int, default=0,
                        help="CPU threads of the engine (0: its default).")
    parser.add_argument("--input", default=None, help="A UTF-8 file of sentences, one a line (default: stdin).")
    parser.add_argument("--output", default=None, help="The file to write the translations to (default: stdout).")
    parser.add_argument("--num_beams", type=int, default=None, help="Beam size (default: the model's own).")
    parser.add_argument("--num_return_sequences", type=int, default=1,
                        help="Translations per sentence, with their scores (at most --num_beams).")
    parser.add_argument("--max_new_tokens", type=int, default=None, help="Longest translation, in tokens.")
    parser.add_argument("--batch_size", type=int, default=64, help="Sentences translated together.")
    parser.add_argument("--attention_dir", default=None, help="A folder for each sentence's attention picture.")
    args = parser.parse_args()
    if args.engine == "ctranslate2" and args.attention_dir is not None:
        parser.error("--attention_dir draws our model's attention: it needs --engine transformers.")

    model, tokenizers = inference.load_translator(args.model_dir, args.engine, args.num_threads, args.int8)
    options = inference.given(num_beams=args.num_beams, max_new_tokens=args.max_new_tokens)
    sentences = inference.read_lines(args.input)
    translations = inference.translate_nbest(model, tokenizers, sentences, args.num_return_sequences,
                                             args.batch_size, **options)
    text = "".join(f"{line}\n" for line in
                   inference.format_translations(translations, nbest=args.num_return_sequences > 1))
    if args.output is None:
        print(text, end="")
    else:
        with open(args.output, "w", encoding="utf-8") as file:
            file.write(text)
    if args.attention_dir is not None:
        inference.save_attention_pictures(model, tokenizers, sentences, args.attention_dir, **options)


if __name__ == "__main__":
    main()
