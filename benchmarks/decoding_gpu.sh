#!/usr/bin/env bash
# The decoding rows of results/gpu/ in one call of a lent GPU machine: our decoding loop against GenerationMixin's
# (decoding_loop.json) and the translation and batch1_overhead entries of benchmarks.{json,md}.
#
#   bash benchmarks/decoding_gpu.sh OUT_DIR
#
# Reads the trained attention GRU of results/multi30k_training_options.json ($MODEL, default
# outputs/multi30k_training_options/teacher-forcing) and Multi30k under $HF_SEQMODELS_DATA. Wheels in .whl/ (the
# machine's own transformers may be older than pyproject.toml allows) are installed into /tmp/site first. OUT_DIR
# gets decoding_loop.json and benchmarks.{json,md}: results/gpu/benchmarks.json with these two entries re-measured.
# SMOKE=1 DEVICE=cpu checks the script in seconds on tiny sizes.
set -euo pipefail
out=$1
model=${MODEL:-outputs/multi30k_training_options/teacher-forcing}
device=${DEVICE:-cuda}
if [[ -n ${SMOKE:-} ]]; then loop=(--smoke) sizes=(--smoke); else loop=(--model "$model") sizes=(--set "model_dir=$model"); fi
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
mkdir -p "$out"
cp results/gpu/benchmarks.json "$out/"  # --only keeps the other entries of the file it writes
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__,
      torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"
python3 -m benchmarks.decoding_loop "${loop[@]}" --device "$device" --out "$out/decoding_loop.json"
python3 -m benchmarks.run --device "$device" --only translation batch1_overhead --out "$out" "${sizes[@]}"
