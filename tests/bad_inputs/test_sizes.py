"""Sizes checked before allocation (issue 49): a config whose model would not fit in memory
(`HF_SEQMODELS_MAX_MODEL_GB`), a saved folder whose config.json describes far more parameters than its safetensors
files hold, a tokenizer.json far larger than the model's vocabulary, and a folder whose weights are only pickled.
Each is refused with a clear error naming the field or file, in well under a second, before anything large is
allocated or read; configs of the sizes people build, and folders loaded as transformers loads them (a new head on
a saved body), are not."""

import json
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
)

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentConfig,
    RecurrentForCausalLM,
    TransformerConfig,
    TransformerForCausalLM,
    TransformerForConditionalGeneration,
    TransformerForSequenceClassification,
)
from hf_seqmodels.comparison import recipes
from hf_seqmodels.data.paths import data_dir
from hf_seqmodels.data.tokenization import load_tokenizer, save_tokenizer, train_tokenizer
from hf_seqmodels.serving.inference import load_language_model
from hf_seqmodels.storage.safe_loading import load_pretrained
from hf_seqmodels.tasks.translation import load_tokenizers

from ..training.test_checkpoints import Marker
from ..test_modeling_common import REMOTE_CODE_SCRIPT
from .outcomes import assert_outcome

AREA = "sizes"
LIMIT = "HF_SEQMODELS_MAX_MODEL_GB"
IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
TINY = {  # a tiny model of each family, as the other bad-input cases build them
    RecurrentForCausalLM: RecurrentConfig(vocab_size=12, embedding_size=8, hidden_size=8, num_layers=2, **IDS),
    AttentionSeq2SeqForConditionalGeneration: AttentionSeq2SeqConfig(vocab_size=12, embedding_size=8, hidden_size=8,
                                                                     decoder_start_token_id=1, **IDS),
    TransformerForCausalLM: TransformerConfig(vocab_size=12, d_model=8, num_heads=2, encoder_layers=1,
                                              decoder_layers=2, ffn_dim=16, is_encoder_decoder=False, **IDS),
    TransformerForConditionalGeneration: TransformerConfig(vocab_size=12, d_model=8, num_heads=2, encoder_layers=2,
                                                           decoder_layers=2, ffn_dim=16, **IDS),
}
AUTO_CLASSES = {RecurrentForCausalLM: AutoModelForCausalLM, TransformerForCausalLM: AutoModelForCausalLM,
                AttentionSeq2SeqForConditionalGeneration: AutoModelForSeq2SeqLM,
                TransformerForConditionalGeneration: AutoModelForSeq2SeqLM}


@pytest.fixture(autouse=True)
def default_limit(monkeypatch):
    monkeypatch.delenv(LIMIT, raising=False)


def save(model_class, folder: Path, **changes) -> Path:
    """Save the tiny ``model_class`` in ``folder`` with a word tokenizer, then set ``changes`` in its config.json
    (what a user who edits it, or a hostile folder, does)."""
    torch.manual_seed(0)
    model_class(TINY[model_class]).save_pretrained(folder)
    save_tokenizer(train_tokenizer(["a b c d e f g"], "word", vocab_size=12), folder)
    edit_json(folder / "config.json", changes)
    return folder


def edit_json(path: Path, changes: dict) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


# A refusal must come before the model is built: building the sizes below takes minutes and gigabytes (or crashes
# the allocator), a refusal well under a second; the bound tells the two apart however busy the machine is (it is
# no speed figure).
BEFORE_THE_BUILD_S = 60


def within(seconds: float, call):
    """``call`` that fails unless it returns or raises within ``seconds``."""
    def timed():
        start = time.perf_counter()
        try:
            return call()
        finally:
            assert time.perf_counter() - start < seconds, f"took {time.perf_counter() - start:.1f} s"
    return timed


# 1. Configs whose model would not fit: refused where the config is made, naming the field

TOO_LARGE = {  # name: (config, the field the message must name first)
    "recurrent hidden_size": (lambda: RecurrentConfig(embedding_size=16, hidden_size=10**9), "hidden_size=1000000000"),
    "recurrent num_layers": (lambda: RecurrentConfig(num_layers=10**9, hidden_size=8), "num_layers=1000000000"),
    "recurrent vocab_size": (lambda: RecurrentConfig(vocab_size=10**11, embedding_size=8), "vocab_size=100000000000"),
    "spellings": (lambda: RecurrentConfig(vocab_size=1000, spelling_features=4, max_spelling_length=10**10),
                  "max_spelling_length=10000000000"),
    "attention hidden_size": (lambda: AttentionSeq2SeqConfig(hidden_size=10**6), "hidden_size=1000000"),
    "attention decoder_layers": (lambda: AttentionSeq2SeqConfig(decoder_layers=10**8), "decoder_layers=100000000"),
    "transformer d_model": (lambda: TransformerConfig(d_model=2**20, num_heads=1), "d_model=1048576"),
    "transformer ffn_dim": (lambda: TransformerConfig(ffn_dim=10**10), "ffn_dim=10000000000"),
    "transformer decoder_layers": (lambda: TransformerConfig(decoder_layers=10**7, is_encoder_decoder=False),
                                   "decoder_layers=10000000"),
    "sinusoidal positions": (lambda: TransformerConfig(max_position_embeddings=10**9),
                             "max_position_embeddings=1000000000"),
}


@pytest.mark.parametrize("case", TOO_LARGE)
def test_a_config_too_large_for_memory_names_the_field(case):
    make, field = TOO_LARGE[case]
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, make),
                   error=rf"describes a model of [\d,.]+ GB .*more than the limit of 64 GB; .*\({field}\b.*{LIMIT}=\d+")


@pytest.mark.parametrize("model_class", TINY)
def test_a_config_json_too_large_for_memory_is_refused_on_loading(model_class, tmp_path):
    """AutoConfig, the model class and the scripts' loader all build the config first: nothing is allocated."""
    field = "num_layers" if model_class is RecurrentForCausalLM else "decoder_layers"
    folder = save(model_class, tmp_path, **{field: 10**10})
    message = rf"{field}=10000000000.*{LIMIT}"
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, lambda: AutoConfig.from_pretrained(folder)), error=message)
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, lambda: model_class.from_pretrained(folder)), error=message)
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, lambda: load_pretrained(AUTO_CLASSES[model_class], folder)),
                   error=message)


def test_a_config_json_cannot_raise_the_limit(tmp_path):
    folder = save(RecurrentForCausalLM, tmp_path, hidden_size=10**9, max_model_gb=10**12, **{LIMIT: "inf"})
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder), error=rf"hidden_size=1000000000.*{LIMIT}")


def test_the_limit_is_the_environment_variable(monkeypatch):
    """Read at every check: lowered, a default config is refused; raised, a config above 64 GB is made (a config
    only: nothing is allocated)."""
    monkeypatch.setenv(LIMIT, "0.001")
    assert_outcome(AREA, lambda: RecurrentConfig(), error=r"more than the limit of 0.001 GB")
    monkeypatch.setenv(LIMIT, "1000")
    assert_outcome(AREA, lambda: RecurrentConfig(hidden_size=200_000), check=lambda c: c.hidden_size == 200_000)
    monkeypatch.setenv(LIMIT, "inf")
    assert_outcome(AREA, lambda: RecurrentConfig(hidden_size=10**9), check=lambda c: c.hidden_size == 10**9)
    monkeypatch.delenv(LIMIT)
    assert_outcome(AREA, lambda: RecurrentConfig(hidden_size=200_000), error=r"more than the limit of 64 GB")


@pytest.mark.parametrize("value", ["", "lots", "0", "-5", "nan"])
def test_a_bad_limit_names_the_variable(value, monkeypatch):
    monkeypatch.setenv(LIMIT, value)
    assert_outcome(AREA, lambda: RecurrentConfig(), error=rf"\${LIMIT}={value!r} must be a positive number of GB")


REAL_SIZES = {  # configs of the sizes people build: none may be refused
    "BERT-base": lambda: TransformerConfig(vocab_size=30522, d_model=768, num_heads=12, encoder_layers=12,
                                           decoder_layers=12, ffn_dim=3072, position_embedding="learned"),
    "BERT-large": lambda: TransformerConfig(vocab_size=30522, d_model=1024, num_heads=16, encoder_layers=24,
                                            decoder_layers=24, ffn_dim=4096),
    "GPT-2 XL": lambda: TransformerConfig(vocab_size=50257, d_model=1600, num_heads=25, decoder_layers=48,
                                          ffn_dim=6400, max_position_embeddings=1024, is_encoder_decoder=False),
    "Transformer big": lambda: TransformerConfig(vocab_size=37000, d_model=1024, num_heads=16, ffn_dim=4096),
    "AWD-LSTM (WT-103 vocabulary)": lambda: RecurrentConfig(vocab_size=267735, embedding_size=400, hidden_size=1150,
                                                            num_layers=3, tie_word_embeddings=False),
    "BiLSTM-CRF tagger": lambda: RecurrentConfig(vocab_size=100000, embedding_size=300, hidden_size=512,
                                                 num_layers=2, bidirectional=True, use_crf=True, spelling_features=50),
    "GNMT-like LSTM": lambda: AttentionSeq2SeqConfig(vocab_size=32000, embedding_size=1024, hidden_size=1024,
                                                     cell_type="lstm", encoder_layers=8, decoder_layers=8,
                                                     attention_type="bahdanau"),
    "every family's default": lambda: [RecurrentConfig(), AttentionSeq2SeqConfig(), TransformerConfig()],
}


@pytest.mark.parametrize("name", REAL_SIZES)
def test_configs_of_real_sizes_are_made(name):
    assert_outcome(AREA, REAL_SIZES[name], check=lambda config: config is not None)


def test_the_repositorys_recipes_are_made():
    """The sizes of the comparison suites' recipes (comparison/recipes.py), each as its task makes its config."""
    fields = ("vocab_size", "embedding_size", "hidden_size", "num_layers", "bidirectional")
    for recipe in ({**recipes.RNN_SST2, **recipes.BILSTM}, {**recipes.RNN_TAGGER, **recipes.BILSTM, **recipes.WIDE},
                   {**recipes.RNN_TAGGER, **recipes.WNUT17_TAGGER}, recipes.PTB_SIZES):
        sizes = {name: value for name, value in recipe.items() if name in fields}
        assert_outcome(AREA, lambda: RecurrentConfig(**sizes), check=lambda config: config.hidden_size > 1)
    overrides = dict(item.split("=") for item in recipes.TRANSFORMER_SIZES.split(",") if "dropout" not in item)
    assert_outcome(AREA, lambda: TransformerConfig(vocab_size=16000, **{k: int(v) for k, v in overrides.items()}),
                   check=lambda config: config.d_model == 256)


# 2. A config.json describing far more than its weights hold: refused from the safetensors header, before building

EDITED = {  # the tiny model, and the field set to 1000000 in its config.json
    "recurrent num_layers": (RecurrentForCausalLM, "num_layers"),
    "attention decoder_layers": (AttentionSeq2SeqForConditionalGeneration, "decoder_layers"),
    "transformer decoder-only": (TransformerForCausalLM, "decoder_layers"),
    "transformer encoder_layers": (TransformerForConditionalGeneration, "encoder_layers"),
}


@pytest.mark.parametrize("case", EDITED)
def test_a_config_json_describing_far_more_than_the_weights_is_refused_before_building(case, tmp_path):
    model_class, field = EDITED[case]
    folder = save(model_class, tmp_path, **{field: 1_000_000})
    message = (rf"{folder / 'config.json'} describes a model .*\({field}=1000000\b.*but "
               rf"{folder / 'model.safetensors'} hold\(s\) [\d,]+ in all")
    for load in (lambda: model_class.from_pretrained(folder),
                 lambda: AUTO_CLASSES[model_class].from_pretrained(folder),
                 lambda: load_pretrained(AUTO_CLASSES[model_class], folder)):
        assert_outcome(AREA, within(BEFORE_THE_BUILD_S, load), error=message, timeout=30)


def test_generate_scripts_loader_refuses_the_edited_folder(tmp_path):
    """scripts/generate.py loads through `load_language_model`: 3 minutes and 5.9 GB before this check."""
    folder = save(RecurrentForCausalLM, tmp_path, num_layers=1_000_000)
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, lambda: load_language_model(folder)),
                   error=r"config.json describes .*num_layers=1000000.*model.safetensors", timeout=30)


def test_sharded_weights_are_counted_from_every_shard(tmp_path):
    folder = tmp_path / "sharded"
    RecurrentForCausalLM(TINY[RecurrentForCausalLM]).save_pretrained(folder, max_shard_size="1KB")
    shards = sorted(path.name for path in folder.glob("*.safetensors"))
    assert len(shards) > 1 and (folder / "model.safetensors.index.json").is_file()
    assert_outcome(AREA, lambda: AutoModelForCausalLM.from_pretrained(folder),
                   check=lambda model: model.config.num_layers == 2)
    edit_json(folder / "config.json", {"num_layers": 1_000_000})
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, lambda: AutoModelForCausalLM.from_pretrained(folder)),
                   error=rf"num_layers=1000000.*{'.*'.join(shards)} hold\(s\)", timeout=30)


def test_a_config_passed_to_from_pretrained_is_compared_too(tmp_path):
    folder = save(RecurrentForCausalLM, tmp_path)
    config = RecurrentConfig(**{**TINY[RecurrentForCausalLM].to_diff_dict(), "num_layers": 1_000_000})
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S,
                                lambda: RecurrentForCausalLM.from_pretrained(folder, config=config)),
                   error=r"the config passed to from_pretrained describes .*num_layers=1000000", timeout=30)


def test_what_transformers_loads_still_loads(tmp_path):
    """The comparison is lenient where transformers' loading legitimately differs: a new head on a saved body, a bare
    body, an encoder-only head from an encoder-decoder, one layer more than saved (left to the loaders' key check)."""
    lm = save(RecurrentForCausalLM, tmp_path / "lm")
    seq2seq = save(TransformerForConditionalGeneration, tmp_path / "seq2seq")
    body = load_file(lm / "model.safetensors")["model.embed_tokens.weight"]
    assert_outcome(AREA, lambda: AutoModelForSequenceClassification.from_pretrained(lm, num_labels=3),
                   check=lambda model: torch.equal(model.model.embed_tokens.weight, body))
    assert_outcome(AREA, lambda: AutoModel.from_pretrained(lm), check=lambda model: model.config.num_layers == 2)
    assert_outcome(AREA, lambda: TransformerForSequenceClassification.from_pretrained(seq2seq, num_labels=2),
                   check=lambda model: model.config.encoder_layers == 2)
    edit_json(lm / "config.json", {"num_layers": 3})
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForCausalLM, lm),
                   error=r"the folder lacks: model\.rnn\.layers\.2\.")


def test_the_saved_code_refuses_the_edited_folder_too(tmp_path):
    """trust_remote_code loads the folder's own modeling_utils.py and weight_files.py, in a process where
    hf_seqmodels cannot be imported."""
    folder = save(RecurrentForCausalLM, tmp_path / "model", num_layers=1_000_000)
    opening = REMOTE_CODE_SCRIPT[: REMOTE_CODE_SCRIPT.index("for case in")]
    script = opening + (
        "start = __import__('time').perf_counter()\n"
        "try:\n"
        f"    transformers.AutoModelForCausalLM.from_pretrained({str(folder)!r}, trust_remote_code=True)\n"
        "except ValueError as error:\n"
        "    print('refused', round(__import__('time').perf_counter() - start, 1), error)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("refused"), result.stdout + result.stderr
    assert "num_layers=1000000" in result.stdout and float(result.stdout.split()[1]) < BEFORE_THE_BUILD_S, \
        result.stdout


# 3. A tokenizer.json far larger than the config's vocabulary: refused from its size, before it is loaded

def bloat(tokenizer_file: Path, entries: int) -> None:
    """Give the word-level tokenizer.json ``entries`` more words (a fast json.dump of a dict)."""
    tokenizer = json.loads(tokenizer_file.read_text())
    vocab = tokenizer["model"]["vocab"]
    vocab.update({f"w{i}": len(vocab) + i for i in range(entries)})
    with open(tokenizer_file, "w") as file:
        json.dump(tokenizer, file)


@pytest.fixture(scope="module")
def bloated_tokenizer(tmp_path_factory) -> Path:
    """A tokenizer.json of a million words (some 20 MB) for a model of 12 tokens."""
    folder = tmp_path_factory.mktemp("tokenizer")
    save_tokenizer(train_tokenizer(["a b c d e f g"], "word", vocab_size=12), folder)
    bloat(folder / "tokenizer.json", 1_000_000)
    return folder / "tokenizer.json"


def test_a_bloated_tokenizer_of_a_model_folder_is_refused_unloaded(bloated_tokenizer, tmp_path):
    folder = save(RecurrentForCausalLM, tmp_path)
    (folder / "tokenizer.json").write_bytes(bloated_tokenizer.read_bytes())
    message = (rf"model_dir: {folder / 'tokenizer.json'} is [\d.]+ MB, more than a tokenizer of the 12 tokens that "
               rf"{folder / 'config.json'} declares \(vocab_size=12\) can take")
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, lambda: load_tokenizer(folder, "model_dir")), error=message)
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, lambda: load_language_model(folder)), error=message)


def test_a_bloated_tokenizer_of_a_checkpoint_is_refused_unloaded(bloated_tokenizer, tmp_path):
    """A checkpoint keeps its tokenizer in tokenizer/ beside the model's config.json (what --resume_from_checkpoint
    loaded for 69 s and 4.4 GB, then named model.safetensors)."""
    checkpoint = save(RecurrentForCausalLM, tmp_path / "step_2")
    (checkpoint / "tokenizer").mkdir()
    (checkpoint / "tokenizer" / "tokenizer.json").write_bytes(bloated_tokenizer.read_bytes())
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S,
                                lambda: load_tokenizer(checkpoint / "tokenizer", "--resume_from_checkpoint")),
                   error=rf"--resume_from_checkpoint: .*tokenizer/tokenizer.json is [\d.]+ MB.*"
                         rf"{checkpoint / 'config.json'} declares \(vocab_size=12\)")


def test_a_bloated_source_tokenizer_of_a_translator_is_refused_unloaded(bloated_tokenizer, tmp_path):
    folder = save(AttentionSeq2SeqForConditionalGeneration, tmp_path, source_vocab_size=20)
    (folder / "source_tokenizer").mkdir()
    (folder / "source_tokenizer" / "tokenizer.json").write_bytes(bloated_tokenizer.read_bytes())
    assert_outcome(AREA, within(BEFORE_THE_BUILD_S, lambda: load_tokenizers(folder)),
                   error=r"source_tokenizer/tokenizer.json is [\d.]+ MB.*\(source_vocab_size=20\)")


def test_real_tokenizers_load(tmp_path):
    """No false alarm: a trained tokenizer beside its model, and the bundled pretrained encoder's (30,522 tokens)."""
    folder = save(RecurrentForCausalLM, tmp_path)
    assert_outcome(AREA, lambda: load_tokenizer(folder, "model_dir"), check=lambda tokenizer: len(tokenizer) <= 12)
    encoder = data_dir() / "models" / "all-MiniLM-L6-v2"
    assert_outcome(AREA, lambda: load_tokenizer(encoder, "--model_name_or_path"),
                   check=lambda tokenizer: len(tokenizer) == AutoConfig.from_pretrained(encoder).vocab_size)


# 4. Weights only pickled: our classes' from_pretrained refuses them unloaded, and says how to convert

@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt"])
def test_our_from_pretrained_refuses_pickled_weights_unloaded(name, tmp_path):
    folder = save(RecurrentForCausalLM, tmp_path / "model")
    (folder / "model.safetensors").unlink()
    (folder / name).write_bytes(pickle.dumps(Marker(tmp_path / "code-ran")))
    message = (rf"{folder} holds its weights only as {name}, a pickle: .* convert it once "
               r"\(RecurrentForCausalLM\.from_pretrained\(folder, use_safetensors=False\)\.save_pretrained\(new_folder\)")
    assert_outcome(AREA, lambda: RecurrentForCausalLM.from_pretrained(folder), error=message)
    assert_outcome(AREA, lambda: AutoModelForCausalLM.from_pretrained(folder), error=message)
    assert not (tmp_path / "code-ran").exists()


def test_the_conversion_the_message_gives_works(tmp_path):
    """The explicit opt-in (a pickle the user trusts: torch's own state dict) loads, and saving it writes
    model.safetensors, which loads as any folder does."""
    folder = save(RecurrentForCausalLM, tmp_path / "model")
    saved = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    torch.save(saved, folder / "pytorch_model.bin")
    converted = tmp_path / "converted"
    assert_outcome(AREA, lambda: RecurrentForCausalLM.from_pretrained(folder, use_safetensors=False).save_pretrained(
        converted), check=lambda _: (converted / "model.safetensors").is_file())
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForCausalLM, converted),
                   check=lambda model: torch.equal(model.model.embed_tokens.weight, saved["model.embed_tokens.weight"]))
