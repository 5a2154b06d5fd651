#!/usr/bin/env bash
# The quality runs on one GPU, all at once (the models are small: a GPU has room for all of them, and 16 CPU cores
# feed them). Training times in the tables therefore include the contention between the runs.
#
#   bash scripts/quality_gpu.sh OUT_DIR [SECONDS]
#
# OUT_DIR gets translation_bleu.{json,md} (attention GRU and LSTM), transformer-*/results.json (three Transformer
# recipes on Multi30k), sentiment.* and ner.* (scripts/compare.py --full) and logs/. Every run stops after SECONDS
# (default 540), its training budget being a minute less. EXTRA_ARGS go to every training script (smoke runs).
set -u
out=$1
seconds=${2:-540}
minutes=$(python -c "print(max(0.2, ($seconds - 60) / 60))")
extra=${EXTRA_ARGS:-}
mkdir -p "$out/logs"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

# run NAME COMMAND...: in the background, logged, killed after $seconds.
run() { local name=$1; shift; timeout "$seconds" "$@" >"$out/logs/$name.log" 2>&1 & }

run rnn-bleu python -m hf_seqmodels.comparison.translation_bleu --cells gru lstm --jobs 2 \
    --time_budget_minutes "$minutes" --out "$out" -- --num_train_epochs 10 $extra
# transformer NAME CONFIG_OVERRIDES LEARNING_RATE: one Transformer recipe through run_translation.py.
transformer() {
    run "transformer-$1" python scripts/run_translation.py --model_type transformer \
        --output_dir "$out/transformer-$1" --overwrite_output_dir --config_overrides "$2" --learning_rate "$3" \
        --num_warmup_steps 1000 --num_train_epochs 25 --time_budget_minutes "$minutes" $extra
}
small="d_model=256,ffn_dim=1024,encoder_layers=3,decoder_layers=3,num_heads=4,share_encoder_decoder_embeddings=true"
transformer post "$small" 5e-4
transformer pre "$small,norm_position=pre,dropout=0.2" 1e-3
transformer 512 "d_model=512,ffn_dim=2048,encoder_layers=3,decoder_layers=3,num_heads=8,dropout=0.3,\
share_encoder_decoder_embeddings=true" 5e-4
for suite in sentiment ner; do
    run "$suite" python scripts/compare.py "$suite" --full --jobs 7 --time_budget_minutes "$minutes" \
        --results_dir "$out" --output_dir "$out/compare" $extra
done
wait
tail -n 3 "$out"/logs/*.log
