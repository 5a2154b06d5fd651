#!/usr/bin/env bash
# From a fresh checkout to a trained PTB LSTM language model in ./outputs/ptb-lstm (about 10 minutes on 2 CPU
# cores): sets up .venv, trains with the defaults of scripts/run_clm.py, prints perplexities and sample sentences.
# Extra arguments go to run_clm.py, e.g. `bash scripts/quickstart.sh --cell_type gru`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" HF_DATASETS_OFFLINE="${HF_DATASETS_OFFLINE:-1}"  # data is bundled
.venv/bin/python scripts/run_clm.py --output_dir outputs/ptb-lstm "$@"
