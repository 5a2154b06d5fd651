#!/usr/bin/env python
"""Draw the attention of a trained translation model over one sentence: a heatmap of source tokens x the tokens of
its translation, as PNG.

    python scripts/plot_attention.py outputs/multi30k-gru "Two dogs are running through the snow."
    python scripts/plot_attention.py outputs/multi30k-gru "A man sleeps." --output man.png --num_beams 1

The translation uses the model's saved generation defaults unless --num_beams is given. Each row shows where the
model looked while writing that target token (for a Transformer: the last layer's cross-attention, mean over heads).
"""

import argparse

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.tasks.translation import save_attention_plot


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A folder saved by scripts/run_translation.py.")
    parser.add_argument("sentence", help="The source sentence to translate.")
    parser.add_argument("--output", default=None, help="The PNG to write (default: <model_dir>/attention.png).")
    parser.add_argument("--num_beams", type=int, default=None, help="Beam size (default: the model's own).")
    args = parser.parse_args()
    options = {} if args.num_beams is None else {"num_beams": args.num_beams}
    path = save_attention_plot(args.model_dir, args.sentence, args.output, **options)
    if path is None:
        parser.exit(1, f"{args.model_dir} returns no attention weights (attention_type='none'?): nothing to draw.\n")
    print(path)


if __name__ == "__main__":
    main()
