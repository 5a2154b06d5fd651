#!/usr/bin/env bash
# Every GPU figure in one call of a lent GPU machine (docs/gpu.md), in stages ordered by value, each time-boxed
# so that the whole run ends within TOTAL_S seconds (default 540) and a stage that fails or runs out of time loses
# nothing of the others:
#   a. pytest -m cuda: the real CUDA tests of tests/cuda/            -> cuda_tests.xml (and the log)
#   c. the main job (scripts/run_translation.py, the quickstart's settings, float32) trained on the GPU within
#      TRAIN_MINUTES (default 2), scored on test2016 with sacreBLEU   -> train_results.json, test_hypotheses.txt
#   b. the decoding rows on that model: benchmarks.run's translation entry (batched beam 5, batch size chosen on
#      validation up to the 500 sentences timed, vs the fastest per-sentence search) and batch1_overhead
#                                                                      -> benchmarks.json, benchmarks.md
#
#   bash benchmarks/gpu_run.sh OUT_DIR
#
# OUT_DIR also gets gpu_run.log (everything printed, with timestamps). Reads Multi30k from $HF_SEQMODELS_DATA
# (default .gpu_data/) and installs the wheels of .whl/ into $SITE (default /tmp/site) first: the machine's image
# has an older transformers and no datasets or evaluate. SMOKE=1 DEVICE=cpu checks the script here in a few
# minutes at tiny sizes (PYTHON: the interpreter, default python3).
set -u
out=$1
device=${DEVICE:-cuda}
python=${PYTHON:-python3}
total=${TOTAL_S:-540}
train_minutes=${TRAIN_MINUTES:-2}
sentences=${SENTENCES:-500}  # test2016 sentences the translation entry times
stages=" ${STAGES:-cuda_tests train translation batch1_overhead} "  # which stages run
model=outputs/gpu-multi30k-gru
mkdir -p "$out"
exec > >(tee -a "$out/gpu_run.log") 2>&1

say() { echo "[gpu_run $(date -u +%H:%M:%S) +${SECONDS}s] $*"; }
left() { echo $((total - SECONDS)); }
# stage NAME SECONDS COMMAND...: run it for at most SECONDS (never past TOTAL_S), say how it ended.
stage() {
    local name=$1 limit=$2 rc
    shift 2
    ((limit > $(left))) && limit=$(left)
    if [[ $stages != *" $name "* ]]; then say "stage $name not in STAGES"; return 1; fi
    if ((limit < 20)); then say "stage $name skipped: ${limit}s left of ${total}s"; return 1; fi
    say "stage $name: up to ${limit}s"
    timeout -k 5 "$limit" "$@"
    rc=$?
    say "stage $name: exit status $rc$( ((rc == 124)) && echo ' (time limit)')"
    return $rc
}

site=${SITE:-/tmp/site}
if compgen -G ".whl/*.whl" >/dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
        || say "wheel install failed"
    export PYTHONPATH=$site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
[[ -d .gpu_data ]] && export HF_SEQMODELS_DATA=${HF_SEQMODELS_DATA:-$PWD/.gpu_data}
# TORCHINDUCTOR_COMPILE_THREADS=1: the compiled-Transformer tests' graphs are tiny; a pool of compile workers would
# take longer to start than they take to compile.
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    TORCHINDUCTOR_COMPILE_THREADS=1
say "commit $(git log -1 --format='%h %cs' 2>/dev/null || echo unknown), data ${HF_SEQMODELS_DATA:-default}"
"$python" -c "import sys, torch, transformers, datasets, hf_seqmodels
print('python', sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__,
      'datasets', datasets.__version__, '|', torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv

# a. The real CUDA tests (skipped without a GPU, as in a smoke run here).
stage cuda_tests 110 "$python" -m pytest tests/cuda -m cuda -v -p no:cacheprovider --junitxml "$out/cuda_tests.xml"

# c. The main job: run_translation.py's defaults (quickstart.sh's), stopped by the time budget if not done.
if [[ -n ${SMOKE:-} ]]; then
    train=(--max_train_samples 256 --max_eval_samples 16 --vocab_size 300 --max_train_steps 4 --num_beams 2)
else
    train=()
fi
rm -rf "$model"
# The budget counts training and its evaluations; the test decoding, saving and the reload follow it.
stage train $((train_minutes * 60 + 90)) "$python" scripts/run_translation.py --output_dir "$model" \
    --overwrite_output_dir --time_budget_minutes "$train_minutes" "${train[@]}"
if [[ -f $model/results.json ]]; then
    cp "$model/results.json" "$out/train_results.json"
    cp "$model/test_hypotheses.txt" "$out/" 2>/dev/null
    "$python" -c "import json; r = json.load(open('$out/train_results.json'))
print('main job: test2016 BLEU', r.get('test_bleu'), 'chrF', r.get('test_chrf'), '| epochs', r.get('epochs'),
      '| train_runtime_s', r.get('train_runtime_s'), '| stopped by time budget', r.get('stopped_by_time_budget'))"
    timed_model=$model
else
    say "no trained model: the decoding rows time the benchmarks' stand-in model, and say so"
    timed_model=
fi

# b. The decoding rows on that model, float32. The translation entry first (the headline), then batch 1.
# The three per-sentence searches (the hand search with its beams batched, our loop and generate() at batch 1) take
# most of the translation entry's time, about 20-40 s each per 1000 sentences per round on an H100: 500 sentences,
# 3 rounds, without the slower per-hypothesis search; batch 1 keeps 5 rounds, on 24 sentences, in the time left.
common=(--device "$device" --out "$out" --set "model_dir=$timed_model")
if [[ -n ${SMOKE:-} ]]; then
    common+=(--smoke) translation=() batch1=()
else
    translation=(--set num_sentences="$sentences" --set batch_sizes="$((sentences / 4)),$((sentences / 2)),$sentences"
                 --set rounds=3)
    batch1=(--set batch1_sentences=24)
fi
reserve=$([[ $stages == *" batch1_overhead "* ]] && echo 45 || echo 5)  # batch 1 runs after it
stage translation $(($(left) - reserve)) "$python" -m benchmarks.run --only translation "${common[@]}" \
    --set baselines=beams_batched,ours_batch1,generate_batch1 "${translation[@]}"
stage batch1_overhead 120 "$python" -m benchmarks.run --only batch1_overhead "${common[@]}" "${batch1[@]}"
[[ -f $out/benchmarks.json ]] && "$python" -c "import json
for name, entry in json.load(open('$out/benchmarks.json'))['entries'].items():
    for t in entry['targets']:
        print(f\"{name}: {t['value']} (wanted {t['target']}, met {t['met']}): {t['name']}\")"
say "done; files in $out: $(ls "$out" | tr '\n' ' ')"
