#!/usr/bin/env python
"""Train a translation model (an attention GRU on Multi30k English -> German by default) and report its test BLEU
(`hf_seqmodels.tasks.translation.run`: BPE tokenizers, Accelerate training with the best checkpoint by validation
BLEU, beam search, sacreBLEU's BLEU and chrF, the saved folder reloaded and an attention picture).

    python scripts/run_translation.py --output_dir outputs/multi30k-gru
    python scripts/run_translation.py --output_dir outputs/multi30k-lstm --config_overrides cell_type=lstm
    python scripts/run_translation.py --output_dir outputs/multi30k-transformer --model_type transformer \\
        --config_overrides d_model=256,ffn_dim=1024,encoder_layers=3,decoder_layers=3,num_heads=4,norm_position=pre,\\
dropout=0.2,share_encoder_decoder_embeddings=true --learning_rate 1e-3 --num_warmup_steps 1000 \\
        --num_train_epochs 25 --time_budget_minutes 60

The defaults (a bidirectional GRU encoder, a GRU decoder with Luong attention, 256 units, a joint BPE vocabulary of
6000; Adam at 3e-3 with warmup and linear decay over 3 epochs, label smoothing 0.1) train for 3 epochs. Training
stops after 9 minutes (evaluations included) if the epochs are not done by then; raise --time_budget_minutes on a
slower or busy machine to train all of them. The Transformer recipe above sets its own learning rate and warmup:
the defaults' 3e-3 is too high for it. The scores these recipes reach are rendered from the committed results in
docs/results.md (GPU runs: results/gpu/).
"""

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.tasks import translation
from hf_seqmodels.tasks.arguments import task_parser


def main(argv: list[str] | None = None) -> dict:
    return translation.run(*task_parser(translation).parse_args_into_dataclasses(argv))


if __name__ == "__main__":
    main()
