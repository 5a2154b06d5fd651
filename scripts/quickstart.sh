#!/usr/bin/env bash
# From a fresh checkout to a trained attention GRU translating English to German (the bundled Multi30k), about
# 10 minutes on 2 free CPU cores: sets up .venv, trains with the defaults of scripts/run_translation.py, prints
# test2016 BLEU/chrF with beam search, reloads the saved folder with AutoModelForSeq2SeqLM, translates a few
# sentences, draws outputs/multi30k-gru/attention.png and stages the Hub folder with its model card in
# outputs/multi30k-gru-hub (push_to_hub.py --dry-run: nothing is uploaded). Extra arguments go to
# run_translation.py, e.g.
# `bash scripts/quickstart.sh --config_overrides cell_type=lstm,attention_type=bahdanau`. A first argument
# --locked or --lowest sets up as scripts/setup.sh does with it (--lowest: the lowest allowed transformers, in
# .venv-lowest).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" HF_DATASETS_OFFLINE="${HF_DATASETS_OFFLINE:-1}"  # data is bundled
# Idle OpenMP threads sleep instead of spinning: on a machine busy with other work, spinning threads waiting for a
# descheduled peer made each training step several times slower.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
"$venv/bin/python" scripts/run_translation.py --output_dir outputs/multi30k-gru --overwrite_output_dir "$@"
echo "Attention picture: outputs/multi30k-gru/attention.png"
"$venv/bin/python" scripts/push_to_hub.py outputs/multi30k-gru --repo_id your-name/multi30k-gru --dry-run
echo "Model card: outputs/multi30k-gru-hub/README.md"
