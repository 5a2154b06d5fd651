"""The runs the card tests render: what run_classification.py, run_ner.py (a fine-tuned BERT) and
run_translation.py write to results.json, the repository's benchmark results, and `write_card`."""

import json

from huggingface_hub import ModelCard

from hf_seqmodels import AttentionSeq2SeqConfig
from hf_seqmodels.cards import render_card
from hf_seqmodels.data.paths import REPO_ROOT

BENCHMARKS = json.loads((REPO_ROOT / "results" / "benchmarks.json").read_text())  # python -m benchmarks.run's

ARGUMENTS = {
    "model_name_or_path": None, "model_type": "recurrent", "cell_type": "lstm", "bidirectional": True,
    "num_layers": 1, "embedding_size": 128, "hidden_size": 128, "num_heads": 4, "ffn_dim": 512, "dropout": 0.1,
    "tokenizer_type": "word", "vocab_size": 16000, "max_seq_length": 128, "dataset_name": "sst2",
    "optimizer": "adamw", "learning_rate": 0.002, "weight_decay": 0.0, "lr_scheduler_type": "linear",
    "num_warmup_steps": 0, "per_device_train_batch_size": 64, "max_grad_norm": 1.0, "num_train_epochs": 1,
    "max_train_steps": None, "time_budget_minutes": 4.0, "seed": 42,
}
RUN = {
    "name": "BiLSTM", "task": "text-classification", "model_type": "recurrent", "dataset": "sst2",
    "steps": 1053, "epochs": 1.0, "train_runtime_s": 257.1226, "stopped_by_time_budget": False,
    "eval_accuracy": 0.8337155963302753, "eval_f1": 0.8337136281440078, "eval_samples_per_second": 882.47,
    "num_parameters": 1288706, "device": "cpu: AMD EPYC (1 threads)", "num_processes": 1, "labels": ["0", "1"],
    "vocab_size": 16000, "arguments": ARGUMENTS,
}
NER_RUN = {
    **RUN, "name": "BERT (MiniLM-L6)", "task": "token-classification", "model_type": "bert",
    "dataset": "conll_like", "eval_accuracy": 0.9612, "eval_f1": 0.90125, "eval_seqeval_f1": 0.8765432,
    "eval_seqeval_precision": 0.88, "eval_seqeval_recall": 0.87, "labels": ["B-PER", "I-PER", "O"],
    "tag_scheme": "BIO",
    "arguments": {**ARGUMENTS, "model_name_or_path": "/data/models/all-MiniLM-L6-v2"},
}

TRANSLATION_ARGUMENTS = {
    **{name: ARGUMENTS[name] for name in ("optimizer", "learning_rate", "weight_decay", "lr_scheduler_type",
                                          "num_warmup_steps", "per_device_train_batch_size", "max_grad_norm",
                                          "num_train_epochs", "max_train_steps", "time_budget_minutes", "seed")},
    "model_type": "attention_seq2seq", "dataset_name": "multi30k_en_de", "vocabulary": "joint",
    "max_source_length": 64, "max_target_length": 48,
}
TRANSLATION_RUN = {  # what run_translation.py writes (model_config: the model's config.json)
    "task": "translation", "steps": 1362, "epochs": 3.0, "train_runtime_s": 530.0, "eval_bleu": 33.530390792,
    "eval_chrf": 58.084070317, "num_parameters": 4721264, "vocab_size": 6000, "num_processes": 1,
    "model_config": AttentionSeq2SeqConfig(vocab_size=6000, cell_type="gru", attention_type="bahdanau",
                                           embedding_size=128, hidden_size=256, dropout=0.2).to_dict(),
    "arguments": TRANSLATION_ARGUMENTS,
}


def write_card(folder, run) -> ModelCard:
    """``run``'s card, saved as ``folder/README.md``."""
    card = render_card(run)
    card.save(folder / "README.md")
    return card
