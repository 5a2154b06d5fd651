"""JoeyNMT's decoding server (`serving`'s protocol), run in .venv-peers/joeynmt: what ``joeynmt translate`` calls,
loaded once (``prepare(mode="translate")``: the config, vocabulary and best checkpoint of the model folder), then per
measurement, timed: our tokenizer.json cuts the raw lines into the pieces JoeyNMT was trained on
(`pieces.pretokenize`), its stream dataset takes them in the order of `serving.batches`, one ``predict()`` decodes
them ``batch_size`` at a time with its beam search (beam size, ``beam_alpha`` -- its GNMT length penalty -- and
``max_output_length`` as the model's config has them from `recipe.joeynmt_config`, or as given here), and our
tokenizer.json joins its output pieces into text (`pieces.detokenize`).

    .venv-peers/joeynmt/bin/python -m benchmarks.peers.serve_joeynmt --model WORK/joeynmt/seed1/model \\
        --source DATA/test.en --tokenizer DATA/tokenizer/tokenizer.json --threads 1 --batch_sizes 1 64

Imports neither this package nor transformers (the peer's environment has neither); JoeyNMT is imported when the
server loads, so that this module imports anywhere.
"""

import argparse
from pathlib import Path

from . import pieces, serving


def testing_section(config: dict, args: argparse.Namespace) -> dict:
    """The model's config (as JoeyNMT copied it into the model folder at training) with its ``testing`` section
    set to this server's search: beam size, length penalty (``beam_alpha``), longest output, one hypothesis, batches
    counted in sentences."""
    testing = {**config.get("testing", {}), "beam_size": args.num_beams, "beam_alpha": args.length_penalty,
               "max_output_length": args.max_new_tokens, "n_best": 1, "batch_type": "sentence", "batch_size": 1,
               "return_prob": "none", "return_attention": False}
    return {**config, "model_dir": args.model, "testing": testing}


def load(args: argparse.Namespace) -> serving.Decoder:
    from joeynmt.config import load_config, parse_global_args
    from joeynmt.prediction import predict, prepare
    from tokenizers import Tokenizer

    config = testing_section(load_config(Path(args.config or Path(args.model) / "config.yaml")), args)
    settings = parse_global_args(config, rank=0, mode="translate")
    model, _, _, stream = prepare(settings, rank=0, mode="translate")
    backend = Tokenizer.from_file(args.tokenizer)

    def decode(texts: list[str], batch_size: int) -> list[str]:
        cut = [pieces.pretokenize(backend, text) for text in texts]
        order, ordered = serving.in_order(cut, batch_size, [len(line.split()) for line in cut])
        for line in ordered:
            stream.set_item(line)
        try:
            _, _, hypotheses, *_ = predict(
                model=model, data=stream, compute_loss=False, device=settings.device, rank=0, n_gpu=settings.n_gpu,
                normalization="none", num_workers=settings.num_workers,
                args=settings.test._replace(batch_size=batch_size), autocast=settings.autocast)
        finally:
            stream.reset_cache()
        return serving.restored(order, (pieces.detokenize(backend, line) for line in hypotheses))

    return decode


def main(argv: list[str] | None = None) -> None:
    parser = serving.parser(__doc__)
    parser.add_argument("--config", default=None, help="JoeyNMT's config (default: the model folder's config.yaml)")
    args = parser.parse_args(argv)
    serving.serve("joeynmt", args, load, serving.versions_of("joeynmt", "torch", "tokenizers"))


if __name__ == "__main__":
    main()
