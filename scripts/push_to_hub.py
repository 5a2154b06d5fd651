#!/usr/bin/env python
"""Upload a trained model folder to the Hugging Face Hub with its model card.

The folder a training script wrote (safetensors weights, config.json with auto_map and the model code, tokenizer,
results.json) is staged with a card rendered from a results file, validated (`hf_seqmodels.cards.prepare_hub_folder`)
and uploaded with huggingface_hub (`hf_seqmodels.cards.upload`). `--dry-run` stages and validates exactly what
would be uploaded, loads it back with trust_remote_code in a clean subprocess, and stops there: no network.

    python scripts/push_to_hub.py outputs/sst2-bilstm --repo_id me/sst2-bilstm --dry-run
    python scripts/push_to_hub.py outputs/compare/sentiment/bilstm --repo_id me/sst2-bilstm \\
        --results results/sentiment.json --model BiLSTM

HF_ENDPOINT (read by huggingface_hub) selects the Hub server; the token comes from --token, HF_TOKEN or
`hf auth login`.
"""

import argparse
from pathlib import Path

from hf_seqmodels.cards import load_check, prepare_hub_folder, upload


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", help="The output_dir of a training script.")
    parser.add_argument("--repo_id", required=True, help="The Hub repository, 'user/name'.")
    parser.add_argument("--results", help="The results file the card states: results/<suite>.json (with --model) "
                                          "or a results.json. Default: <model_dir>/results.json.")
    parser.add_argument("--model", help="The run's name in a results/<suite>.json file, e.g. 'BiLSTM'.")
    parser.add_argument("--benchmarks", help="The results of `python -m benchmarks.run` whose figures on the model's "
                                             "family the card states (translation and language models); '' for "
                                             "none. Default: results/benchmarks.json, if there.")
    parser.add_argument("--license", help="The card's license; default: the training data's, else apache-2.0.")
    parser.add_argument("--staging_dir", help="Where the upload folder is written; default: <model_dir>-hub.")
    parser.add_argument("--private", action="store_true", help="Create the repository as private.")
    parser.add_argument("--commit_message", default="Upload model, tokenizer and model card")
    parser.add_argument("--token", help="A Hub token; default: HF_TOKEN or the saved login.")
    parser.add_argument("--dry-run", dest="dry_run", action="store_true",
                        help="Stage, validate and load-check the folder, upload nothing.")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    folder = prepare_hub_folder(args.model_dir, args.repo_id, results=args.results, model=args.model,
                                benchmarks=args.benchmarks, license=args.license, staging_dir=args.staging_dir)
    print(f"Staged {folder.path} for {args.repo_id}:")
    for name in folder.files:
        print(f"  {name:40s} {(folder.path / name).stat().st_size:>12,d} bytes")
    if args.dry_run:
        print("Loads back:", load_check(folder.path, folder.auto_class))
        print("Dry run: nothing uploaded.")
    else:
        url, commit_url = upload(folder.path, args.repo_id, args.commit_message, private=args.private,
                                 token=args.token)
        print(f"Uploaded to {url}: {commit_url}")
    return folder.path


if __name__ == "__main__":
    main()
