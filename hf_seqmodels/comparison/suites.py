"""The suites: each one task, its data, the models (name -> their own fields, see `recipes`) and the budgets.

Every model of a suite is one run of the task (`hf_seqmodels.tasks.<task>.run`: same data, same splits, same metric
code) per seed, with the same budget: at most ``time_budget_minutes`` of training and ``num_train_epochs`` epochs,
and, where the suite gives one for the model, at most ``max_train_steps`` steps (chosen so that the learning-rate
schedule completes within the time on the reference CPU). Settings are chosen on the validation split (the best
checkpoint by ``metric_for_best_model`` where a suite names one); the suites rank by the test split.
"""

from dataclasses import dataclass, field
from types import ModuleType

from ..cards.catalog import TASKS, Metric
from ..tasks import language_modeling, text_classification, token_classification, translation
from .recipes import (
    BILSTM,
    FINE_TUNED,
    MULTI30K_TRANSLATORS,
    PRETRAINED_EMBEDDINGS,
    PTB_LANGUAGE_MODELS,
    PTB_TRAINING,
    RNN_SST2,
    RNN_TAGGER,
    TAGGERS,
    TATOEBA,
    TRANSFORMER,
    TRANSLATORS,
    UPOS_TAGGER,
    WIDE,
    WNUT17_TAGGER,
    WORD_VECTORS,
)

DEFAULT_SEEDS = (42, 43, 44)  # every model runs once per seed; the tables give mean ± sd
# Each task module's results.json "task" (the cards' name for it).
TASK_NAMES = {translation: "translation", language_modeling: "text-generation",
              text_classification: "text-classification", token_classification: "token-classification"}


@dataclass
class Suite:
    """A comparison: one task, its data, the models (name -> their own fields) and the budgets."""

    module: ModuleType  # the task's module in hf_seqmodels.tasks
    metric: str  # the results.json key the table and chart rank by: a test score of the task's card metrics
    metric_label: str
    models: dict[str, dict]
    cpu_budget: dict  # TrainingArguments fields shared by every model (CPU default)
    full_budget: dict  # the same for --full (GPU)
    cpu_steps: dict[str, int] = field(default_factory=dict)  # per model: max_train_steps under the CPU budget
    targets: dict[str, float] = field(default_factory=dict)  # per model: the score the issue asks for
    extra_columns: list[tuple[str, str]] = field(default_factory=list)  # (results key, header)
    common: dict = field(default_factory=dict)  # fields of every run
    # Each run keeps its checkpoint best by ``metric`` on the validation split (metric_for_best_model), not the last.
    keep_best: bool = False
    # Fields of a `tasks.word_vectors` run made before the models; a model field whose value is WORD_VECTORS gets
    # the file it wrote.
    word_vectors: dict | None = None
    # How ``metric`` is shown and ranked: the task's card metric of the same score on the validation split.
    card_metric: Metric = field(init=False, repr=False)

    def __post_init__(self):
        validation = "eval" + self.metric.removeprefix("test")
        metrics = {metric.key: metric for metric in TASKS[self.task].metrics}
        if validation not in metrics:
            raise ValueError(f"Suite metric {self.metric!r}: a {self.task} run's card reports the test scores of "
                             f"{sorted(metrics)} only.")
        self.card_metric = metrics[validation]
        if self.keep_best:
            self.common = {**self.common, "metric_for_best_model": validation}

    @property
    def task(self) -> str:
        """The task's results.json ``"task"``."""
        return TASK_NAMES[self.module]

    @property
    def percent(self) -> bool:
        """Whether the metric is a fraction, shown in percent."""
        return self.card_metric.percent

    @property
    def higher_is_better(self) -> bool:
        return self.card_metric.higher_is_better

    @property
    def translates(self) -> bool:
        """Whether the runs save test translations, which the suite keeps and compares by paired bootstrap."""
        return self.module is translation


def tatoeba_suite(source: str, target: str, tokenization: str) -> Suite:
    """The attention GRU and the Transformer translating Tatoeba's ``source`` sentences into ``target``, scored by
    test BLEU (``tokenization`` names the sacreBLEU tokenization the run picks for the target) and chrF."""
    return Suite(
        module=translation,
        metric="test_bleu",
        metric_label=f"Tatoeba {source}->{target} test BLEU ({tokenization})",
        common={**TATOEBA, "source_lang": source, "target_lang": target},
        models=TRANSLATORS,
        cpu_budget={"time_budget_minutes": 8, "num_train_epochs": 3},
        full_budget={"time_budget_minutes": 30, "num_train_epochs": 30},
        cpu_steps={"Transformer": 900},  # what 8 minutes allow on 1 CPU thread: the LR schedule then completes
        extra_columns=[("test_chrf", "test chrF"), ("eval_bleu", "validation BLEU")],
    )


LABELLING = {"max_grad_norm": 1.0, "per_device_eval_batch_size": 128}
# The data, task and score of the suites over SST-2 and over UD English-EWT's UPOS tags (Suite fields).
SST2 = {"module": text_classification, "metric": "test_accuracy", "metric_label": "SST-2 test accuracy (%)",
        "common": {"dataset_name": "sst2", **LABELLING}}
UD_EWT_UPOS = {"module": token_classification, "metric": "test_accuracy",
               "metric_label": "UD EWT UPOS test accuracy (%)",
               "common": {"dataset_name": "ud_english_ewt", "label_column_name": "upos", **LABELLING}}

SUITES = {
    "sentiment": Suite(
        **SST2,
        keep_best=True,
        models={
            "RNN": {**RNN_SST2, "cell_type": "rnn"},
            "LSTM": {**RNN_SST2, "cell_type": "lstm"},
            "GRU": {**RNN_SST2, "cell_type": "gru"},
            "BiLSTM": {**RNN_SST2, **BILSTM},
            "BiLSTM 2x256": {**RNN_SST2, **BILSTM, **WIDE, "hidden_size": 256},
            "BiLSTM + MiniLM emb.": {**RNN_SST2, **BILSTM, **PRETRAINED_EMBEDDINGS, "dropout": 0.3},
            "Transformer": {**TRANSFORMER, "tokenizer_type": "word", "per_device_train_batch_size": 64},
            "BERT (MiniLM-L6)": FINE_TUNED,
        },
        cpu_budget={"time_budget_minutes": 4.5, "num_train_epochs": 2},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 3},
        cpu_steps={"BERT (MiniLM-L6)": 420},
        targets={"BiLSTM": 0.85, "BiLSTM 2x256": 0.85, "BiLSTM + MiniLM emb.": 0.85, "BERT (MiniLM-L6)": 0.88},
        extra_columns=[("test_f1", "test macro-F1 (%)"), ("eval_accuracy", "validation accuracy (%)")],
    ),
    "ner": Suite(
        **UD_EWT_UPOS,
        keep_best=True,
        models={
            "BiLSTM": {**RNN_TAGGER, **BILSTM},
            "BiLSTM 2x384": {**RNN_TAGGER, **BILSTM, **WIDE, "hidden_size": 384},
            "BiLSTM + MiniLM emb. + spelling": {**RNN_TAGGER, **BILSTM, **PRETRAINED_EMBEDDINGS,
                                                "spelling_features": 32, "dropout": 0.5,
                                                "per_device_train_batch_size": 16},
            "Transformer": {**TRANSFORMER, "tokenizer_type": "wordpiece", "per_device_train_batch_size": 32},
            "BERT (MiniLM-L6)": FINE_TUNED,
        },
        cpu_budget={"time_budget_minutes": 9, "num_train_epochs": 4},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 10},
        cpu_steps={"BERT (MiniLM-L6)": 600},
        targets={"BiLSTM": 0.94, "BiLSTM 2x384": 0.94, "BiLSTM + MiniLM emb. + spelling": 0.94,
                 "BERT (MiniLM-L6)": 0.96},
        extra_columns=[("test_f1", "test macro-F1 (%)"), ("eval_accuracy", "validation accuracy (%)")],
    ),
    "lm": Suite(
        module=language_modeling,
        metric="test_perplexity",
        metric_label="PTB test perplexity",
        common={"dataset_name": "ptb", **PTB_TRAINING},
        models=PTB_LANGUAGE_MODELS,
        cpu_budget={"time_budget_minutes": 10, "num_train_epochs": 3},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 40},
        extra_columns=[("eval_perplexity", "validation perplexity")],
    ),
    "translation": Suite(
        module=translation,
        metric="test_bleu",
        metric_label="Multi30k en->de test2016 BLEU",
        common={"dataset_name": "multi30k_en_de"},
        models=MULTI30K_TRANSLATORS,
        cpu_budget={"time_budget_minutes": 9, "num_train_epochs": 3},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 20},
        extra_columns=[("test_chrf", "test chrF"), ("eval_bleu", "validation BLEU")],
    ),
    "en_zh": tatoeba_suite("en", "zh", "tok zh"),
    "zh_en": tatoeba_suite("zh", "en", "13a"),
    "wnut17": Suite(
        module=token_classification,
        metric="test_seqeval_f1",
        metric_label="WNUT-17 test entity F1 (%)",
        common={"dataset_name": "wnut17", "label_column_name": "ner_tags", **LABELLING},
        keep_best=True,
        models={"BiLSTM": {**TAGGERS["BiLSTM"], **WNUT17_TAGGER},
                "BiLSTM-CRF": {**TAGGERS["BiLSTM-CRF"], **WNUT17_TAGGER, "crf_constrain_bio": True},
                "BERT (MiniLM-L6)": FINE_TUNED},
        cpu_budget={"time_budget_minutes": 4, "num_train_epochs": 30},
        full_budget={"time_budget_minutes": 30, "num_train_epochs": 30},
        extra_columns=[("test_seqeval_precision", "precision (%)"), ("test_seqeval_recall", "recall (%)"),
                       ("eval_seqeval_f1", "validation F1 (%)")],
    ),
    "upos": Suite(
        **UD_EWT_UPOS,
        models={**{name: {**fields, **UPOS_TAGGER} for name, fields in TAGGERS.items()},
                "BERT (MiniLM-L6)": FINE_TUNED},
        cpu_budget={"time_budget_minutes": 5, "num_train_epochs": 4},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 10},
        cpu_steps={"BERT (MiniLM-L6)": 400},
        extra_columns=[("eval_accuracy", "validation accuracy (%)")],
    ),
    "sst2_word_vectors": Suite(
        **SST2,
        word_vectors={"dataset_name": "sst2", "text_column_name": ["sentence"], "model": "word2vec", "sg": 1,
                      "vector_size": 128, "epochs": 5, "min_count": 2},
        models={
            "BiLSTM": {**RNN_SST2, **BILSTM},
            "BiLSTM + word2vec, frozen": {**RNN_SST2, **BILSTM, "word_vectors": WORD_VECTORS,
                                          "freeze_embeddings": True},
            "BiLSTM + word2vec, fine-tuned": {**RNN_SST2, **BILSTM, "word_vectors": WORD_VECTORS},
        },
        cpu_budget={"time_budget_minutes": 4, "num_train_epochs": 2},
        full_budget={"time_budget_minutes": 30, "num_train_epochs": 5},
        extra_columns=[("eval_accuracy", "validation accuracy (%)")],
    ),
}
