#!/usr/bin/env python
"""Continue prompts with a language model folder saved by scripts/run_clm.py: greedily, or by sampling (--do_sample,
shaped by --temperature, --top_k and --top_p). Prompts come from --prompt (repeatable) or standard input, one a line;
each continuation is printed on a line of its own, with its prompt, in the order of the prompts.

    python scripts/generate.py outputs/ptb-lstm --prompt "the company said"
    python scripts/generate.py outputs/ptb-lstm --prompt "the market" --do_sample --top_p 0.9 \\
        --num_return_sequences 3 --seed 0
    printf 'the market\\nin the first quarter\\n' | python scripts/generate.py outputs/ptb-lstm

The same --seed gives the same samples. Options left out take the model's saved generation defaults. --int8 runs a
recurrent language model quantized for the CPU (hf_seqmodels.serving.quantization).
"""

import argparse

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.serving import inference


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A folder saved by scripts/run_clm.py.")
    parser.add_argument("--prompt", action="append", default=None,
                        help="A text to continue; repeat for several (default: stdin, one a line).")
    parser.add_argument("--num_return_sequences", type=int, default=1, help="Continuations per prompt.")
    parser.add_argument("--max_new_tokens", type=int, default=30, help="Tokens added to each prompt.")
    parser.add_argument("--do_sample", action="store_true", help="Sample (default: greedy decoding).")
    parser.add_argument("--temperature", type=float, default=None, help="Divides the logits before sampling.")
    parser.add_argument("--top_k", type=int, default=None, help="Sample among the k likeliest tokens only.")
    parser.add_argument("--top_p", type=float, default=None,
                        help="Sample among the likeliest tokens whose probabilities sum to p (nucleus sampling).")
    parser.add_argument("--seed", type=int, default=None, help="Seeds the sampling: same seed, same samples.")
    parser.add_argument("--int8", action="store_true",
                        help="Quantize a recurrent model to int8 for the CPU (linear layers, LSTM/GRU kernels).")
    args = parser.parse_args()

    inference.check_sampling_options(args.do_sample, args.num_return_sequences, args.max_new_tokens,
                                     args.temperature, args.top_k, args.top_p)
    model, tokenizer = inference.load_language_model(args.model_dir, args.int8)
    prompts = args.prompt if args.prompt is not None else inference.read_lines()
    options = inference.given(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    continuations = inference.continue_prompts(model, tokenizer, prompts, args.num_return_sequences, args.seed,
                                               max_new_tokens=args.max_new_tokens, do_sample=args.do_sample,
                                               **options)
    for texts in continuations:
        print("\n".join(texts))


if __name__ == "__main__":
    main()
