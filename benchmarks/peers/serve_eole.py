"""eole's decoding server (`serving`'s protocol), run in .venv-peers/eole: what ``eole predict`` calls, loaded once
(its `InferenceEnginePY` built from the ``eole predict`` options given after ``--``, `recipe.eole_predict_arguments`:
the checkpoint, beam size, length penalty ``avg`` with its ``alpha``, longest output), then per measurement, timed:
our tokenizer.json cuts the raw lines into the pieces eole was trained on (`pieces.pretokenize`), one
``infer_list()`` takes them in the order of `serving.batches` and decodes them ``batch_size`` at a time (its
iterator sorts by length, stably, so it keeps that order and makes the same batches), and our tokenizer.json joins
its output pieces into text (`pieces.detokenize`).

    .venv-peers/eole/bin/python -m benchmarks.peers.serve_eole --model WORK/eole/seed1/model --source DATA/test.en \\
        --tokenizer DATA/tokenizer/tokenizer.json --threads 1 --batch_sizes 1 64 -- -model_path WORK/eole/seed1/model \\
        -src DATA/test.tok.en -output /dev/null -beam_size 5 -length_penalty avg -alpha 1.0 -max_length 64 \\
        -max_length_ratio 0 -batch_size 64 -batch_type sents -seed 1

Imports neither this package nor transformers (the peer's environment has neither); eole is imported when the server
loads, so that this module imports anywhere.
"""

import argparse

from . import pieces, serving


def engine_config(options: list[str]):
    """eole's predict config from ``eole predict`` command-line options, as its ``predict`` command builds it."""
    from eole.bin.run.predict import Predict

    parser = argparse.ArgumentParser()
    Predict.add_args(parser)
    return Predict.build_config(parser.parse_args(options))


def check_search(config, args: argparse.Namespace) -> None:
    """The search of eole's options is the one this server reports (``--num_beams``, ``--length_penalty``,
    ``--max_new_tokens``): a ValueError otherwise."""
    wanted = {"beam_size": args.num_beams, "alpha": args.length_penalty, "max_length": args.max_new_tokens,
              "length_penalty": "avg"}
    found = {key: getattr(config, key) for key in wanted}
    if found != wanted:
        raise ValueError(f"eole's options give the search {found}, this server reports {wanted}.")


def load(args: argparse.Namespace) -> serving.Decoder:
    from eole.inference_engine import InferenceEnginePY
    from eole.utils.misc import set_random_seed, use_gpu
    from tokenizers import Tokenizer

    config = engine_config(args.predict_options)
    check_search(config, args)
    set_random_seed(config.seed, use_gpu(config))  # as eole predict does
    engine = InferenceEnginePY(config)
    backend = Tokenizer.from_file(args.tokenizer)

    def decode(texts: list[str], batch_size: int) -> list[str]:
        cut = [pieces.pretokenize(backend, text) for text in texts]
        order, ordered = serving.in_order(cut, batch_size, [len(line.split()) for line in cut])
        engine.config.batch_size = batch_size  # read when infer_list builds its iterator
        _, _, predictions = engine.infer_list(ordered)
        return serving.restored(order, (pieces.detokenize(backend, best[0]) for best in predictions))

    return decode


def main(argv: list[str] | None = None) -> None:
    parser = serving.parser(__doc__)
    parser.add_argument("predict_options", nargs=argparse.REMAINDER,
                        help="after --: the `eole predict` options (recipe.eole_predict_arguments)")
    args = parser.parse_args(argv)
    if args.predict_options[:1] == ["--"]:
        args.predict_options = args.predict_options[1:]
    serving.serve("eole", args, load, serving.versions_of("eole", "torch", "tokenizers"))


if __name__ == "__main__":
    main()
