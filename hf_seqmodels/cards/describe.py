"""What a card says about the model and its training, in words: one sentence on the architecture, the family tag
and the hyperparameter table, all from the run."""

import shlex
from pathlib import Path

from ..provenance import checkout_relative
from .catalog import BASE_MODELS, base_model_of
from .results import TRANSFORMER_MODEL_TYPES

CELLS = {"rnn": "Elman RNN", "lstm": "LSTM", "gru": "GRU"}
ATTENTIONS = {"bahdanau": "Bahdanau (additive) attention", "luong_dot": "Luong dot attention",
              "luong_general": "Luong general attention", "luong_concat": "Luong concat attention",
              "none": "no attention (the source reaches the decoder through its initial state)"}


def describe_architecture(run: dict) -> str:
    """One sentence on the model: from its configuration for the generative scripts (``model_config``), else from
    the run's arguments."""
    args = run.get("arguments", {})
    parameters = f"{run['num_parameters'] / 1e6:.2f}M parameters"
    if config := run.get("model_config"):
        return _describe_generative(config, parameters)
    if base := base_model_of(run):
        return f"A pretrained encoder ({base}) fine-tuned with a new {run['task']} head; {parameters}."
    if args.get("model_type") == "transformer":
        return (f"A Transformer encoder (Vaswani et al., 2017) trained from scratch: {args['num_layers']} layers, "
                f"d_model {args['hidden_size']}, {args['num_heads']} heads, feed-forward {args['ffn_dim']}"
                f"{_crf(args)}; {parameters}.")
    cell = CELLS[args.get("cell_type", "lstm")]
    direction = "bidirectional " if args.get("bidirectional") else ""
    if pretrained := args.get("embeddings_from"):
        name = BASE_MODELS.get(Path(pretrained).name, pretrained)
        start, embeddings = f"trained with its word embeddings started from {name}'s", ""
    elif vectors := args.get("word_vectors"):  # their size set embedding_size
        start, embeddings = f"trained with its word embeddings started from the vectors of {Path(vectors).name}", ""
    else:
        start, embeddings = "trained from scratch", f", {args['embedding_size']}-dimensional embeddings"
    spelling = (f", plus {args['spelling_features']} character-CNN features of each token's spelling"
                if args.get("spelling_features") else "")
    return (f"{_a(direction + cell)} {start}: {args['num_layers']} layer(s) of {args['hidden_size']} units"
            f"{embeddings}{spelling}{_crf(args)}; {parameters}.")


def _crf(args: dict) -> str:
    """What a tagger's ``--use_crf`` adds to the sentence, or nothing."""
    if not args.get("use_crf"):
        return ""
    return (", and a linear-chain CRF over the tag scores, trained on the sentence likelihood and decoded with "
            "Viterbi" + (" (BIO transitions only)" if args.get("crf_constrain_bio") else ""))


def _a(phrase: str) -> str:
    """``phrase`` with its indefinite article: "An LSTM", "An Elman RNN", "A GRU", "A bidirectional LSTM"."""
    return ("An " if phrase.startswith(("LSTM", "Elman")) else "A ") + phrase


def _describe_generative(config: dict, parameters: str) -> str:
    """One sentence on a translation model or language model, from its ``config.json`` fields."""
    kind = config["model_type"]
    if kind == "attention_seq2seq":
        cell = CELLS[config["cell_type"]]
        encoder = ("bidirectional " if config["bidirectional_encoder"] else "") + cell
        attention = ATTENTIONS[config["attention_type"]] + (" with input feeding" if config["input_feeding"] else "")
        what = "An encoder-decoder" if config["attention_type"] == "none" else "An attention encoder-decoder"
        return (f"{what} trained from scratch: a {encoder} encoder of "
                f"{config['encoder_layers']} layer(s) and a {cell} decoder of {config['decoder_layers']} layer(s), "
                f"{config['hidden_size']} units, {config['embedding_size']}-dimensional embeddings, {attention}; "
                f"{parameters}.")
    if kind in TRANSFORMER_MODEL_TYPES:
        what, layers = (("encoder-decoder", f"{config['encoder_layers']} encoder and {config['decoder_layers']} "
                                            "decoder layers")
                        if config["is_encoder_decoder"] else ("language model", f"{config['decoder_layers']} layers"))
        return (f"A Transformer {what} (Vaswani et al., 2017) trained from scratch: {layers}, d_model "
                f"{config['d_model']}, {config['num_heads']} heads, feed-forward {config['ffn_dim']}, "
                f"{config['norm_position']}-norm; {parameters}.")
    return (f"{_a(CELLS[config['cell_type']])} language model trained from scratch: {config['num_layers']} layer(s) "
            f"of {config['hidden_size']} units, {config['embedding_size']}-dimensional embeddings; {parameters}.")


def family_tag(run: dict) -> str:
    """``lstm``, ``bigru``, ``transformer``..., or a pretrained checkpoint's transformers model_type (``bert``)."""
    args = run.get("arguments", {})
    if config := run.get("model_config"):
        return config.get("cell_type", "transformer")
    if args.get("model_name_or_path"):
        return run.get("model_type", "pretrained")
    if args.get("model_type") == "transformer":
        return "transformer"
    return ("bi" if args.get("bidirectional") else "") + args.get("cell_type", "lstm")


def hyperparameters(run: dict) -> list[tuple[str, str]]:
    """The card's training table: (hyperparameter, value) rows from the run's arguments and training facts; for a
    run that records no arguments, the training command its provenance recorded at run time instead."""
    if "arguments" not in run:
        argv = (run.get("provenance") or {}).get("argv")
        commit = (run.get("provenance") or {}).get("commit")
        command = (f"`{shlex.join(['python', *checkout_relative(argv[1:])])}` at commit {commit}, the script's "
                   "defaults there" if argv and commit else "not recorded")
        return [("arguments", f"not recorded in the results; the training command: {command}"),
                ("trained", trained(run)), ("seed", str(run.get("seed")))]
    args = run["arguments"]
    rows = [
        ("optimizer", f"{args.get('optimizer')} (lr {args.get('learning_rate')}, weight decay "
                      f"{args.get('weight_decay')}, {args.get('lr_scheduler_type')} schedule, "
                      f"{args.get('num_warmup_steps')} warmup steps)"),
        ("batch size", f"{args.get('per_device_train_batch_size')} x {run.get('num_processes', 1)} process(es)"),
        ("gradient clipping", str(args.get("max_grad_norm"))),
        ("budget", f"{args.get('num_train_epochs')} epoch(s)"
                   + (f", at most {args['max_train_steps']} steps" if args.get("max_train_steps") else "")
                   + (f", at most {args['time_budget_minutes']} min" if args.get("time_budget_minutes") else "")),
        ("trained", trained(run)),
        ("seed", str(args.get("seed"))),
    ]
    if "max_source_length" in args:  # translation
        rows.append(("max sequence length", f"source {args['max_source_length']}, target {args['max_target_length']}"))
        rows.append(("tokenizer", translation_tokenizers(run)))
    else:
        rows.append(("max sequence length", str(args.get("block_size", args.get("max_seq_length")))))
        if not args.get("model_name_or_path"):
            rows.append(("tokenizer", f"{args.get('tokenizer_type')} trained on the training texts, "
                                      f"{run.get('vocab_size')} tokens"))
    if not args.get("model_name_or_path"):
        rows.append(("dropout", str(run.get("model_config", args).get("dropout"))))
    if args.get("word_vectors") or args.get("freeze_embeddings"):
        rows.append(("input embeddings", describe_embeddings(run)))
    return rows


def trained(run: dict) -> str:
    """How long the run trained: steps, epochs and minutes, and whether the time budget stopped it."""
    return (f"{run['steps']} steps ({run['epochs']:.2f} epochs) in {run['train_runtime_s'] / 60:.1f} min"
            + (" (stopped by the time budget)" if run.get("stopped_by_time_budget") else ""))


def describe_embeddings(run: dict) -> str:
    """Where the input embeddings started (``--word_vectors``, with its coverage) and whether they were trained."""
    args = run["arguments"]
    start = "started at random"
    if args.get("word_vectors"):
        coverage = "; ".join(f"{name} {found['found']:,} of {found['tokens']:,} tokens" for name, found in
                             (run.get("word_vectors_coverage") or {}).items())
        start = f"started from the word vectors {Path(args['word_vectors']).name} ({coverage})"
    if not args.get("freeze_embeddings"):
        return f"{start}, fine-tuned"
    if epochs := args.get("unfreeze_embeddings_after_epochs"):
        return f"{start}, frozen for {epochs} epoch(s), then fine-tuned"
    return f"{start}, frozen"


def translation_tokenizers(run: dict) -> str:
    """The tokenizers of a translation run: their kinds and sizes, one shared or one per language."""
    args = run["arguments"]
    kinds = run.get("tokenizer_types") or {"source": args.get("tokenizer_type", "bpe"),
                                           "target": args.get("tokenizer_type", "bpe")}
    if args["vocabulary"] == "joint":
        return f"{kinds['target']} trained on the training texts of both languages, {run.get('vocab_size')} tokens"
    return (f"trained on the training texts: source {kinds['source']}, {run.get('source_vocab_size')} tokens; "
            f"target {kinds['target']}, {run.get('vocab_size')} tokens")
