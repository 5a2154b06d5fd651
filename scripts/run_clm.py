#!/usr/bin/env python
"""Train a language model (a word-level LSTM on PTB by default) and report its perplexity
(`hf_seqmodels.tasks.language_modeling.run`: a trained tokenizer, blocks of text, Accelerate training, validation
and test perplexity, and samples from the saved folder).

    python scripts/run_clm.py --output_dir outputs/ptb-lstm
    torchrun --nproc_per_node 2 scripts/run_clm.py --output_dir outputs/ptb-lstm   # 2 processes on a CPU
    python scripts/run_clm.py --output_dir outputs/ptb-transformer --model_type transformer \\
        --config_overrides d_model=256,ffn_dim=1024,decoder_layers=3,num_heads=4

The defaults (a 1-layer LSTM, 256 units, tied embeddings, 1 epoch) train on 2 CPU cores in a few minutes.
`--lm_protocol stateful` trains a recurrent model as the published PTB figures were trained (the state carried
through the text, truncated BPTT; `--variable_bptt` for AWD-LSTM's window lengths); the AWD-LSTM regularisers are
`--locked_dropout --weight_drop P --word_type_dropout P --activation_regularization A
--temporal_activation_regularization B` with `--optimizer nt_asgd`. Validation and test perplexity always score
every token (see `hf_seqmodels.tasks.language_modeling`).
`accelerate launch --cpu --num_processes 2` starts only one process (huggingface/accelerate#2741); `torchrun` or
`accelerate launch --multi_gpu --num_processes 2` start two, which `training.make_accelerator` puts on the CPU.
"""

import os

# Before torch starts OpenMP: idle threads sleep instead of spinning. On a shared machine a spinning thread waits
# for a descheduled peer at every parallel region; with 2 threads on 2 busy cores a step took 7x longer.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import hf_seqmodels  # noqa: E402,F401  (registers the models with the Auto classes)
from hf_seqmodels.tasks import language_modeling  # noqa: E402
from hf_seqmodels.tasks.arguments import task_parser  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    return language_modeling.run(*task_parser(language_modeling).parse_args_into_dataclasses(argv))


if __name__ == "__main__":
    main()
