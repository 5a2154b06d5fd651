#!/usr/bin/env python
"""Upload a trained model folder to the Hugging Face Hub with its model card.

The folder a training script wrote (safetensors weights, config.json with auto_map and the model code, tokenizer,
results.json) is staged with a card rendered from a results file (`hf_seqmodels.cards`), validated, and uploaded
with huggingface_hub (`create_repo` + `upload_folder`). `--dry-run` stages and validates exactly what would be
uploaded, loads it back with trust_remote_code in a clean subprocess, and stops there: no network.

    python scripts/push_to_hub.py outputs/sst2-bilstm --repo_id me/sst2-bilstm --dry-run
    python scripts/push_to_hub.py outputs/compare/sentiment/bilstm --repo_id me/sst2-bilstm \\
        --results results/sentiment.json --model BiLSTM

HF_ENDPOINT (read by huggingface_hub) selects the Hub server; the token comes from --token, HF_TOKEN or
`hf auth login`.
"""

import argparse
import json
from pathlib import Path

from huggingface_hub import HfApi

from hf_seqmodels.cards import (
    TASKS, check_hub_folder, check_model_dir, load_check, load_run, render_card, stage_hub_folder,
)
from hf_seqmodels.paths import REPO_ROOT

BENCHMARKS = REPO_ROOT / "results" / "benchmarks.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", help="The output_dir of a training script.")
    parser.add_argument("--repo_id", required=True, help="The Hub repository, 'user/name'.")
    parser.add_argument("--results", help="The results file the card states: results/<suite>.json (with --model) "
                                          "or a results.json. Default: <model_dir>/results.json.")
    parser.add_argument("--model", help="The run's name in a results/<suite>.json file, e.g. 'BiLSTM'.")
    parser.add_argument("--benchmarks", help="The results of `python -m benchmarks.run` whose figures on the model's "
                                             "family the card states (translation and language models); '' for "
                                             f"none. Default: {BENCHMARKS.relative_to(REPO_ROOT)}, if there.")
    parser.add_argument("--license", help="The card's license; default: the training data's, else apache-2.0.")
    parser.add_argument("--staging_dir", help="Where the upload folder is written; default: <model_dir>-hub.")
    parser.add_argument("--private", action="store_true", help="Create the repository as private.")
    parser.add_argument("--commit_message", default="Upload model, tokenizer and model card")
    parser.add_argument("--token", help="A Hub token; default: HF_TOKEN or the saved login.")
    parser.add_argument("--dry-run", dest="dry_run", action="store_true",
                        help="Stage, validate and load-check the folder, upload nothing.")
    return parser.parse_args(argv)


def load_benchmarks(path: str | None) -> dict | None:
    if path is None:
        return json.loads(BENCHMARKS.read_text()) if BENCHMARKS.is_file() else None
    if not path:
        return None
    if not Path(path).is_file():
        raise ValueError(f"--benchmarks {path}: no such file; pass the benchmarks.json that `python -m benchmarks.run` "
                         "wrote, or '' for a card without speed figures.")
    return json.loads(Path(path).read_text())


def results_file(args: argparse.Namespace) -> Path:
    """The results file the card is rendered from: --results, else the one the training script wrote."""
    if args.results:
        if not Path(args.results).is_file():
            raise ValueError(f"--results {args.results}: no such file.")
        return Path(args.results)
    path = Path(args.model_dir) / "results.json"
    if not path.is_file():
        raise ValueError(f"{path} is missing: the model card is rendered from the results.json that the training "
                         "script writes beside the model. Pass the run's results with --results: its results.json, "
                         "or results/<suite>.json with --model <run name> for a model that compare.py trained.")
    return path


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    model_dir = Path(args.model_dir)
    check_model_dir(model_dir)
    run = load_run(results_file(args), args.model)
    card = render_card(run, model_name=args.model or args.repo_id.split("/")[-1], license=args.license,
                       benchmarks=load_benchmarks(args.benchmarks))
    staging = Path(args.staging_dir or f"{str(model_dir).rstrip('/')}-hub")
    files = stage_hub_folder(model_dir, staging, card)
    check_hub_folder(staging, run)
    print(f"Staged {staging} for {args.repo_id}:")
    for name in files:
        print(f"  {name:40s} {(staging / name).stat().st_size:>12,d} bytes")
    if args.dry_run:
        print("Loads back:", load_check(staging, TASKS[run["task"]]["auto_class"]))
        print("Dry run: nothing uploaded.")
        return staging
    api = HfApi(token=args.token)
    url = api.create_repo(args.repo_id, private=args.private or None, exist_ok=True)
    commit = api.upload_folder(folder_path=staging, repo_id=args.repo_id, commit_message=args.commit_message)
    print(f"Uploaded to {url}: {commit.commit_url}")
    return staging


if __name__ == "__main__":
    main()
