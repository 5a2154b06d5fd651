#!/usr/bin/env python
"""Average the weights of a run's last N step_<n> checkpoints (or of the checkpoint folders listed) into a model
folder, as fairseq's scripts/average_checkpoints.py (hf_seqmodels.training.averaging):

    python scripts/average_checkpoints.py --checkpoint_dir outputs/multi30k-gru-checkpoints --last 5 \\
        --output_dir outputs/multi30k-gru-avg5
    python scripts/average_checkpoints.py --inputs ckpts/step_800 ckpts/step_900 --output_dir outputs/avg2

The output folder loads like a run's output (AutoModelForSeq2SeqLM.from_pretrained, scripts/translate.py).
"""

import argparse

from hf_seqmodels.training.averaging import average_checkpoints, last_checkpoints


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint_dir", help="A run's checkpoint folder (its step_<n> checkpoints).")
    parser.add_argument("--last", type=int, help="Average the newest this many checkpoints of --checkpoint_dir.")
    parser.add_argument("--inputs", nargs="+", help="Checkpoint folders to average (in place of the two above).")
    parser.add_argument("--output_dir", required=True, help="The new model folder (must not exist).")
    args = parser.parse_args()
    if (args.inputs is None) == (args.checkpoint_dir is None or args.last is None):
        parser.error("pass either --checkpoint_dir with --last N, or --inputs")
    checkpoints = args.inputs or last_checkpoints(args.checkpoint_dir, args.last)
    print(f"Averaged {len(checkpoints)} checkpoints into {average_checkpoints(checkpoints, args.output_dir)}")


if __name__ == "__main__":
    main()
