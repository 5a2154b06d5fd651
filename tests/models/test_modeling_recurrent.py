"""The recurrent family (Elman RNN, LSTM, GRU): the common model and generation suites, plus its own heads' checks."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from transformers import pipeline

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqModel,
    RecurrentConfig,
    RecurrentForCausalLM,
    RecurrentForSequenceClassification,
    RecurrentForTokenClassification,
    RecurrentModel,
    TransformerConfig,
)
from hf_seqmodels.models.cache import RecurrentCache
from hf_seqmodels.models.modeling_utils import CACHE_NAME, output_cache
from tests.test_generation_common import GenerationTesterMixin
from tests.test_modeling_common import (
    BOS,
    EOS,
    PAD,
    ModelTesterMixin,
    collate,
    main_output,
    make_model,
    make_tokenizer,
    random_labels,
)

CELL_TYPES = ("rnn", "lstm", "gru")
VOCAB_SIZE = 14
NUM_LABELS = 3


class RecurrentModelTester:
    """Tiny recurrent models: two layers, hidden size != embedding size (so a tied LM head needs its projection),
    bidirectional for every class but the causal LM."""

    all_model_classes = (
        RecurrentModel,
        RecurrentForCausalLM,
        RecurrentForSequenceClassification,
        RecurrentForTokenClassification,
    )
    generative_model_classes = (RecurrentForCausalLM,)
    cache_class = RecurrentCache
    cache_implementations = ("static",)
    padding_sides = ("right", "left")

    def __init__(self, cell_type: str):
        self.cell_type = cell_type

    def get_config(self, model_class=RecurrentForSequenceClassification, **changes) -> RecurrentConfig:
        fields = dict(
            vocab_size=VOCAB_SIZE, embedding_size=8, hidden_size=12, num_layers=2, cell_type=self.cell_type,
            bidirectional=model_class is not RecurrentForCausalLM, num_labels=NUM_LABELS,
            pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS,
        )
        return RecurrentConfig(**{**fields, **changes})

    def get_examples(self, config) -> list[dict]:
        generator = torch.Generator().manual_seed(1)
        return [{"input_ids": torch.randint(0, config.vocab_size, (length,), generator=generator)}
                for length in (5, 2, 7, 3)]

    def expected_num_hidden_states(self, config) -> dict[str, int]:
        return {"hidden_states": config.num_layers + 1}


@pytest.fixture(params=CELL_TYPES)
def tester(request):
    return RecurrentModelTester(request.param)


class TestRecurrentModel(ModelTesterMixin, GenerationTesterMixin):
    def remote_code_testers(self, tester) -> list:
        """Every cell type's models, in one process (their paths through the saved code differ: the LSTM's cell
        state)."""
        if tester.cell_type != CELL_TYPES[0]:
            return []
        return [RecurrentModelTester(cell_type) for cell_type in CELL_TYPES]


def classifier(cell_type: str, **changes) -> RecurrentForSequenceClassification:
    tester = RecurrentModelTester(cell_type)
    config = tester.get_config(RecurrentForSequenceClassification, **changes)
    return make_model(RecurrentForSequenceClassification, config)


def reference_pooling(model, hidden: torch.Tensor) -> torch.Tensor:
    """The pooled vector of one unpadded sequence's top-layer outputs ``(T, 2H)``, by each pooling's definition."""
    pooling, size = model.config.classifier_pooling, model.config.hidden_size
    if pooling == "mean":
        return hidden.mean(0)
    if pooling == "max":
        return hidden.max(0).values
    if pooling == "last":  # final state of each direction: forward after the last token, backward after the first
        return torch.cat([hidden[-1, :size], hidden[0, size:]])
    weights = model.pooler.score(hidden).squeeze(-1).softmax(0)
    return (weights.unsqueeze(-1) * hidden).sum(0)


@pytest.mark.parametrize("pooling", ["last", "mean", "max", "attention"])
@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_sequence_classification_pooling(cell_type, pooling):
    """Logits of a padded batch (either side) = the classifier on each sequence's pooled outputs, computed alone."""
    model = classifier(cell_type, classifier_pooling=pooling)
    examples = RecurrentModelTester(cell_type).get_examples(model.config)
    with torch.no_grad():
        expected = [
            model.classifier(reference_pooling(model, model.model(example["input_ids"][None]).last_hidden_state[0]))
            for example in examples
        ]
        for side in ("right", "left"):
            logits = model(**collate(examples, PAD, side)).logits
            for row, reference in zip(logits, expected):
                torch.testing.assert_close(row, reference, rtol=0, atol=1e-5, msg=side)


def single_label(generator):
    return torch.randint(0, NUM_LABELS, (4,), generator=generator)


def multi_hot(generator):
    return torch.randint(0, 2, (4, NUM_LABELS), generator=generator).float()


PROBLEMS = {  # name: (problem_type given to the config, num_labels, labels, torch's loss on (logits, labels))
    "single-label": ("single_label_classification", NUM_LABELS, single_label, F.cross_entropy),
    "multi-label": ("multi_label_classification", NUM_LABELS, multi_hot, F.binary_cross_entropy_with_logits),
    "regression": ("regression", 1, lambda g: torch.randn(4, generator=g),
                   lambda logits, labels: F.mse_loss(logits.squeeze(-1), labels)),
    "regression-multi": ("regression", NUM_LABELS, lambda g: torch.randn(4, NUM_LABELS, generator=g), F.mse_loss),
}


@pytest.mark.parametrize(
    "problem,infer",
    # Float labels with num_labels > 1 are inferred as multi-label (as in transformers): regression-multi is set only.
    [(problem, infer) for problem in PROBLEMS for infer in (False, True) if not (infer and problem == "regression-multi")],
)
def test_sequence_classification_losses(problem, infer):
    """The loss is torch's loss on the returned logits; an unset problem_type is inferred as BERT's head does."""
    problem_type, num_labels, make_labels, loss_function = PROBLEMS[problem]
    model = classifier("gru", num_labels=num_labels, problem_type=None if infer else problem_type)
    batch = collate(RecurrentModelTester("gru").get_examples(model.config), PAD)
    labels = make_labels(torch.Generator().manual_seed(0))
    with torch.no_grad():
        outputs = model(**batch, labels=labels)
    torch.testing.assert_close(outputs.loss, loss_function(outputs.logits, labels), rtol=1e-6, atol=1e-6)
    assert model.config.problem_type == problem_type


def test_text_classification_pipeline():
    model = classifier("lstm")
    tokenizer = make_tokenizer(VOCAB_SIZE)
    text = "the big dog ran"
    with torch.no_grad():
        probs = model(**tokenizer(text, return_tensors="pt")).logits.softmax(-1)[0]
    result = pipeline("text-classification", model=model, tokenizer=tokenizer)(text)[0]
    assert result["label"] == model.config.id2label[int(probs.argmax())]
    assert result["score"] == pytest.approx(float(probs.max()), abs=1e-6)


def test_token_classification_pipeline():
    config = RecurrentModelTester("gru").get_config(RecurrentForTokenClassification)
    model = make_model(RecurrentForTokenClassification, config)
    tokenizer = make_tokenizer(VOCAB_SIZE)
    words = ["the", "cat", "sat", "on", "a", "mat"]
    with torch.no_grad():
        probs = model(**tokenizer(" ".join(words), return_tensors="pt")).logits.softmax(-1)[0]
    tags = pipeline("token-classification", model=model, tokenizer=tokenizer, ignore_labels=[])(" ".join(words))
    assert [tag["word"] for tag in tags] == words
    assert [tag["entity"] for tag in tags] == [config.id2label[int(i)] for i in probs.argmax(-1)]
    assert [tag["score"] for tag in tags] == pytest.approx(probs.max(-1).values.tolist(), abs=1e-6)


@pytest.mark.parametrize(
    "changes,match",
    [
        ({"cell_type": "transformer"}, "`cell_type`='transformer' is not supported; choose one of 'rnn', 'lstm'"),
        ({"nonlinearity": "sigmoid"}, "`nonlinearity`='sigmoid'"),
        ({"classifier_pooling": "sum"}, "`classifier_pooling`='sum'.*'last', 'mean', 'max', 'attention'"),
        ({"dropout": 1.0}, r"`dropout`=1.0 must be in \[0, 1\)"),
        ({"embedding_dropout": -0.1}, r"`embedding_dropout`=-0.1 must be in \[0, 1\)"),
        ({"output_dropout": 1.5}, r"`output_dropout`=1.5 must be in \[0, 1\)"),
        ({"vocab_size": 0}, "`vocab_size`=0 must be a positive integer"),
        ({"embedding_size": -4}, "`embedding_size`=-4 must be a positive integer"),
        ({"hidden_size": 0}, "`hidden_size`=0 must be a positive integer"),
        ({"num_layers": 0}, "`num_layers`=0 must be a positive integer"),
        ({"num_layers": 1.5}, "`num_layers`=1.5 must be a positive integer"),
        ({"hidden_size": True}, "`hidden_size`=True must be a positive integer"),
        ({"initializer_range": -0.02}, "`initializer_range`=-0.02 must be a positive number"),
        ({"pad_token_id": VOCAB_SIZE}, rf"`pad_token_id`={VOCAB_SIZE} is outside the vocabulary \(0..{VOCAB_SIZE - 1}\)"),
        ({"bos_token_id": -1}, "`bos_token_id`=-1 is outside the vocabulary"),
        ({"eos_token_id": 99}, "`eos_token_id`=99 is outside the vocabulary"),
        ({"eos_token_id": [EOS, 50]}, rf"`eos_token_id`=\[{EOS}, 50\] holds 50, outside the vocabulary"),
        ({"spelling_features": -1}, "`spelling_features`=-1 must be a non-negative integer"),
        ({"spelling_features": True}, "`spelling_features`=True must be a non-negative integer"),
        ({"spelling_features": 4, "spelling_kernel_size": 2}, "`spelling_kernel_size`=2 must be odd"),
    ],
)
def test_bad_config(changes, match):
    with pytest.raises(ValueError, match=match):
        RecurrentModelTester("lstm").get_config(**changes)


@pytest.mark.parametrize(
    "config_class,changes,match",
    [
        (AttentionSeq2SeqConfig, {"initializer_range": -0.1}, "`initializer_range`=-0.1 must be a positive number"),
        (AttentionSeq2SeqConfig, {"hidden_size": True}, "`hidden_size`=True must be a positive integer"),
        (AttentionSeq2SeqConfig, {"eos_token_id": [2, 50]}, "holds 50, outside the target vocabulary"),
        (TransformerConfig, {"d_model": True, "num_heads": 1}, "`d_model`=True must be a positive integer"),
        (TransformerConfig, {"eos_token_id": [2, 50]}, "holds 50, outside the vocabulary"),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else None,
)
def test_shared_config_checks_in_other_families(config_class, changes, match):
    """configuration_recurrent's checks guard the other families' configs too."""
    with pytest.raises(ValueError, match=match):
        config_class(vocab_size=VOCAB_SIZE, **changes)


def test_spelling_features_feed_the_first_layer_and_are_saved(tmp_path):
    config = RecurrentModelTester("lstm").get_config(RecurrentForTokenClassification, spelling_features=5)
    model = make_model(RecurrentForTokenClassification, config)
    tokens = [f"tok{i}" if i % 3 else f"Tok-{i}" for i in range(VOCAB_SIZE)]
    model.model.set_token_spellings(tokens)
    input_ids = torch.tensor([[4, 5, 6, 7], [8, 9, 10, PAD]])
    mask = (input_ids != PAD).long()
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=mask).logits
        # The same inputs as embeddings: each token's embedding, then its spelling features.
        embeds = torch.cat([model.model.embed_tokens(input_ids), model.model.spelling(input_ids)], dim=-1)
        torch.testing.assert_close(model(inputs_embeds=embeds, attention_mask=mask).logits, logits)
        model.model.set_token_spellings(list(reversed(tokens)))  # the spellings change the output
        assert not torch.allclose(model(input_ids=input_ids, attention_mask=mask).logits, logits)
    model.model.set_token_spellings(tokens)
    model.save_pretrained(tmp_path)
    reloaded = RecurrentForTokenClassification.from_pretrained(tmp_path).eval()
    assert torch.equal(reloaded.model.spelling.spellings, model.model.spelling.spellings)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(input_ids=input_ids, attention_mask=mask).logits, logits)
    with pytest.raises(ValueError, match=r"`inputs_embeds` must have shape \(batch, length, 13\)"):
        model(inputs_embeds=embeds[..., :8])
    with pytest.raises(ValueError, match="no spelling features: set `spelling_features`"):
        make_model(RecurrentModel, RecurrentModelTester("gru").get_config()).set_token_spellings(tokens)


def test_resize_token_embeddings_resizes_the_spellings():
    config = RecurrentModelTester("gru").get_config(RecurrentForTokenClassification, spelling_features=5)
    model = make_model(RecurrentForTokenClassification, config)
    tokens = [f"tok{i}" for i in range(VOCAB_SIZE)]
    model.model.set_token_spellings(tokens)
    old = model.model.spelling.spellings.clone()
    model.resize_token_embeddings(VOCAB_SIZE + 3)
    spellings = model.model.spelling.spellings
    assert spellings.shape == (VOCAB_SIZE + 3, old.shape[1])
    assert torch.equal(spellings[:VOCAB_SIZE], old) and not spellings[VOCAB_SIZE:].any()
    with torch.no_grad():  # a new token has an embedding and no spelling yet
        assert model(input_ids=torch.tensor([[4, VOCAB_SIZE + 2]])).logits.isfinite().all()
    model.model.set_token_spellings(tokens + ["new0", "new1", "new2"])
    model.resize_token_embeddings(VOCAB_SIZE - 2)
    assert torch.equal(model.model.spelling.spellings, old[: VOCAB_SIZE - 2])


def test_bidirectional_causal_lm_is_rejected():
    config = RecurrentModelTester("gru").get_config(RecurrentForSequenceClassification)  # bidirectional
    with pytest.raises(ValueError, match="causal language model reads left to right: set `bidirectional=False`"):
        RecurrentForCausalLM(config)


BAD_INPUTS = {  # name: (changes to a valid right-padded batch of 4 sequences, expected message)
    "id outside vocab": (lambda b: {"input_ids": b["input_ids"].masked_fill(b["input_ids"] == b["input_ids"].max(),
                                                                            VOCAB_SIZE)},
                         rf"`input_ids` holds token ids in \[\d+, {VOCAB_SIZE}\] but the model's vocabulary has"),
    "negative id": (lambda b: {"input_ids": b["input_ids"] - b["input_ids"].max()}, r"token ids in \[-\d+, 0\]"),
    "float ids": (lambda b: {"input_ids": b["input_ids"].float()}, "must hold integer token ids"),
    "mask too short": (lambda b: {"attention_mask": b["attention_mask"][:, :-1]}, "`attention_mask` has shape"),
    "mask too long": (lambda b: {"attention_mask": F.pad(b["attention_mask"], (0, 2))}, "`attention_mask` has shape"),
    "mask batch": (lambda b: {"attention_mask": b["attention_mask"][:-1]}, "`attention_mask` has shape"),
    "all-padding row": (lambda b: {"attention_mask": b["attention_mask"].index_fill(0, torch.tensor([1]), 0)},
                        r"Rows \[1\] of `attention_mask` are all padding"),
    "both ids and embeds": (lambda b: {"inputs_embeds": torch.zeros(*b["input_ids"].shape, 8)},
                            "Pass exactly one of `input_ids` and `inputs_embeds`"),
    "neither ids nor embeds": (lambda b: {"input_ids": None}, "Pass exactly one of `input_ids` and `inputs_embeds`"),
    "1-D ids": (lambda b: {"input_ids": b["input_ids"][0], "attention_mask": None}, "must have shape"),
    "embeds of the wrong size": (lambda b: {"input_ids": None, "inputs_embeds": torch.zeros(4, 3, 5)},
                                 r"`inputs_embeds` must have shape \(batch, length, 8\)"),
    "embeds of length 0": (lambda b: {"input_ids": None, "inputs_embeds": torch.zeros(4, 0, 8), "attention_mask": None},
                           r"`inputs_embeds` is empty \(shape \(4, 0, 8\)\): pass at least one token per sequence"),
    "embeds of no sequence": (lambda b: {"input_ids": None, "inputs_embeds": torch.zeros(0, 3, 8),
                                         "attention_mask": None}, r"`inputs_embeds` is empty \(shape \(0, 3, 8\)\)"),
}


@pytest.mark.parametrize("bad", list(BAD_INPUTS))
@pytest.mark.parametrize("model_class", RecurrentModelTester.all_model_classes, ids=lambda cls: cls.__name__)
def test_bad_inputs(model_class, bad):
    tester = RecurrentModelTester("gru")
    config = tester.get_config(model_class)
    model = make_model(model_class, config)
    batch = collate(tester.get_examples(config), PAD)
    change, match = BAD_INPUTS[bad]
    with pytest.raises(ValueError, match=match):
        model(**{**batch, **change(batch)})


def language_model(**changes) -> RecurrentForCausalLM:
    """Two LSTM layers unless changed."""
    return make_model(RecurrentForCausalLM, RecurrentModelTester("lstm").get_config(RecurrentForCausalLM, **changes))


def prefix_cache(model, batch: int = 2):
    """The cache ``model`` returns after a prefix of 3 tokens for ``batch`` sequences."""
    with torch.no_grad():
        return output_cache(model(torch.randint(4, VOCAB_SIZE, (batch, 3)), use_cache=True))


def attention_decoder_cache():
    """The cache of an attention encoder-decoder whose decoder has the language model's layers and sizes."""
    config = AttentionSeq2SeqConfig(vocab_size=VOCAB_SIZE, embedding_size=8, hidden_size=12, cell_type="lstm",
                                    decoder_layers=2)
    with torch.no_grad():
        return output_cache(make_model(AttentionSeq2SeqModel, config)(
            torch.randint(4, VOCAB_SIZE, (2, 5)), decoder_input_ids=torch.randint(4, VOCAB_SIZE, (2, 3)), use_cache=True
        ))


FOREIGN_CACHES = {  # name: (a cache the default language_model() cannot continue 2 sequences from, expected message)
    "another batch size": (lambda: prefix_cache(language_model(), batch=3),
                           r"holds states of shapes \[\(\(1, 3, 12\), \(1, 3, 12\)\), .*"
                           r"continues from \(h, c\) per layer, each of shape \(1, batch=2, hidden_size=12\)"),
    "another cell type": (lambda: prefix_cache(language_model(cell_type="gru")),
                          r"holds states of shapes \[\(\(1, 2, 12\),\), .*for its cell_type='lstm' and num_layers=2"),
    "another layer count": (lambda: prefix_cache(language_model(num_layers=3)),
                            r"holds states of shapes \[(\(\(1, 2, 12\), \(1, 2, 12\)\), ){2}"
                            r"\(\(1, 2, 12\), \(1, 2, 12\)\)\], but .*"
                            r"for its cell_type='lstm' and num_layers=2"),
    "another hidden size": (lambda: prefix_cache(language_model(hidden_size=6)),
                            r"holds states of shapes \[\(\(1, 2, 6\), .*hidden_size=12\), for its .*: pass the cache"),
    "an attention decoder's": (attention_decoder_cache, "holds the decoder state of an attention encoder-decoder"),
}


@pytest.mark.parametrize("foreign", list(FOREIGN_CACHES))
def test_foreign_cache_is_rejected(foreign):
    make_cache, match = FOREIGN_CACHES[foreign]
    with pytest.raises(ValueError, match=f"`past_key_values` {match}"):
        language_model()(torch.tensor([[4], [5]]), cache=make_cache())


def test_bidirectional_model_does_not_continue_a_cache():
    model = make_model(RecurrentModel, RecurrentModelTester("gru").get_config(RecurrentModel))
    with pytest.raises(ValueError, match="`past_key_values` cannot be continued by a bidirectional model"):
        model(torch.tensor([[4], [5]]), cache=prefix_cache(model))


LENGTH = 7  # of the examples' padded batch: (4, 7)
BAD_LABELS = {  # head: [(labels, expected message)]
    RecurrentForCausalLM: [
        (torch.zeros(4, LENGTH - 1, dtype=torch.long), r"`labels` has shape \(4, 6\), expected \(4, 7\)"),
        (torch.full((4, LENGTH), VOCAB_SIZE), rf"`labels` holds token ids in \[{VOCAB_SIZE}, {VOCAB_SIZE}\]"),
    ],
    RecurrentForTokenClassification: [
        (torch.zeros(4, LENGTH + 1, dtype=torch.long), r"`labels` has shape \(4, 8\), expected \(4, 7\)"),
        (torch.full((4, LENGTH), NUM_LABELS), rf"`labels` hold values in \[3, 3\] but the head has {NUM_LABELS} labels"),
        (torch.full((4, LENGTH), -1), r"`labels` hold values in \[-1, -1\]"),
    ],
    RecurrentForSequenceClassification: [
        (torch.zeros(4, 2, dtype=torch.long), r"`labels` has shape \(4, 2\), expected \(4,\)"),
        (torch.zeros(3, dtype=torch.long), r"`labels` has shape \(3,\), expected \(4,\)"),
        (torch.full((4,), NUM_LABELS), rf"`labels` hold values in \[3, 3\] but the head has {NUM_LABELS} labels"),
        (torch.zeros(4, 2), r"`labels` has shape \(4, 2\), expected \(4, 3\)"),  # multi-hot of the wrong width
    ],
}


@pytest.mark.parametrize(
    "model_class,labels,match",
    [(cls, labels, match) for cls, cases in BAD_LABELS.items() for labels, match in cases],
    ids=lambda value: value.__name__ if isinstance(value, type) else None,
)
def test_bad_labels(model_class, labels, match):
    tester = RecurrentModelTester("gru")
    config = tester.get_config(model_class)
    model = make_model(model_class, config)
    batch = collate(tester.get_examples(config), PAD)
    assert batch["input_ids"].shape == (4, LENGTH)
    with pytest.raises(ValueError, match=match):
        model(**batch, labels=labels)


def training_step(model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss of ``batch`` and every parameter's gradient."""
    model.zero_grad()
    loss = model(**batch).loss
    loss.backward()
    return loss.detach(), {name: param.grad.clone() for name, param in model.named_parameters()}


@pytest.mark.parametrize("use_reentrant", [False, True], ids=["non-reentrant", "reentrant"])
@pytest.mark.parametrize("model_class", [RecurrentForCausalLM, RecurrentForSequenceClassification],
                         ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_gradient_checkpointing_gives_the_same_loss_and_gradients(cell_type, model_class, use_reentrant):
    """With checkpointing each layer runs twice per training step (forward, and again in the backward pass), and the
    loss and every gradient equal those of the run that keeps the activations (dropout 0, a padded batch; the
    classifier reads the top layer's final state, which the checkpoint returns beside the outputs)."""
    tester = RecurrentModelTester(cell_type)
    config = tester.get_config(model_class)
    model = make_model(model_class, config)
    batch = collate(tester.get_examples(config), PAD)
    batch["labels"] = random_labels(model, batch)
    model.train()
    calls = []
    for layer in model.model.rnn.layers:  # the torch kernel inside each checkpointed layer
        layer.rnn.register_forward_hook(lambda module, args, output: calls.append(module))

    expected_loss, expected_grads = training_step(model, batch)
    assert len(calls) == config.num_layers
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": use_reentrant})
    calls.clear()
    loss, grads = training_step(model, batch)
    assert len(calls) == 2 * config.num_layers
    # Reentrant checkpointing runs the forward without autograd, where torch may take another LSTM kernel on
    # some CPUs (oneDNN's inference one): the loss then differs in the last bits.
    torch.testing.assert_close(loss, expected_loss, rtol=1e-6, atol=0)
    torch.testing.assert_close(grads, expected_grads, rtol=1e-6, atol=1e-7)

    calls.clear()
    with torch.no_grad():  # nothing to recompute without gradients
        model(**batch)
    assert len(calls) == config.num_layers


HALF_TOLERANCE = {dtype: 8 * torch.finfo(dtype).eps for dtype in (torch.bfloat16, torch.float16)}


def assert_close_to_float32(found: torch.Tensor, expected: torch.Tensor, tolerance: float) -> None:
    torch.testing.assert_close(found.float(), expected, rtol=0, atol=tolerance * expected.abs().max().item())


@pytest.mark.parametrize("dtype", list(HALF_TOLERANCE), ids=str)
@pytest.mark.parametrize("model_class", RecurrentModelTester.all_model_classes, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_half_precision_from_pretrained(cell_type, model_class, dtype, tmp_path):
    """`from_pretrained(dtype=...)` of a float32 folder, saved again and loaded with `dtype="auto"`, runs in that
    dtype, and its outputs on a padded batch are those of the float32 model within the dtype's precision."""
    tester = RecurrentModelTester(cell_type)
    config = tester.get_config(model_class)
    model = make_model(model_class, config)
    model.save_pretrained(tmp_path / "float32")
    model_class.from_pretrained(tmp_path / "float32", dtype=dtype).save_pretrained(tmp_path / "half")
    half = model_class.from_pretrained(tmp_path / "half", dtype="auto").eval()
    assert half.dtype == dtype
    batch = collate(tester.get_examples(config), PAD)
    with torch.no_grad():
        expected, found = main_output(model(**batch)), main_output(half(**batch))
    assert found.dtype == dtype
    assert_close_to_float32(found, expected, HALF_TOLERANCE[dtype])


def generated_logits(model, batch: dict, new_tokens: int = 4):
    """Greedy ``generate()`` on ``batch`` (left-padded): the sequences and the logits of each new token."""
    out = model.generate(**batch, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                         output_logits=True, return_dict_in_generate=True)
    return out.sequences, torch.stack(out.logits, dim=1)


def recomputed_logits(model, batch: dict, sequences: torch.Tensor, new_tokens: int = 4) -> torch.Tensor:
    """``model``'s logits for the last ``new_tokens`` of ``sequences`` (the prompts of ``batch`` continued), run
    without a cache over the whole sequences."""
    mask = torch.cat([batch["attention_mask"], torch.ones(len(sequences), new_tokens, dtype=torch.long)], dim=1)
    with torch.no_grad():
        return model(sequences, attention_mask=mask, use_cache=False).logits[:, -new_tokens - 1:-1]


@pytest.mark.parametrize("dtype", list(HALF_TOLERANCE), ids=str)
@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_half_precision_generate(cell_type, dtype):
    """A half-precision language model generates (cached decoding steps, left padding), and the logits it chose
    from are the float32 model's on the same sequences within the dtype's precision."""
    tester = RecurrentModelTester(cell_type)
    config = tester.get_config(RecurrentForCausalLM)
    model = make_model(RecurrentForCausalLM, config)
    half = make_model(RecurrentForCausalLM, config).to(dtype)
    assert half.dtype == dtype
    batch = collate(tester.get_examples(config), PAD, padding_side="left")
    sequences, logits = generated_logits(half, batch)
    assert_close_to_float32(logits, recomputed_logits(model, batch, sequences), HALF_TOLERANCE[dtype])


INT8_TOLERANCE = 5e-2  # relative to the float outputs' largest value: int8 weights with per-tensor scales


@pytest.mark.filterwarnings("ignore:.*quantiz:DeprecationWarning", "ignore:.*quantiz:UserWarning")
@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_dynamic_int8_quantization_generates(cell_type):
    """`quantize_dynamic` replaces the LSTM/GRU kernels (not the Elman RNN's, which it does not know) and the linear
    layers by int8 ones; the quantized model generates with its cache, and the logits it chose from are the float
    model's on the same sequences within int8 precision (beams too: the cache follows them)."""
    tester = RecurrentModelTester(cell_type)
    config = tester.get_config(RecurrentForCausalLM)
    model = make_model(RecurrentForCausalLM, config)
    quantized = torch.ao.quantization.quantize_dynamic(model, {nn.LSTM, nn.GRU, nn.Linear}, dtype=torch.qint8)
    kernels = [layer.rnn for layer in quantized.model.rnn.layers]
    assert all(isinstance(kernel, nn.RNNBase) == (cell_type == "rnn") for kernel in kernels)
    batch = collate(tester.get_examples(config), PAD, padding_side="left")
    sequences, logits = generated_logits(quantized, batch)
    assert_close_to_float32(logits, recomputed_logits(model, batch, sequences), INT8_TOLERANCE)
    beams = quantized.generate(**batch, max_new_tokens=3, do_sample=False, num_beams=3)
    torch.testing.assert_close(beams[:, :-3], batch["input_ids"])


@pytest.mark.filterwarnings("ignore:.*quantiz:DeprecationWarning", "ignore:.*quantiz:UserWarning")
@pytest.mark.parametrize("model_class", RecurrentModelTester.all_model_classes, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_dynamic_int8_quantization_of_every_head(cell_type, model_class):
    """Every head, quantized, reads a padded batch (bidirectional and packed where the float model is) with the
    float model's outputs within int8 precision."""
    tester = RecurrentModelTester(cell_type)
    config = tester.get_config(model_class)
    model = make_model(model_class, config)
    quantized = torch.ao.quantization.quantize_dynamic(model, {nn.LSTM, nn.GRU, nn.Linear}, dtype=torch.qint8)
    batch = collate(tester.get_examples(config), PAD)
    with torch.no_grad():
        assert_close_to_float32(main_output(quantized(**batch)), main_output(model(**batch)), INT8_TOLERANCE)


def test_causal_lm_takes_position_ids_as_transformers_causal_lms_and_reads_them_not():
    """Code written for any transformers causal LM passes `position_ids`; a recurrent layer reads in order."""
    tester = RecurrentModelTester("lstm")
    config = tester.get_config(RecurrentForCausalLM)
    model = make_model(RecurrentForCausalLM, config)
    batch = collate(tester.get_examples(config), PAD)
    shuffled = torch.randperm(batch["input_ids"].shape[1]).expand_as(batch["input_ids"])
    with torch.no_grad():
        torch.testing.assert_close(model(**batch, position_ids=shuffled).logits, model(**batch).logits, rtol=0, atol=0)


@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_generate_continues_from_the_cache_it_returned(cell_type):
    """generate() given the sequences and the cache of an earlier generate() reads only the positions the cache has
    not seen (it asks the cache's layers for their length) and continues as one longer generate() (left padding)."""
    tester = RecurrentModelTester(cell_type)
    config = tester.get_config(RecurrentForCausalLM)
    model = make_model(RecurrentForCausalLM, config)
    batch = collate(tester.get_examples(config), PAD, padding_side="left")
    greedy = {"do_sample": False, "max_new_tokens": 3, "min_new_tokens": 3}
    whole = model.generate(**batch, **{**greedy, "max_new_tokens": 6, "min_new_tokens": 6})
    first = model.generate(**batch, **greedy, return_dict_in_generate=True)
    cache = getattr(first, CACHE_NAME)
    assert len(cache) == config.num_layers and cache.get_seq_length() == first.sequences.shape[1] - 1
    mask = torch.cat([batch["attention_mask"], torch.ones(len(first.sequences), 3, dtype=torch.long)], dim=1)
    second = model.generate(first.sequences, attention_mask=mask, **{CACHE_NAME: cache}, **greedy)
    torch.testing.assert_close(second, whole, rtol=0, atol=0)


# --- torch.export and torch.compile -----------------------------------------------------------------------------


def traceable_batch(model_class, config, padded: bool) -> dict:
    """A batch with right padding and (its last row) padding on both sides; with ``padded=False``, none."""
    batch = collate(RecurrentModelTester(config.cell_type).get_examples(config), PAD)
    batch = {name: torch.cat([t[:-1], t[-1:].roll(3, dims=1)]) for name, t in batch.items()}  # row 3: 3 of 7
    if not padded:
        batch = {"input_ids": batch["input_ids"], "attention_mask": torch.ones_like(batch["attention_mask"])}
    if model_class in (RecurrentModel, RecurrentForCausalLM):
        batch["use_cache"] = False  # a cache object is no graph output
    return batch


@pytest.mark.parametrize("model_class", RecurrentModelTester.all_model_classes, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("cell_type,padded", [(cell, True) for cell in CELL_TYPES] + [("lstm", False)],
                         ids=[*CELL_TYPES, "lstm-unpadded"])
def test_exported_program_gives_the_eager_outputs(cell_type, padded, model_class):
    """torch.export of each head's forward: the value checks step aside and the layers run without packing while
    tracing, and the exported program computes what the eager model (which packs) does, final states included."""
    config = RecurrentModelTester(cell_type).get_config(model_class)
    model = make_model(model_class, config)
    batch = traceable_batch(model_class, config, padded)
    program = torch.export.export(model, (), kwargs=batch, strict=False)
    with torch.no_grad():
        expected, got = model(**batch), program.module()(**batch)
    torch.testing.assert_close(main_output(got), main_output(expected), rtol=0, atol=1e-5)
    if model_class is RecurrentModel:
        torch.testing.assert_close(got.final_state, expected.final_state, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_strict_export_gives_the_eager_outputs():
    """torch.export in strict mode (Dynamo traces the Python code) of a bidirectional LSTM on a padded batch."""
    config = RecurrentModelTester("lstm").get_config(RecurrentModel)
    model = make_model(RecurrentModel, config)
    batch = traceable_batch(RecurrentModel, config, padded=True)
    program = torch.export.export(model, (), kwargs=batch, strict=True)
    with torch.no_grad():
        expected, got = model(**batch), program.module()(**batch)
    torch.testing.assert_close((got.last_hidden_state, got.final_state),
                               (expected.last_hidden_state, expected.final_state), rtol=0, atol=1e-5)


def test_exported_program_takes_any_batch_size():
    """torch.export with a dynamic batch dimension: one program for every batch size (the length stays fixed:
    torch's export decomposes the recurrent kernels into one step per position)."""
    config = RecurrentModelTester("lstm").get_config(RecurrentForTokenClassification)
    model = make_model(RecurrentForTokenClassification, config)
    batch = traceable_batch(RecurrentForTokenClassification, config, padded=True)
    rows = torch.export.Dim("rows", min=1, max=64)
    program = torch.export.export(model, (), kwargs=batch, strict=False,
                                  dynamic_shapes={name: {0: rows} for name in batch})
    for size in (1, 3, 6):
        smaller = {name: t.repeat(2, 1)[:size] for name, t in batch.items()}
        with torch.no_grad():
            torch.testing.assert_close(program.module()(**smaller).logits, model(**smaller).logits, rtol=0, atol=1e-5)


@pytest.mark.parametrize("model_class", RecurrentModelTester.all_model_classes, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_compiled_forward_is_one_graph_with_the_eager_outputs(cell_type, model_class):
    """torch.compile(fullgraph=True) under Dynamo's allow_rnn flag, without which it refuses to hold an
    nn.LSTM/GRU/RNN module at all (see RecurrentModel)."""
    config = RecurrentModelTester(cell_type).get_config(model_class)
    model = make_model(model_class, config)
    assert not model._can_compile_fullgraph  # generate() must not compile forward without the flag
    batch = traceable_batch(model_class, config, padded=True)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend="eager")  # fullgraph: any graph break raises
    with torch.no_grad(), torch._dynamo.config.patch(allow_rnn=True):
        expected, got = main_output(model(**batch)), main_output(compiled(**batch))
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


def test_value_checks_still_run_in_eager_mode():
    model = make_model(RecurrentForCausalLM, RecurrentModelTester("lstm").get_config(RecurrentForCausalLM))
    with pytest.raises(ValueError, match="vocabulary"):
        model(input_ids=torch.tensor([[4, VOCAB_SIZE]]))
    with pytest.raises(ValueError, match="must hold 1 for a token and 0 for padding"):
        model(input_ids=torch.tensor([[4, 5]]), attention_mask=torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="all padding"):
        model(input_ids=torch.tensor([[4, 5], [4, 5]]), attention_mask=torch.tensor([[1, 1], [0, 0]]))


ADAPTIVE_SOFTMAX = {"adaptive_softmax_cutoffs": [6, 12], "adaptive_softmax_div_value": 2.0,
                    "tie_word_embeddings": False}


@pytest.mark.parametrize("changes", [{}, ADAPTIVE_SOFTMAX], ids=["full_softmax", "adaptive_softmax"])
@pytest.mark.parametrize("cell_type", CELL_TYPES)
def test_decoding_step_continues_a_cache_as_forward_does(cell_type, changes):
    """The decoding loop's step (``decoding_step`` on what ``decoding_step_inputs`` prepares) after left-padded
    prompts: the logits forward gives for the whole sequences, position after position, and the cache's length; no
    step without a cache."""
    tester = RecurrentModelTester(cell_type)
    config = tester.get_config(RecurrentForCausalLM, **changes)
    model = make_model(RecurrentForCausalLM, config)
    batch = collate(tester.get_examples(config), PAD, padding_side="left")
    continuation = torch.randint(3, config.vocab_size, (len(batch["input_ids"]), 3),
                                 generator=torch.Generator().manual_seed(2))
    whole = torch.cat([batch["input_ids"], continuation], dim=1)
    mask = torch.cat([batch["attention_mask"], torch.ones_like(continuation)], dim=1)
    with torch.no_grad():
        full = model(input_ids=whole, attention_mask=mask).logits[:, -continuation.shape[1]:]
        first = model(**batch, use_cache=True)
        step_inputs = model.decoding_step_inputs({"use_cache": True, CACHE_NAME: output_cache(first),
                                                  "attention_mask": mask})
        logits = [model.decoding_step(continuation[:, t : t + 1], **step_inputs)
                  for t in range(continuation.shape[1])]
    torch.testing.assert_close(torch.stack(logits, dim=1), full, rtol=0, atol=1e-5)
    assert step_inputs["cache"].get_seq_length() == whole.shape[1]
    assert model.decoding_step_inputs({"use_cache": False, CACHE_NAME: output_cache(first)}) is None
