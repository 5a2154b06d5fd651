"""ModelTesterMixin: the checks every model family passes, for every head class (../shared/STYLE.md P7, P8).

Shaped like transformers' ``tests/test_modeling_common.py``: a family's test class mixes it in and supplies a tiny
``tester`` object; every check runs over every class in ``tester.all_model_classes`` and compares against an
independent reference (the same sequence alone, a loss recomputed here, the model reloaded), never against stored
outputs. The helpers below (``collate``, ``make_model``, ``make_tokenizer``, ...) are shared with
``test_generation_common.py`` and the family tests.
"""

import dataclasses
import functools
import inspect
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers
from torch.nn import functional as F
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)
from transformers.modeling_outputs import (
    CausalLMOutputWithPast,
    ModelOutput,
    Seq2SeqLMOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

import hf_seqmodels  # noqa: F401  (registers the Auto classes)
from hf_seqmodels.data.tokenization import word_decoder
from hf_seqmodels.models.modeling_utils import CACHE_NAME, output_cache

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIAL_TOKENS = ("[PAD]", "[BOS]", "[EOS]", "[UNK]")
WORDS = ("the", "cat", "dog", "sat", "ran", "on", "a", "mat", "log", "far", "big", "red")
ATOL = 1e-5


@dataclass(frozen=True)
class Head:
    """What transformers expects of a head class, recognised by its standard name suffix (../shared/STYLE.md P7)."""

    auto_class: type
    output_class: type
    logits_size: str | None  # config field giving the size of the last logits dimension (None: a base model)
    per_token: bool = True  # one prediction per (decoder) token, else one per sequence
    shifts_labels: bool = False  # causal LMs shift labels inside: position t is scored against token t+1


HEADS = {
    "ForCausalLM": Head(AutoModelForCausalLM, CausalLMOutputWithPast, "vocab_size", shifts_labels=True),
    "ForConditionalGeneration": Head(AutoModelForSeq2SeqLM, Seq2SeqLMOutput, "vocab_size"),
    "ForSequenceClassification": Head(
        AutoModelForSequenceClassification, SequenceClassifierOutput, "num_labels", per_token=False
    ),
    "ForTokenClassification": Head(AutoModelForTokenClassification, TokenClassifierOutput, "num_labels"),
    "Model": Head(AutoModel, ModelOutput, None),
}


def head_of(model_class: type) -> Head:
    for suffix, head in HEADS.items():
        if model_class.__name__.endswith(suffix):
            return head
    raise ValueError(f"{model_class.__name__} does not end with a standard head name: {', '.join(HEADS)}.")


def fields_of(output: ModelOutput) -> set[str]:
    return {field.name for field in dataclasses.fields(output)}


def takes_labels(model_class: type) -> bool:
    return "labels" in inspect.signature(model_class.forward).parameters


def make_model(model_class: type, config, seed: int = 0, std: float = 0.5):
    """``model_class(config)`` in eval mode with every weight redrawn from N(0, std²).

    Default initialisations of tiny models give near-uniform logits; wider weights separate them, so that token
    comparisons are not decided by float noise and tolerances are small relative to the outputs.
    """
    torch.manual_seed(seed)
    model = model_class(config)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, std)
    return model.eval()


def make_tokenizer(vocab_size: int) -> PreTrainedTokenizerFast:
    """A word-level tokenizer: ids 0-3 are [PAD] [BOS] [EOS] [UNK] (PAD, BOS, EOS, UNK), then ``WORDS``."""
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS + WORDS[: vocab_size - len(SPECIAL_TOKENS)])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = word_decoder()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]", unk_token="[UNK]"
    )


def _pad(rows: list[torch.Tensor], value: int, side: str) -> torch.Tensor:
    length = max(len(row) for row in rows)
    return torch.stack(
        [F.pad(row, (length - len(row), 0) if side == "left" else (0, length - len(row)), value=value) for row in rows]
    )


def collate(examples: list[dict], pad_token_id: int, padding_side: str = "right") -> dict[str, torch.Tensor]:
    """Pad examples (dicts of 1-D LongTensors; a 0-D ``labels`` for sequence labels) into one batch.

    ``input_ids`` is padded on ``padding_side`` and gets an ``attention_mask``; ``decoder_input_ids`` is padded on
    the right and gets a ``decoder_attention_mask``; per-token ``labels`` are padded with -100 like the ids they
    label (the decoder's when there is one).
    """
    ids = [example["input_ids"] for example in examples]
    batch = {"input_ids": _pad(ids, pad_token_id, padding_side),
             "attention_mask": _pad([torch.ones_like(row) for row in ids], 0, padding_side)}
    label_side = padding_side
    if "decoder_input_ids" in examples[0]:
        decoder_ids = [example["decoder_input_ids"] for example in examples]
        batch["decoder_input_ids"] = _pad(decoder_ids, pad_token_id, "right")
        batch["decoder_attention_mask"] = _pad([torch.ones_like(row) for row in decoder_ids], 0, "right")
        label_side = "right"
    if "labels" in examples[0]:
        labels = [example["labels"] for example in examples]
        batch["labels"] = torch.stack(labels) if labels[0].dim() == 0 else _pad(labels, -100, label_side)
    return batch


def without_labels(batch: dict) -> dict:
    return {name: value for name, value in batch.items() if name != "labels"}


def main_output(outputs) -> torch.Tensor:
    """The head's prediction: ``logits``, or ``last_hidden_state`` for a base model."""
    logits = getattr(outputs, "logits", None)
    return logits if logits is not None else outputs.last_hidden_state


def token_mask(batch: dict) -> torch.Tensor:
    """Real positions of per-token outputs: the decoder's for encoder-decoders, else the inputs'."""
    return batch.get("decoder_attention_mask", batch["attention_mask"]).bool()


def per_example(output: torch.Tensor, batch: dict) -> list[torch.Tensor]:
    """Split a batched prediction into one tensor per example, padded positions dropped."""
    if output.dim() == 2:  # one prediction per sequence
        return list(output)
    return [row[keep] for row, keep in zip(output, token_mask(batch))]


def random_labels(model, batch: dict, seed: int = 0) -> torch.Tensor:
    """Random labels in the head's output space: one per real token (-100 at padding) or one per sequence."""
    with torch.no_grad():
        logits = model(**without_labels(batch)).logits
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, logits.shape[-1], logits.shape[:-1], generator=generator)
    return labels.masked_fill(~token_mask(batch), -100) if labels.dim() == 2 else labels


def assert_same_model(loaded, model, batch: dict) -> None:
    """The same weights bit for bit, and the same outputs.

    Outputs are compared with a tolerance: tensors loaded from safetensors lie at unaligned offsets of the
    memory-mapped file, and torch's CPU kernels then sum in another order (~1e-7 apart; the same weights copied
    into fresh tensors give bit-identical outputs).
    """
    expected, got = model.state_dict(), loaded.state_dict()
    assert got.keys() == expected.keys(), set(got) ^ set(expected)
    for name, tensor in expected.items():
        assert torch.equal(got[name], tensor), name
    with torch.no_grad():
        torch.testing.assert_close(main_output(loaded(**batch)), main_output(model(**batch)), rtol=0, atol=ATOL)


REMOTE_CODE_SCRIPT = textwrap.dedent(
    """
    import importlib.abc
    import sys

    class BlockPackage(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "hf_seqmodels":
                raise ImportError(f"{name} is blocked: this process must load the model from its saved code only")

    sys.meta_path.insert(0, BlockPackage())
    try:
        import hf_seqmodels
        sys.exit("hf_seqmodels could be imported; the test would prove nothing")
    except ImportError:
        pass

    import torch
    import transformers

    for case in torch.load(sys.argv[1]):
        auto_class = getattr(transformers, case["auto_class"])
        model = auto_class.from_pretrained(case["folder"], trust_remote_code=True).eval()
        module = type(model).__module__
        assert module.startswith("transformers_modules."), f"{case['folder']} loaded from {module}"
        state = model.state_dict()
        assert state.keys() == case["state_dict"].keys()
        for name, tensor in case["state_dict"].items():
            assert torch.equal(state[name], tensor), name
        with torch.no_grad():
            outputs = model(**case["inputs"])
        got = outputs.logits if getattr(outputs, "logits", None) is not None else outputs.last_hidden_state
        torch.testing.assert_close(got, case["expected"], rtol=0, atol=1e-5)  # see assert_same_model
        if "generated" in case:
            with torch.no_grad():
                generated = model.generate(**case["prompts"], **case["generate_kwargs"])
            assert torch.equal(generated, case["generated"]), (generated, case["generated"])
        print("loaded", type(model).__name__, "from", module, "under transformers", transformers.__version__)
    """
)


@functools.cache
def other_transformers_python() -> str | None:
    """The Python of the repository's other test environment (.venv or .venv-lowest) when its transformers is
    another version than this process's, else None."""
    repo = Path(__file__).resolve().parents[1]
    for venv in (".venv", ".venv-lowest"):
        python = repo / venv / "bin" / "python"
        if not python.exists():
            continue
        version = subprocess.run([str(python), "-c", "import transformers; print(transformers.__version__)"],
                                 capture_output=True, text=True, timeout=120).stdout.strip()
        if version and version != transformers.__version__:
            return str(python)
    return None


class ModelTesterMixin:
    """Checks that every head class of a family behaves as a transformers model and stays exact under padding.

    The test class provides a pytest fixture ``tester`` (parametrize it to cover variants, e.g. cell types)
    returning an object with:

    - ``all_model_classes``: the base model and every head. Kinds are recognised by the standard names of
      ../shared/STYLE.md P7 (``*Model``, ``*ForCausalLM``, ``*ForSequenceClassification``,
      ``*ForTokenClassification``, ``*ForConditionalGeneration``); see ``HEADS`` for the Auto class and output type each must have.
    - ``get_config(model_class)``: a tiny config for that class: no dropout, ``pad_token_id=PAD``,
      ``bos_token_id=BOS``, ``eos_token_id=EOS``, ``vocab_size`` at most 16 (the tokenizer and the exhaustive beam
      test rely on it), ``num_labels`` set for classifiers, and ``tie_word_embeddings`` settable (the save/load
      test sets it to True and to False).
    - ``get_examples(config)``: at least 4 examples of different lengths (at least 2 tokens each), each a dict of
      1-D LongTensors without padding: ``input_ids``; for encoder-decoders also ``decoder_input_ids`` (starting
      with the decoder start token). Batches are built with ``collate``: the source is padded on either side,
      the decoder inputs always on the right (``decoder_attention_mask``). Labels are drawn at random in the head's
      output space (``random_labels``): per decoder token for encoder-decoders (scored as given, not shifted),
      per token for causal LMs (shifted inside the model) and taggers, per sequence for classifiers.
    - ``expected_num_hidden_states(config)``: a dict from output field to the number of hidden states returned
      with ``output_hidden_states=True``, e.g. ``{"hidden_states": num_layers + 1}``, or for an encoder-decoder
      ``{"encoder_hidden_states": ..., "decoder_hidden_states": ...}``; each entry has the batch size and the
      length of its side's inputs, and the last one of ``hidden_states``/``decoder_hidden_states`` is the base
      model's ``last_hidden_state``.
    - ``padding_sides``: the sides on which padding must not change a result, normally ``("right", "left")``.
    """

    def build(self, tester, model_class, **config_changes):
        config = tester.get_config(model_class)
        for name, value in config_changes.items():
            setattr(config, name, value)
        return config, make_model(model_class, config)

    def test_outputs(self, tester):
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            head = head_of(model_class)
            batch = collate(tester.get_examples(config), config.pad_token_id)
            with torch.no_grad():
                outputs = model(**batch)
                as_tuple = model(**batch, return_dict=False)
            name = model_class.__name__
            assert isinstance(outputs, head.output_class), f"{name} returned {type(outputs).__name__}"
            prediction = main_output(outputs)
            mask = token_mask(batch)
            expected_leading = tuple(mask.shape) if head.per_token else (mask.shape[0],)
            assert tuple(prediction.shape[:-1]) == expected_leading, f"{name}: {tuple(prediction.shape)}"
            if head.logits_size:
                assert prediction.shape[-1] == getattr(config, head.logits_size), name
            assert isinstance(as_tuple, tuple), f"{name}(return_dict=False) returned {type(as_tuple).__name__}"
            assert len(as_tuple) == len(outputs.to_tuple()), name
            for got, expected in zip(as_tuple, outputs.to_tuple()):
                if isinstance(expected, torch.Tensor):
                    torch.testing.assert_close(got, expected, rtol=0, atol=0)
                else:
                    assert type(got) is type(expected), name

    def test_hidden_states(self, tester):
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            batch = collate(tester.get_examples(config), config.pad_token_id)
            with torch.no_grad():
                outputs = model(**batch, output_hidden_states=True)
                plain = model(**batch)
            for field, count in tester.expected_num_hidden_states(config).items():
                states = getattr(outputs, field)
                assert isinstance(states, tuple) and len(states) == count, f"{model_class.__name__}.{field}"
                side = "decoder_input_ids" if field.startswith("decoder") else "input_ids"
                for state in states:
                    assert state.shape[:2] == batch[side].shape, f"{model_class.__name__}.{field}"
                assert getattr(plain, field, None) is None, f"{model_class.__name__}.{field} without asking"
                if field in ("hidden_states", "decoder_hidden_states") and head_of(model_class).logits_size is None:
                    torch.testing.assert_close(states[-1], outputs.last_hidden_state, rtol=0, atol=0)

    def test_inputs_embeds(self, tester):
        """The ids' embeddings as ``inputs_embeds`` (and, in an encoder-decoder, the decoder's own embeddings of its
        ids as ``decoder_inputs_embeds``) give what the ids give."""
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            batch = without_labels(collate(tester.get_examples(config), config.pad_token_id))
            embedded = {"input_ids": None, "inputs_embeds": model.get_input_embeddings()(batch["input_ids"])}
            if "decoder_input_ids" in batch:
                embedded |= {"decoder_input_ids": None, "decoder_inputs_embeds":
                             model.get_decoder().get_input_embeddings()(batch["decoder_input_ids"])}
            with torch.no_grad():
                expected = main_output(model(**batch))
                got = main_output(model(**{**batch, **embedded}))
            torch.testing.assert_close(got, expected, rtol=0, atol=ATOL)

    def test_unknown_arguments_are_refused(self, tester):
        """An argument a forward does not use is refused by name, never dropped. (transformers 5.24 renamed the cache
        argument, and a forward that swallowed the new name decoded without its state.) Only a causal LM takes
        ``**kwargs``, its loss's (``CausalLMLossKwargs``), as transformers' do. What generate() prepares for a step
        goes through the same door."""
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            parameters = inspect.signature(model.forward).parameters.values()
            if any(parameter.kind == inspect.Parameter.VAR_KEYWORD for parameter in parameters):
                assert head_of(model_class).shifts_labels, f"{model_class.__name__}.forward takes **kwargs"
            batch = without_labels(collate(tester.get_examples(config), config.pad_token_id))
            with pytest.raises(TypeError, match="not_an_argument"):
                model(**batch, not_an_argument=1)
            if model.can_generate():
                with pytest.raises(TypeError, match="not_an_argument"):  # refused when prepared, or by forward
                    model(**model.prepare_inputs_for_generation(batch["input_ids"], use_cache=True,
                                                                attention_mask=batch["attention_mask"],
                                                                not_an_argument=1))

    def test_cache_under_either_name(self, tester):
        """The cache goes in as ``cache`` (transformers >= 5.24) or ``past_key_values`` (before) with the same
        result, and comes back under the installed version's name, which generate() reads; the old name warns as
        transformers' own models do (a FutureWarning), and only where it is old."""
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            if not model.can_generate():
                continue
            example = tester.get_examples(config)[0]
            if config.is_encoder_decoder:
                source, target = {"input_ids": example["input_ids"][None]}, example["decoder_input_ids"][None]
                prefix, step, whole = ({**source, "decoder_input_ids": ids}
                                       for ids in (target[:, :-1], target[:, -1:], target))
            else:
                ids = example["input_ids"][None]
                prefix, step, whole = ({"input_ids": part} for part in (ids[:, :-1], ids[:, -1:], ids))
            with torch.no_grad():
                first = model(**prefix, use_cache=True)
                assert CACHE_NAME in fields_of(first) and output_cache(first) is not None, model_class.__name__
                logits = []
                for name in ("cache", "past_key_values"):
                    cache = output_cache(model(**prefix, use_cache=True))
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        logits.append(model(**step, use_cache=True, **{name: cache}).logits)
                    deprecated = [warning for warning in caught if issubclass(warning.category, FutureWarning)
                                  and "`past_key_values` is deprecated" in str(warning.message)]
                    old_name = name == "past_key_values" and CACHE_NAME == "cache"
                    assert len(deprecated) == old_name, (name, [str(warning.message) for warning in caught])
                recomputed = model(**whole, use_cache=False).logits[:, -1:]
            torch.testing.assert_close(logits[0], logits[1], rtol=0, atol=0)
            torch.testing.assert_close(logits[0], recomputed, rtol=0, atol=ATOL)
            with pytest.raises(TypeError, match="not both"):
                model(**step, cache=output_cache(first), past_key_values=output_cache(first))

    def test_save_load(self, tester, tmp_path):
        """save_pretrained -> from_pretrained gives identical outputs from safetensors; ties survive, untied stay so."""
        for model_class in tester.all_model_classes:
            for tie in (True, False):
                config, model = self.build(tester, model_class, tie_word_embeddings=tie)
                if not tie and model.get_output_embeddings() is None:
                    continue  # nothing to tie
                batch = collate(tester.get_examples(config), config.pad_token_id)
                folder = tmp_path / f"{model_class.__name__}-tie{tie}"
                model.save_pretrained(folder)
                assert (folder / "model.safetensors").is_file() and not list(folder.glob("*.bin"))
                loaded = model_class.from_pretrained(folder).eval()
                assert_same_model(loaded, model, batch)
                if loaded.get_output_embeddings() is None:
                    continue
                # The input embeddings the output layer ties to: the decoder's for an encoder-decoder, whose
                # source may have a vocabulary (and embeddings) of its own.
                output_weight = loaded.get_output_embeddings().weight
                embeddings = [module.weight for module in loaded.modules() if isinstance(module, torch.nn.Embedding)]
                tied = [weight for weight in embeddings if weight.data_ptr() == output_weight.data_ptr()]
                assert bool(tied) == tie, f"{model_class.__name__} tie={tie}"
                if not tie:
                    assert not any(torch.equal(output_weight, weight) for weight in embeddings)

    def test_saved_code_is_the_familys_own(self, tester, tmp_path):
        """A saved folder ships its family's modeling and configuration files and the shared files they import,
        never another family's (a saved attention encoder-decoder carries no recurrent language model)."""
        for model_class in tester.all_model_classes:
            _, model = self.build(tester, model_class)
            model.save_pretrained(tmp_path / model_class.__name__)
            family = Path(inspect.getfile(model_class)).name.removeprefix("modeling_")
            shipped = {path.name for path in (tmp_path / model_class.__name__).glob("*.py")}
            assert {name for name in shipped if name.startswith(("modeling_", "configuration_"))} == {
                f"modeling_{family}", f"configuration_{family}", "modeling_utils.py", "configuration_utils.py"
            }, model_class.__name__

    def test_resize_token_embeddings(self, tester, tmp_path):
        """resize_token_embeddings: the old tokens keep their outputs, the new ids are read by every embedding of
        the vocabulary (an encoder-decoder's decoder too), and the resized model saves and loads back."""
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            batch = without_labels(collate(tester.get_examples(config), config.pad_token_id))
            with torch.no_grad():
                before = main_output(model(**batch))
            vocab_size = config.vocab_size + 3
            model.resize_token_embeddings(vocab_size)
            assert model.config.vocab_size == vocab_size
            if model.get_output_embeddings() is not None:
                assert model.get_output_embeddings().weight.shape[0] == vocab_size
            with torch.no_grad():
                torch.testing.assert_close(main_output(model(**batch))[..., : before.shape[-1]], before,
                                           rtol=0, atol=ATOL)
            # The second token of every row becomes the last id each side's vocabulary now has.
            newest = {"input_ids": model.get_input_embeddings().num_embeddings - 1, "decoder_input_ids": vocab_size - 1}
            for name in newest.keys() & batch.keys():
                batch[name] = batch[name].clone()
                batch[name][:, 1] = newest[name]
            folder = tmp_path / model_class.__name__
            model.save_pretrained(folder)
            assert_same_model(model_class.from_pretrained(folder).eval(), model, batch)

    def test_auto_classes(self, tester, tmp_path):
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            head = head_of(model_class)
            assert type(head.auto_class.from_config(config)) is model_class
            folder = tmp_path / model_class.__name__
            model.save_pretrained(folder)
            assert type(AutoConfig.from_pretrained(folder)) is type(config)
            loaded = head.auto_class.from_pretrained(folder).eval()
            assert type(loaded) is model_class, f"{head.auto_class.__name__} loaded {type(loaded).__name__}"
            assert_same_model(loaded, model, collate(tester.get_examples(config), config.pad_token_id))

    @pytest.mark.slow
    def test_trust_remote_code(self, tester, tmp_path):
        """Every head loads from its saved folder alone, in a process where ``import hf_seqmodels`` fails."""
        self.check_remote_code(tester, tmp_path, sys.executable)

    def remote_code_testers(self, tester) -> list:
        """The testers whose models one remote-code test (a fresh process, ~6 s) loads for this variant: a family
        whose variants all save the same code files checks one of them, or all of them in one process; empty where
        another variant's process covers this one."""
        return [tester]

    @pytest.mark.slow
    def test_trust_remote_code_under_the_other_transformers(self, tester, tmp_path):
        """A folder saved under this transformers loads, computes and generates the same under the other end of
        the range pyproject.toml allows (the cache changed its name between them), with only its saved code."""
        python = other_transformers_python()
        if python is None:
            pytest.skip("needs .venv and .venv-lowest with different transformers versions (as .ci/run leaves them)")
        self.check_remote_code(tester, tmp_path, python)

    def check_remote_code(self, tester, tmp_path, python: str) -> None:
        testers = self.remote_code_testers(tester)
        if not testers:
            pytest.skip("every variant saves the same code files: another variant's process checks them")
        cases = [self.remote_code_case(variant, model_class, tmp_path / f"{number}-{model_class.__name__}")
                 for number, variant in enumerate(testers) for model_class in variant.all_model_classes]
        torch.save(cases, tmp_path / "cases.pt")
        env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
               "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}
        result = subprocess.run(
            [python, "-c", REMOTE_CODE_SCRIPT, str(tmp_path / "cases.pt")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count("loaded ") == len(cases), result.stdout

    def remote_code_case(self, tester, model_class, folder: Path) -> dict:
        """``model_class``'s tiny model saved in ``folder``, with what the fresh process must get from it."""
        config, model = self.build(tester, model_class)
        model.save_pretrained(folder)
        batch = collate(tester.get_examples(config), config.pad_token_id)
        with torch.no_grad():
            expected = main_output(model(**batch))
        auto_class = head_of(model_class).auto_class.__name__
        case = {"auto_class": auto_class, "folder": str(folder), "inputs": batch, "expected": expected,
                "state_dict": model.state_dict()}
        if model.can_generate():
            side = "right" if config.is_encoder_decoder else "left"
            prompts = collate([{"input_ids": e["input_ids"]} for e in tester.get_examples(config)],
                              config.pad_token_id, side)
            generate_kwargs = {"max_new_tokens": 3, "num_beams": 2, "do_sample": False}
            with torch.no_grad():
                case.update(prompts=prompts, generate_kwargs=generate_kwargs,
                            generated=model.generate(**prompts, **generate_kwargs))
        return case

    def test_padding_invariance(self, tester):
        """A padded batch gives, at the real tokens, what each sequence gives alone (../shared/STYLE.md section 3)."""
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            examples = tester.get_examples(config)
            with torch.no_grad():
                alone = [main_output(model(**collate([example], config.pad_token_id)))[0] for example in examples]
                for side in tester.padding_sides:
                    batch = collate(examples, config.pad_token_id, side)
                    for i, got in enumerate(per_example(main_output(model(**batch)), batch)):
                        torch.testing.assert_close(
                            got, alone[i], rtol=0, atol=ATOL, msg=f"{model_class.__name__}, {side} padding, row {i}"
                        )

    def test_batch_composition(self, tester):
        """A sequence's result does not depend on its neighbours, its row or the batch's padded length."""
        for model_class in tester.all_model_classes:
            config, model = self.build(tester, model_class)
            examples = tester.get_examples(config)
            order = list(range(len(examples)))[::-2]  # every other example, reversed
            full = collate(examples, config.pad_token_id)
            part = collate([examples[i] for i in order], config.pad_token_id)
            with torch.no_grad():
                full_out = per_example(main_output(model(**full)), full)
                part_out = per_example(main_output(model(**part)), part)
            for row, i in enumerate(order):
                torch.testing.assert_close(part_out[row], full_out[i], rtol=0, atol=ATOL, msg=model_class.__name__)

    def test_ignored_labels(self, tester):
        """Positions labelled -100 do not count: the loss is the cross-entropy over the other positions."""
        for model_class in filter(takes_labels, tester.all_model_classes):
            head = head_of(model_class)
            if not head.per_token:
                continue
            config, model = self.build(tester, model_class)
            batch = collate(tester.get_examples(config), config.pad_token_id)
            labels = random_labels(model, batch)
            labels[:, 2] = -100  # also ignore one real position per row
            with torch.no_grad():
                outputs = model(**batch, labels=labels)
            logits = outputs.logits
            if head.shifts_labels:
                logits, labels = logits[:, :-1], labels[:, 1:]
            keep = labels != -100
            torch.testing.assert_close(outputs.loss, F.cross_entropy(logits[keep], labels[keep]), rtol=1e-6, atol=ATOL)

    def test_logits_to_keep(self, tester):
        """A language model computes the logits of the positions asked for: the last ``k`` (0: all) or those a 1-D
        tensor lists, equal to the full logits' there."""
        for model_class in tester.all_model_classes:
            if "logits_to_keep" not in inspect.signature(model_class.forward).parameters:
                continue
            config, model = self.build(tester, model_class)
            batch = without_labels(collate(tester.get_examples(config), config.pad_token_id))
            with torch.no_grad():
                full = model(**batch).logits
                for keep, positions in ((0, slice(None)), (1, slice(-1, None)), (2, slice(-2, None)),
                                        (torch.tensor([0, -1]), [0, full.shape[1] - 1])):
                    torch.testing.assert_close(model(**batch, logits_to_keep=keep).logits, full[:, positions],
                                               rtol=0, atol=ATOL, msg=f"{model_class.__name__}: {keep}")

    def test_shift_labels(self, tester):
        """A causal LM given ``shift_labels`` (targets aligned with the logits) scores position t against
        ``shift_labels[t]``, whatever ``labels`` say; without labels too."""
        for model_class in filter(takes_labels, tester.all_model_classes):
            if not head_of(model_class).shifts_labels:
                continue
            config, model = self.build(tester, model_class)
            batch = collate(tester.get_examples(config), config.pad_token_id)
            targets = random_labels(model, batch)
            keep = targets != -100
            with torch.no_grad():
                logits = model(**batch).logits
                expected = F.cross_entropy(logits[keep], targets[keep])
                for labels in (batch["input_ids"], None):
                    loss = model(**batch, labels=labels, shift_labels=targets).loss
                    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=ATOL, msg=model_class.__name__)

    def test_loss_decreases(self, tester):
        for model_class in filter(takes_labels, tester.all_model_classes):
            config, model = self.build(tester, model_class)
            batch = collate(tester.get_examples(config), config.pad_token_id)
            batch["labels"] = random_labels(model, batch)
            model.train()
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
            losses = []
            for _ in range(3):
                loss = model(**batch).loss
                losses.append(loss.item())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            assert losses[-1] < losses[0], f"{model_class.__name__}: {losses}"

    @pytest.mark.slow
    def test_trainer(self, tester, tmp_path):
        """transformers.Trainer trains a few steps, evaluates and predicts on a tiny in-memory data set."""
        for model_class in filter(takes_labels, tester.all_model_classes):
            config, model = self.build(tester, model_class)
            examples = tester.get_examples(config)
            batch = collate(examples, config.pad_token_id)
            labels = random_labels(model, batch)
            dataset = [
                {**example, "labels": row[row != -100] if row.dim() else row}
                for example, row in zip(examples, labels)
            ]
            args = TrainingArguments(
                output_dir=str(tmp_path / model_class.__name__), max_steps=3, per_device_train_batch_size=2,
                per_device_eval_batch_size=2, learning_rate=1e-2, report_to=[], use_cpu=True, save_strategy="no",
                logging_steps=1, disable_tqdm=True, dataloader_pin_memory=False,
            )
            trainer = Trainer(
                model=model, args=args, train_dataset=dataset, eval_dataset=dataset,
                data_collator=lambda features: collate(features, config.pad_token_id),
            )
            trainer.train()
            assert trainer.state.global_step == 3
            metrics = trainer.evaluate()
            assert torch.isfinite(torch.tensor(metrics["eval_loss"])), metrics
            predictions = trainer.predict(dataset)
            logits = predictions.predictions
            if isinstance(logits, tuple):  # an encoder-decoder also returns encoder_last_hidden_state
                logits = logits[0]
            assert logits.shape[0] == len(dataset), model_class.__name__
            assert logits.shape[-1] == getattr(config, head_of(model_class).logits_size)
