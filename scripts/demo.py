#!/usr/bin/env python
"""A web page that translates a sentence with a model folder saved by scripts/run_translation.py and shows its
attention picture (gradio; `pip install "hf-seqmodels[demo]"`). Run as a Hub Space runs its app.py:

    python scripts/demo.py outputs/multi30k-gru              # then open http://127.0.0.1:7860
    python scripts/demo.py outputs/multi30k-gru --server_name 0.0.0.0 --server_port 8080

Imported, it builds nothing: `translation_demo(folder)` (hf_seqmodels.serving.inference) returns the page.
"""

import argparse

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.serving.inference import translation_demo


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A folder saved by scripts/run_translation.py.")
    parser.add_argument("--server_name", default="127.0.0.1", help="The address to serve on.")
    parser.add_argument("--server_port", type=int, default=7860, help="The port to serve on.")
    args = parser.parse_args()
    demo = translation_demo(args.model_dir)
    demo.launch(server_name=args.server_name, server_port=args.server_port)


if __name__ == "__main__":
    main()
