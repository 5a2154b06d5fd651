"""``python -m tools.output_digests [--out FILE]``: the sha256 of what a fixed set of seeded models computes, to show
that a change of the code's layout changed no output: run it at two commits and compare the files' ``digests``
(``results/output_digests/<commit>.json``, each with the provenance of its run).

Each model is built from a config with every weight redrawn from a seeded normal (wide enough that no token is
decided by float noise); for each, the digest of its forward outputs (logits, or the classifier's) on a fixed padded
batch, and of ``generate()``'s sequences (and, with beam search, with ``output_scores``, its ``sequences_scores``),
by the default loop, by ours named (``custom_generate=decode``) and by GenerationMixin's own (``custom_generate`` set
to its ``_sample`` / ``_beam_search``). Uses only the package's public
classes, which every layout exports from ``hf_seqmodels``.
"""

import argparse
import hashlib
import json
import sys

import torch
from transformers import GenerationMixin

import hf_seqmodels as hs
from hf_seqmodels.models.decoding import decode
from hf_seqmodels.provenance import provenance

PAD, BOS, EOS, VOCAB = 0, 1, 2, 40
IDS = torch.tensor([[5, 9, 13, 7, 21, 3], [PAD, PAD, 8, 30, 11, 4]])  # left-padded, for the decoder-only models
MASK = (IDS != PAD).long()
SOURCE = torch.tensor([[5, 9, 13, 7, 21, EOS], [8, 30, 11, EOS, PAD, PAD]])  # right-padded, for the seq2seq ones
SOURCE_MASK = (SOURCE != PAD).long()
SPECIAL = dict(pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)

MODELS = {
    "lstm_lm": (hs.RecurrentForCausalLM, lambda: hs.RecurrentConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=24, num_layers=2, cell_type="lstm", **SPECIAL)),
    "gru_lm": (hs.RecurrentForCausalLM, lambda: hs.RecurrentConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=24, cell_type="gru", **SPECIAL)),
    "bilstm_classifier": (hs.RecurrentForSequenceClassification, lambda: hs.RecurrentConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=24, bidirectional=True, num_labels=3, **SPECIAL)),
    "bilstm_crf_tagger": (hs.RecurrentForTokenClassification, lambda: hs.RecurrentConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=24, bidirectional=True, num_labels=5, use_crf=True,
        **SPECIAL)),
    "gru_bahdanau": (hs.AttentionSeq2SeqForConditionalGeneration, lambda: hs.AttentionSeq2SeqConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=24, cell_type="gru", attention_type="bahdanau",
        decoder_start_token_id=BOS, **SPECIAL)),
    "lstm_luong_input_feeding": (hs.AttentionSeq2SeqForConditionalGeneration, lambda: hs.AttentionSeq2SeqConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=24, cell_type="lstm", attention_type="luong_general",
        input_feeding=True, decoder_start_token_id=BOS, **SPECIAL)),
    "transformer_seq2seq": (hs.TransformerForConditionalGeneration, lambda: hs.TransformerConfig(
        vocab_size=VOCAB, d_model=16, num_heads=4, encoder_layers=2, decoder_layers=2, ffn_dim=32,
        max_position_embeddings=32, dropout=0.0, decoder_start_token_id=BOS, **SPECIAL)),
    "transformer_lm": (hs.TransformerForCausalLM, lambda: hs.TransformerConfig(
        vocab_size=VOCAB, d_model=16, num_heads=4, decoder_layers=2, ffn_dim=32, max_position_embeddings=32,
        dropout=0.0, is_encoder_decoder=False, **SPECIAL)),
}
SEARCHES = {"greedy": dict(num_beams=1, do_sample=False), "beam5": dict(num_beams=5, length_penalty=1.0)}


def digest(*tensors: torch.Tensor) -> str:
    sha = hashlib.sha256()
    for tensor in tensors:
        sha.update(str(tuple(tensor.shape)).encode() + str(tensor.dtype).encode())
        sha.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return sha.hexdigest()[:16]


def seeded(model_class, config, seed: int = 0):
    torch.manual_seed(seed)
    model = model_class(config)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)
    return model.eval()


def outputs(model) -> dict[str, str]:
    seq2seq = model.config.is_encoder_decoder
    inputs = dict(input_ids=SOURCE, attention_mask=SOURCE_MASK) if seq2seq else dict(input_ids=IDS, attention_mask=MASK)
    found = {}
    with torch.no_grad():
        forward = dict(inputs, decoder_input_ids=SOURCE[:, :4]) if seq2seq else inputs
        found["forward"] = digest(model(**forward).logits)
        if not model.can_generate():
            return found
        for name, search in SEARCHES.items():
            options = dict(inputs, max_new_tokens=8, min_new_tokens=0, **search)
            transformers_loop = GenerationMixin._beam_search if search["num_beams"] > 1 else GenerationMixin._sample
            for loop, extra in (("default", {}), ("ours", {"custom_generate": decode}),
                                ("transformers", {"custom_generate": transformers_loop})):
                found[f"{name}/{loop}"] = digest(model.generate(**options, **extra))
                if search["num_beams"] > 1:  # the beams' scores, which generate() returns only with output_scores
                    scored = model.generate(**options, **extra, return_dict_in_generate=True, output_scores=True)
                    found[f"{name}_scores/{loop}"] = digest(scored.sequences, scored.sequences_scores)
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.output_digests", description=__doc__)
    parser.add_argument("--out", help="write the digests here as JSON (default: print them)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    found = {name: outputs(seeded(model_class, make_config())) for name, (model_class, make_config) in MODELS.items()}
    text = json.dumps({"provenance": provenance(seeds=[0], split=[]), "digests": found}, indent=1) + "\n"
    if args.out:
        with open(args.out, "w") as file:
            file.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
