"""The translation task: arguments, BPE tokenizers for a language pair, tokenized sentence pairs, the model,
training, batched translation with `generate()`, BLEU / chrF, results, and attention pictures.

    from hf_seqmodels.tasks import translation
    results = translation.run(translation.ModelArguments(), translation.DataArguments(),
                              TrainingArguments(output_dir="outputs/multi30k-gru"), translation.GenerationArguments())

`run` follows transformers' examples/pytorch/translation/run_translation_no_trainer.py: load the sentence pairs,
train BPE tokenizers (or, when resuming, load the checkpoint's), tokenize, train with Accelerate (label smoothing,
warmup, gradient clipping, the best checkpoint by validation BLEU, early stopping), translate the test set with beam
search and score it with sacreBLEU's BLEU and chrF, save, reload the folder through `AutoModelForSeq2SeqLM` and
translate a few sentences, and draw the attention of one of them. The test translations, one line per sentence
as scored, are saved beside the model (`TEST_HYPOTHESES`).

``--model_type marian`` trains transformers' own MarianMTModel, sized by our Transformer's config fields
(`marian_config`), with the same tokenizers, training and scoring: the reference point for our Transformer.

A model folder holds the tokenizer of its target language (``tokenizer.json``, which ``AutoTokenizer`` loads);
with separate vocabularies the source tokenizer is saved beside it in ``source_tokenizer/`` (``load_tokenizers``
reads both). With ``config.custom_pipelines = CUSTOM_PIPELINES`` and the pipeline code that
`TranslationTokenizers.save_pretrained` copies there, ``pipeline("translation", model=folder,
trust_remote_code=True)`` translates (transformers 5 has no translation pipeline of its own).
"""

import math
import shutil
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import datasets
import torch
from tokenizers import processors
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    MarianConfig,
    PretrainedConfig,
    PreTrainedTokenizerFast,
)
from transformers.models.auto.modeling_auto import MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING

from ..data.loading import LengthGroupedSampler, TokenBatchSampler, check_column_files
from ..data.paths import check_model_path
from ..data.tokenization import (
    DEFAULT_SPECIAL_TOKENS,
    KINDS,
    check_tokenizer_size,
    load_tokenizer,
    piece_labels,
    save_tokenizer,
    train_tokenizer,
)
from ..evaluation import BLEU_TOKENIZE_CHOICES, bleu_tokenization, translation_metrics, translation_signatures
from ..models import pipeline_translation
from ..models.configuration_utils import check_choice
from ..models.pipeline_translation import CUSTOM_PIPELINES, SOURCE_TOKENIZER_DIR
from ..storage.atomic_folders import add_to_manifest
from ..storage.safe_loading import load_pretrained
from ..training.argument_checks import check_at_least, check_different, check_range
from ..training.arguments import ATTENTION_PLOT, TEST_HYPOTHESES, TrainingArguments
from ..training.loop import finish_run, start_run, train
from . import arguments

__all__ = ["ModelArguments", "DataArguments", "GenerationArguments", "ARGUMENTS", "TRAINING_DEFAULTS", "run",
           "CUSTOM_PIPELINES", "TEST_HYPOTHESES", "marian_config", "TranslationTokenizers", "train_tokenizers",
           "load_tokenizers",
           "check_language_columns", "tokenize_pairs", "train_sampler", "batches_by_length",
           "translate", "translation_scores",
           "is_degenerate", "implausible_bleu_warning",
           "load_translation_model", "show_examples", "attention_matrix", "attention_figure",
           "save_attention_plot", "model_name"]

VOCABULARIES = ("joint", "separate")
EXAMPLES = ["A little girl climbs into a wooden playhouse.", "Two dogs are running through the snow.",
            "A man in a blue shirt is standing on a ladder cleaning windows."]
# Translation defaults for the shared training options (tuned for the attention GRU on 2 CPU cores).
TRAINING_DEFAULTS = {"per_device_train_batch_size": 64, "per_device_eval_batch_size": 128, "learning_rate": 3e-3,
                     "max_grad_norm": 1.0, "lr_scheduler_type": "linear", "num_warmup_steps": 200,
                     "num_train_epochs": 3, "time_budget_minutes": 9.0, "logging_steps": 50,
                     "checkpointing_steps": "500", "label_smoothing_factor": 0.1,
                     "metric_for_best_model": "eval_bleu", "early_stopping_patience": 3}


@dataclass
class ModelArguments(arguments.ModelArguments):
    CHOICES: ClassVar[tuple[str, ...]] = ("attention_seq2seq", "transformer", "marian")

    model_type: str = arguments.model_type_field("attention_seq2seq", CHOICES)


@dataclass
class DataArguments(arguments.DataArguments):
    dataset_name: str | None = arguments.dataset_name_field("multi30k_en_de")
    source_lang: str = field(default="en", metadata={"help": "The column holding the source sentences."})
    target_lang: str = field(default="de", metadata={"help": "The column holding the target sentences."})
    max_source_length: int = field(default=64, metadata={"help": "Source tokens kept (eos included)."})
    max_target_length: int = field(default=64, metadata={"help": "Target tokens kept (eos included)."})
    vocabulary: str = field(default="joint", metadata={"help": f"Subword vocabularies: one of {VOCABULARIES}."})
    vocab_size: int = field(default=6000, metadata={"help": "Vocabulary size (of each, when separate)."})
    tokenizer_type: str = field(
        default="bpe", metadata={"help": f"The tokenizer trained for both languages: one of {KINDS}; 'wordpiece' "
                                         "or 'char' suit Chinese (see hf_seqmodels.data.tokenization)."})
    source_tokenizer_type: str | None = field(
        default=None, metadata={"help": "The source language's tokenizer, when not --tokenizer_type (needs "
                                        "--vocabulary separate)."})
    target_tokenizer_type: str | None = field(
        default=None, metadata={"help": "The target language's tokenizer, when not --tokenizer_type (needs "
                                        "--vocabulary separate)."})
    bleu_tokenize: str | None = field(
        default=None, metadata={"help": f"sacreBLEU's tokenization for BLEU, one of {BLEU_TOKENIZE_CHOICES}; "
                                        "default: by --target_lang ('zh' for Chinese, '13a' for most languages)."})

    def __post_init__(self):
        super().__post_init__()
        check_choice("--vocabulary", self.vocabulary, VOCABULARIES)
        for name in ("tokenizer_type", "source_tokenizer_type", "target_tokenizer_type"):
            if getattr(self, name) is not None:
                check_choice(f"--{name}", getattr(self, name), KINDS)
        if self.vocabulary == "joint" and self.tokenizer_types()[0] != self.tokenizer_types()[1]:
            raise ValueError(f"--vocabulary joint trains one tokenizer for both languages, but the source and target "
                             f"tokenizer types differ ({self.tokenizer_types()}): pass --vocabulary separate.")
        if self.bleu_tokenize is None:
            self.bleu_tokenize = bleu_tokenization(self.target_lang)
        check_choice("--bleu_tokenize", self.bleu_tokenize, BLEU_TOKENIZE_CHOICES)
        for name in ("max_source_length", "max_target_length"):
            check_at_least(self, name, 2, " (a token and the eos)")
        check_at_least(self, "vocab_size", len(DEFAULT_SPECIAL_TOKENS) + 1, " (more than the special tokens)")
        check_different(self, "source_lang", "target_lang")
        check_column_files(self.file_options())

    def column_kinds(self) -> dict[str, str]:
        return {self.source_lang: "text", self.target_lang: "text"}

    def tokenizer_types(self) -> tuple[str, str]:
        """The kinds of tokenizer of the source and the target language."""
        return (self.source_tokenizer_type or self.tokenizer_type, self.target_tokenizer_type or self.tokenizer_type)


@dataclass
class GenerationArguments:
    num_beams: int = field(default=5, metadata={"help": "Beam size for the test set (saved as the default)."})
    length_penalty: float = field(default=1.0, metadata={"help": "Beam scores are divided by length**this."})
    max_new_tokens: int = field(default=64, metadata={"help": "Longest translation, in tokens."})
    eval_num_beams: int = field(default=1, metadata={"help": "Beam size for the validation BLEU of each epoch."})

    def __post_init__(self):
        for name in ("num_beams", "eval_num_beams", "max_new_tokens"):
            check_at_least(self, name, 1)
        check_range(self, "length_penalty", -math.inf)


ARGUMENTS = (ModelArguments, DataArguments, TrainingArguments, GenerationArguments)


def end_with_eos(tokenizer: PreTrainedTokenizerFast) -> PreTrainedTokenizerFast:
    """Make the tokenizer append ``eos`` to every text it encodes (as Marian's does): the encoder sees where the
    source ends, and the labels teach the decoder to stop."""
    eos = tokenizer.eos_token
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {eos}", pair=f"$A {eos} $B {eos}", special_tokens=[(eos, tokenizer.eos_token_id)]
    )
    return tokenizer


class TranslationTokenizers:
    """The tokenizers of a language pair. ``save_pretrained`` writes the target tokenizer to the folder, the source
    tokenizer to its ``source_tokenizer/`` sub-folder when the vocabularies are separate, and the code of the
    translation pipeline."""

    def __init__(self, source: PreTrainedTokenizerFast, target: PreTrainedTokenizerFast):
        if source.pad_token_id != target.pad_token_id:
            raise ValueError(f"The source and target tokenizers must share the pad id, got {source.pad_token_id} "
                             f"and {target.pad_token_id}.")
        self.source, self.target = source, target

    @property
    def joint(self) -> bool:
        return self.source is self.target

    def save_pretrained(self, folder) -> None:
        save_tokenizer(self.target, folder)
        if not self.joint:
            save_tokenizer(self.source, Path(folder) / SOURCE_TOKENIZER_DIR)
        shutil.copy(pipeline_translation.__file__, folder)


def train_tokenizers(
    train: datasets.Dataset, source_lang: str, target_lang: str, vocab_size: int, joint: bool = True,
    kinds: tuple[str, str] = ("bpe", "bpe"),
) -> TranslationTokenizers:
    """Tokenizers trained on the ``train`` split's columns ``source_lang`` and ``target_lang``: one on both
    (``joint``, ``vocab_size`` tokens in all; both ``kinds`` the same) or one per language (``vocab_size`` tokens
    each), of the source's and the target's kind (`tokenization.KINDS`)."""
    if joint:
        texts = (text for row in train for text in (row[source_lang], row[target_lang]))
        tokenizer = end_with_eos(train_tokenizer(texts, kind=kinds[0], vocab_size=vocab_size))
        return TranslationTokenizers(tokenizer, tokenizer)
    source, target = (end_with_eos(train_tokenizer(list(train[lang]), kind=kind, vocab_size=vocab_size))
                      for lang, kind in zip((source_lang, target_lang), kinds))
    return TranslationTokenizers(source, target)


def load_tokenizers(folder) -> TranslationTokenizers:
    """The tokenizers saved with a model by `TranslationTokenizers.save_pretrained`; a tokenizer.json far larger than
    the vocabulary of the model's config.json is refused before it is loaded (`check_tokenizer_size`)."""
    source_folder = Path(folder) / SOURCE_TOKENIZER_DIR
    for tokenizer_folder in (folder, source_folder):
        check_tokenizer_size(tokenizer_folder, f"the tokenizers of {folder}")
    target = AutoTokenizer.from_pretrained(folder)
    return TranslationTokenizers(AutoTokenizer.from_pretrained(source_folder) if source_folder.is_dir() else target,
                                 target)


def tokenize_pairs(
    raw: datasets.DatasetDict,
    tokenizers: TranslationTokenizers,
    source_lang: str,
    target_lang: str,
    max_source_length: int,
    max_target_length: int,
    num_proc: int | None = None,
) -> datasets.DatasetDict:
    """Columns ``input_ids`` (source, ending with eos) and ``labels`` (target, ending with eos), truncated to the
    maximum lengths, for every split. Pairs with an empty side are dropped: they teach nothing; a split left empty
    raises a ValueError."""
    check_language_columns(raw, source_lang, target_lang)

    def tokenize(batch):
        return {
            "input_ids": tokenizers.source(batch[source_lang], truncation=True, max_length=max_source_length)[
                "input_ids"],
            "labels": tokenizers.target(batch[target_lang], truncation=True, max_length=max_target_length)[
                "input_ids"],
        }

    # Each split drops its own columns: files loaded one by one need not share them (data.load_text_dataset).
    tokenized = datasets.DatasetDict({
        split: rows.map(tokenize, batched=True, remove_columns=rows.column_names, num_proc=num_proc, desc="Tokenizing")
        for split, rows in raw.items()
    })
    tokenized = tokenized.filter(lambda row: len(row["input_ids"]) > 1 and len(row["labels"]) > 1, num_proc=num_proc)
    for split, rows in tokenized.items():
        if len(rows) == 0:
            option = "--max_train_samples" if split == "train" else "--max_eval_samples"
            raise ValueError(f"The {split!r} split has no sentence pairs left ({len(raw[split])} before tokenizing, "
                             f"pairs with an empty side are dropped): raise {option} (at least 1) or check the data.")
    return tokenized


def check_language_columns(raw: datasets.DatasetDict, source_lang: str, target_lang: str) -> None:
    """Raise a ValueError unless every split has the columns ``source_lang`` and ``target_lang`` (one sentence
    each)."""
    for split, dataset in raw.items():
        columns = dataset.column_names
        missing = [lang for lang in (source_lang, target_lang) if lang not in columns]
        if missing:
            nested = (" The data is in transformers' nested format {'translation': {lang: text}}: flatten it to one "
                      "column per language (datasets: raw.flatten() and rename 'translation.en' to 'en')."
                      if "translation" in columns else "")
            raise ValueError(f"Language column(s) {missing} not found in the {split!r} split, which has columns "
                             f"{columns}: pick the columns with --source_lang/--target_lang "
                             f"(now {source_lang!r}/{target_lang!r}).{nested}")


def batches_by_length(texts: list[str], batch_size: int, rows: list[int] | None = None) -> Iterator[list[int]]:
    """The indices of ``texts`` (of those in ``rows``, when given) in batches of ``batch_size``, shortest texts
    first: batches of similar lengths pad little."""
    order = sorted(range(len(texts)) if rows is None else rows, key=lambda i: len(texts[i]))
    return (order[start : start + batch_size] for start in range(0, len(order), batch_size))


@torch.no_grad()
def translate(
    model,
    tokenizers: TranslationTokenizers,
    texts: list[str],
    batch_size: int = 64,
    max_source_length: int | None = None,
    **generate_kwargs,
) -> list[str]:
    """Translate ``texts`` in batches of similar lengths with ``model.generate(**generate_kwargs)`` (our models'
    generate() decodes with our loop, `models.decoding`); detokenized strings, in the order of ``texts``."""
    was_training = model.training
    model.eval()
    translations = [""] * len(texts)
    for rows in batches_by_length(texts, batch_size):
        batch = tokenizers.source([texts[i] for i in rows], padding=True, truncation=max_source_length is not None,
                                  max_length=max_source_length, return_tensors="pt").to(model.device)
        batch.pop("token_type_ids", None)
        generated = model.generate(**batch, **generate_kwargs)
        for i, text in zip(rows, tokenizers.target.batch_decode(generated, skip_special_tokens=True)):
            translations[i] = text.strip()
    model.train(was_training)
    return translations


def translation_scores(
    model, tokenizers: TranslationTokenizers, sources: list[str], references: list[str], prefix: str = "",
    bleu_tokenize: str = "13a", **kwargs
) -> tuple[dict, list[str]]:
    """Translate ``sources`` (see `translate`) and score them against ``references``: ``{prefix}bleu`` (sacreBLEU
    with the ``bleu_tokenize`` tokenization) and ``{prefix}chrf`` on detokenized text, and ``{prefix}degenerate``
    (`is_degenerate`). Returns the scores and the translations."""
    translations = translate(model, tokenizers, sources, **kwargs)
    scores = {**translation_metrics(translations, references, bleu_tokenize), "degenerate": is_degenerate(translations)}
    return {f"{prefix}{name}": value for name, value in scores.items()}, translations


def is_degenerate(translations: list[str]) -> bool:
    """Whether a model's translations are unusable whatever they score: more than half of them empty, or one
    translation given for more than half the sentences (a model that has not learned to translate yet, whose
    validation BLEU can still beat that of an early model). Best-checkpoint selection skips such evaluations."""
    _, repeats = most_repeated(translations)
    return max(translations.count(""), repeats if repeats > 1 else 0) > len(translations) / 2


def most_repeated(translations: list[str]) -> tuple[str, int]:
    """The translation given most often and how often (``("", 0)`` for none)."""
    return Counter(translations).most_common(1)[0] if translations else ("", 0)


# A test BLEU below this means a broken run (decoding without its state, mismatched tokenizers, a metric that does
# not tokenize the target language), not a weak model: the main job's CPU run reaches 33-36 on Multi30k test2016.
IMPLAUSIBLE_BLEU = 5.0


def implausible_bleu_warning(scores: dict, translations: list[str], prefix: str = "test_") -> str | None:
    """A warning to print when ``scores[f"{prefix}bleu"]`` is below `IMPLAUSIBLE_BLEU`, naming the likely causes
    and the most repeated translation; None when the score is plausible."""
    bleu = scores.get(f"{prefix}bleu")
    if bleu is None or bleu >= IMPLAUSIBLE_BLEU:
        return None
    commonest, repeats = most_repeated(translations)
    return (f"WARNING: {prefix}bleu is {bleu:.2f}, implausibly low (below {IMPLAUSIBLE_BLEU}): the model trained, but "
            f"its translations are not usable ({repeats} of {len(translations)} are "
            f"{commonest[:60]!r}). Check that decoding works in this environment (`bash scripts/test.sh "
            "tests/models/test_canaries.py`: a transformers version outside pyproject.toml's range can break the "
            "cache), that the run was long enough, and that the BLEU tokenization suits the target language.")


def load_translation_model(model_dir):
    """The encoder-decoder saved in ``model_dir`` (a folder or Hub id), loaded through `AutoModelForSeq2SeqLM`.

    Raises a ValueError naming what the folder holds when it is some other model (a language model or a classifier):
    a Transformer classifier would otherwise load as a translation model with an untrained decoder.
    """
    check_model_path(str(model_dir), option="model_dir")
    config = AutoConfig.from_pretrained(model_dir)
    seq2seq = MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING.get(type(config), None)
    architectures = config.architectures or []
    if seq2seq is None or (architectures and seq2seq.__name__ not in architectures):
        raise ValueError(f"{model_dir} holds a {config.model_type!r} model {architectures}, not a translation "
                         "model: pass a folder saved by scripts/run_translation.py.")
    return load_pretrained(AutoModelForSeq2SeqLM, model_dir, config=config)


@torch.no_grad()
def attention_matrix(model, tokenizers: TranslationTokenizers, text: str, **generate_kwargs):
    """Translate ``text`` and return the labels of the source tokens, those of the target tokens and the
    cross-attention weights ``(target tokens, source tokens)`` the model used for each target token (last layer, mean
    over heads), or ``None`` for weights when the model has no attention.

    The weights come from re-reading the translation with teacher forcing, which gives the same attention as the
    decoding steps that produced it, whatever the search (beam search keeps several hypotheses per step).

    The labels are the subword pieces the model reads and writes, as a reader sees them (`piece_labels`: "Kat",
    "…zen", not "▁Kat", "zen"), one per row and column of the weights: the picture shows what the model attended
    over. Merging the pieces into words would need the weights summed over a word's source pieces and averaged over
    its target pieces, which draws numbers the model never computed, and a script without spaces (Chinese) has no
    words to merge into.
    """
    model.eval()
    source = tokenizers.source(text, return_tensors="pt").to(model.device)
    generated = model.generate(input_ids=source["input_ids"], attention_mask=source["attention_mask"],
                               **generate_kwargs)
    outputs = model(input_ids=source["input_ids"], attention_mask=source["attention_mask"],
                    decoder_input_ids=generated[:, :-1], output_attentions=True)
    source_labels = piece_labels(tokenizers.source, source["input_ids"][0].tolist())
    target_labels = piece_labels(tokenizers.target, generated[0, 1:].tolist())
    if not outputs.cross_attentions:
        return source_labels, target_labels, None
    return source_labels, target_labels, outputs.cross_attentions[-1][0].mean(0).cpu()


def attention_figure(model, tokenizers: TranslationTokenizers, text: str, **generate_kwargs):
    """A matplotlib figure of the attention ``model`` pays while it translates ``text`` (a heatmap of source pieces x
    target pieces, labelled as a reader sees them: see `attention_matrix`), or ``None`` when the model has no
    attention. Close it when done."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    source_labels, target_labels, weights = attention_matrix(model, tokenizers, text, **generate_kwargs)
    if weights is None:
        return None
    figure, axes = plt.subplots(figsize=(0.45 * len(source_labels) + 2.5, 0.45 * len(target_labels) + 2))
    axes.imshow(weights.numpy(), cmap="Greys", vmin=0.0, vmax=1.0)
    fonts = label_fonts(source_labels + target_labels)
    axes.set_xticks(range(len(source_labels)), source_labels, rotation=90, fontfamily=fonts)
    axes.set_yticks(range(len(target_labels)), target_labels, fontfamily=fonts)
    axes.set_xlabel("source")
    axes.set_ylabel("translation")
    axes.set_title(f"{model_name(model.config)}: {attention_name(model.config)}")
    figure.tight_layout()
    return figure


def model_name(config: PretrainedConfig) -> str:
    """The model's kind in words, from its config: "attention seq2seq (GRU)", "Transformer", else its ``model_type``
    with spaces ("marian")."""
    if config.model_type == "attention_seq2seq":
        return f"attention seq2seq ({config.cell_type.upper()})"
    return "Transformer" if config.model_type == "transformer" else config.model_type.replace("_", " ")


def attention_name(config: PretrainedConfig) -> str:
    """The attention an attention picture shows, in words: "luong general attention", "bahdanau attention", or
    "cross-attention (last layer, mean over heads)"."""
    if kind := getattr(config, "attention_type", None):
        return f"{kind.replace('_', ' ')} attention"
    return "cross-attention (last layer, mean over heads)"


def label_fonts(labels: list[str]) -> list[str]:
    """The font families that draw ``labels``: matplotlib's default font, then installed fonts that hold
    the characters it lacks (the tokens of a Chinese target, say), to which matplotlib falls back glyph by glyph.
    Characters that no installed font holds would be drawn as empty boxes: a warning names them and what to
    install."""
    from matplotlib import font_manager

    default = font_manager.get_font(font_manager.findfont(font_manager.FontProperties()))
    families = [default.family_name]
    missing = {ord(character) for label in labels for character in label if not character.isspace()}
    missing -= set(default.get_charmap())
    for entry in font_manager.fontManager.ttflist:
        if not missing:
            break
        if entry.name in families or entry.name.startswith("Last Resort"):  # its glyphs are placeholder boxes
            continue
        held = missing & set(font_manager.get_font(entry.fname).get_charmap())
        if held:
            families.append(entry.name)
            missing -= held
    if missing:
        warnings.warn(f"No installed font has the characters {''.join(sorted(map(chr, missing)))[:40]!r}: the "
                      "attention plot draws them as empty boxes. Install a font that has them (for Chinese, Japanese "
                      "or Korean: Noto Sans CJK, e.g. `apt install fonts-noto-cjk`) and remove matplotlib's font "
                      "cache (`~/.cache/matplotlib`) so that it looks again.", stacklevel=3)
    return families


def save_attention_plot(model_dir, text: str, path=None, **generate_kwargs):
    """Draw the attention of the model saved in ``model_dir`` while it translates ``text`` (`attention_figure`) into
    ``path`` (default ``<model_dir>/attention.png``). Returns the path, or ``None`` when the model has no
    attention."""
    from matplotlib import pyplot as plt

    model = load_translation_model(model_dir)
    figure = attention_figure(model, load_tokenizer(model_dir, "model_dir", load_tokenizers), text, **generate_kwargs)
    if figure is None:
        return None
    if path is None:
        path = Path(model_dir) / ATTENTION_PLOT
        add_to_manifest(model_dir, path.name)  # before writing: a kill between the two leaves no file unlisted
    else:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def show_examples(model_dir: str, sentences: list[str]) -> None:
    """Reload the saved folder through the Auto classes and print the translations of ``sentences`` with its saved
    generation defaults."""
    model = load_pretrained(AutoModelForSeq2SeqLM, model_dir)
    tokenizers = load_tokenizers(model_dir)
    for source, translation in zip(sentences, translate(model, tokenizers, sentences)):
        print(f"  {source}\n    -> {translation}")


def marian_config(transformer: PretrainedConfig) -> MarianConfig:
    """The MarianConfig with our Transformer config's sizes, dropouts, vocabularies, embedding sharing and special
    ids: the same trainable parameters (Marian also counts its fixed sinusoidal position tables as parameters).
    Marian's layers are post-norm with sinusoidal positions: a config of another kind is refused."""
    for name, marian in (("norm_position", "post"), ("position_embedding", "sinusoidal")):
        if getattr(transformer, name) != marian:
            raise ValueError(f"--model_type marian: MarianMTModel has {name}={marian!r} only, got "
                             f"{getattr(transformer, name)!r}: drop {name} from --config_overrides.")
    return MarianConfig(
        vocab_size=transformer.source_vocab_size or transformer.vocab_size, decoder_vocab_size=transformer.vocab_size,
        share_encoder_decoder_embeddings=transformer.share_encoder_decoder_embeddings, d_model=transformer.d_model,
        encoder_layers=transformer.encoder_layers, decoder_layers=transformer.decoder_layers,
        encoder_attention_heads=transformer.num_heads, decoder_attention_heads=transformer.num_heads,
        encoder_ffn_dim=transformer.ffn_dim, decoder_ffn_dim=transformer.ffn_dim,
        activation_function=transformer.activation, dropout=transformer.dropout,
        attention_dropout=transformer.attention_dropout, activation_dropout=transformer.activation_dropout,
        max_position_embeddings=transformer.max_position_embeddings, scale_embedding=transformer.scale_embedding,
        tie_word_embeddings=transformer.tie_word_embeddings, pad_token_id=transformer.pad_token_id,
        bos_token_id=transformer.bos_token_id, eos_token_id=transformer.eos_token_id,
        decoder_start_token_id=transformer.decoder_start_token_id, forced_eos_token_id=None,
    )


def make_model(model_args: ModelArguments, generation_args: GenerationArguments, tokenizers: TranslationTokenizers):
    """A new encoder-decoder of ``model_args.model_type`` sized to the tokenizers, with the generation defaults
    saved with it."""
    config = model_args.config(tokenizers.target, decoder_start_token_id=tokenizers.target.bos_token_id,
                               source_vocab_size=None if tokenizers.joint else len(tokenizers.source))
    if model_args.model_type == "marian":
        config = marian_config(config)
    config.custom_pipelines = CUSTOM_PIPELINES  # pipeline("translation", model=folder, trust_remote_code=True)
    model = AutoModelForSeq2SeqLM.from_config(config)
    model.generation_config.update(num_beams=generation_args.num_beams, length_penalty=generation_args.length_penalty,
                                   max_new_tokens=generation_args.max_new_tokens,
                                   early_stopping=generation_args.num_beams > 1)  # only valid with beam search
    return model


def train_sampler(train_rows: datasets.Dataset, training_args: TrainingArguments):
    """The order of the training pairs: batches of ``--per_device_train_batch_size`` pairs of similar lengths
    (`LengthGroupedSampler`), or of at most ``--max_tokens`` tokens (`TokenBatchSampler`)."""
    source_lengths, target_lengths = ([len(ids) for ids in train_rows[column]] for column in ("input_ids", "labels"))
    if training_args.max_tokens is not None:
        return TokenBatchSampler(source_lengths, target_lengths, training_args.max_tokens, seed=training_args.seed)
    # Target lengths break the ties of source lengths: the main job's batches then pad a fifth of their target
    # positions instead of a third (the decoder, attention, output layer and loss run over the padding).
    return LengthGroupedSampler(list(zip(source_lengths, target_lengths)), training_args.per_device_train_batch_size,
                                seed=training_args.seed)


def run(model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments,
        generation_args: GenerationArguments) -> dict:
    """Train and evaluate a translation model, save it with its tokenizers and ``results.json`` to
    ``training_args.output_dir``, print a summary, a few translations by the reloaded folder and the attention
    picture of one (main process). Returns the results."""
    start = time.monotonic()
    accelerator, checkpoints = start_run(training_args)
    src, tgt = data_args.source_lang, data_args.target_lang

    with accelerator.main_process_first():
        raw = data_args.load()
        check_language_columns(raw, src, tgt)
        tokenizers = checkpoints.tokenizer(
            lambda: train_tokenizers(raw["train"], src, tgt, data_args.vocab_size,
                                     joint=data_args.vocabulary == "joint", kinds=data_args.tokenizer_types()),
            load_tokenizers,
        )
        tokenized = tokenize_pairs(raw, tokenizers, src, tgt, data_args.max_source_length,
                                   data_args.max_target_length, data_args.preprocessing_num_workers)
    model = make_model(model_args, generation_args, tokenizers)
    vectors_coverage = model_args.load_word_vectors(model, tokenizers.source, tokenizers.target)

    decode = {"batch_size": training_args.per_device_eval_batch_size, "max_source_length": data_args.max_source_length,
              "max_new_tokens": generation_args.max_new_tokens, "bleu_tokenize": data_args.bleu_tokenize}

    def validation_bleu(model) -> dict:
        scores, _ = translation_scores(model, tokenizers, raw["validation"][src], raw["validation"][tgt],
                                       prefix="eval_", num_beams=generation_args.eval_num_beams, **decode)
        return scores

    collator = DataCollatorForSeq2Seq(tokenizers.source, label_pad_token_id=-100)
    results = train(accelerator, model, tokenized["train"], tokenized["validation"], collator, training_args,
                    evaluate_fn=validation_bleu, train_sampler=train_sampler(tokenized["train"], training_args),
                    tokenizer=tokenizers, checkpoints=checkpoints)

    model = accelerator.unwrap_model(model)
    if "test" in raw and accelerator.is_main_process:
        test_start = time.monotonic()
        scores, translations = translation_scores(
            model, tokenizers, raw["test"][src], raw["test"][tgt], prefix="test_",
            num_beams=generation_args.num_beams, length_penalty=generation_args.length_penalty, **decode
        )
        results.update(scores, test_decoding_s=time.monotonic() - test_start, test_num_beams=generation_args.num_beams,
                       test_hypotheses_file=TEST_HYPOTHESES)
        if warning := implausible_bleu_warning(scores, translations):
            results["warnings"] = [warning]
    if all(entry.get("eval_degenerate") for entry in results["eval_history"]):
        results.setdefault("warnings", []).append(
            "WARNING: every validation evaluation gave degenerate translations (more than half empty or alike), so "
            "no best checkpoint was chosen and the model is the last one: train longer (--num_train_epochs, "
            "--time_budget_minutes) or check the data and tokenizers.")
    fields = {
        "task": "translation",
        "dataset": data_args.dataset_name or data_args.train_file,
        "languages": {"source": src, "target": tgt},
        "tokenizer_types": dict(zip(("source", "target"), data_args.tokenizer_types())),
        **translation_signatures(data_args.bleu_tokenize),
        "model_config": model.config.to_dict(),  # what the model card describes
        "num_parameters": model.num_parameters(),
        "vocab_size": len(tokenizers.target),
        "source_vocab_size": len(tokenizers.source),
    }
    hypotheses = "".join(f"{line}\n" for line in translations) if "test_hypotheses_file" in results else None
    finish_run(accelerator, checkpoints, training_args, (model_args, data_args, generation_args), model, tokenizers,
               results, fields, start=start, splits=[split for split in ("validation", "test") if split in raw],
               word_vectors_coverage=vectors_coverage, texts={} if hypotheses is None else {TEST_HYPOTHESES: hypotheses})

    if accelerator.is_main_process:
        print(f"Translations by the reloaded {training_args.output_dir}:")
        show_examples(training_args.output_dir, EXAMPLES)
        picture = save_attention_plot(training_args.output_dir, EXAMPLES[0])
        if picture is not None:
            print(f"Attention of the first sentence: {picture}")
    return results
