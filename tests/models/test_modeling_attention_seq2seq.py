"""The attention encoder-decoder: its decoder against the papers' equations written out here with torch cells,
the shared model and generation checks for every attention type, and what is specific to this family
(cross-attention outputs, the encoder run once, clear errors, Seq2SeqTrainer)."""

import copy

import pytest
import torch
from torch import nn
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments
from transformers.modeling_outputs import BaseModelOutput
from transformers.modeling_layers import GradientCheckpointingLayer

from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration, AttentionSeq2SeqModel
from hf_seqmodels.models.cache import RecurrentCache
from hf_seqmodels.models.modeling_utils import CACHE_NAME, output_cache
from tests.test_generation_common import GenerationTesterMixin
from tests.test_modeling_common import BOS, EOS, PAD, ModelTesterMixin, assert_same_model, main_output

# (cell_type, attention_type, input_feeding, bidirectional_encoder): every attention type, every cell, both
# decoder paths (the whole target in one call; one position at a time).
VARIANTS = [
    ("gru", "luong_general", False, True),
    ("lstm", "bahdanau", False, True),
    ("lstm", "luong_concat", True, True),
    ("rnn", "luong_dot", True, False),
    ("gru", "none", False, True),
]
VARIANT_IDS = [f"{cell}-{attention}{'-feed' if feed else ''}" for cell, attention, feed, _ in VARIANTS]


def tiny_config(cell_type="gru", attention_type="luong_general", input_feeding=False, bidirectional_encoder=True,
                **changes) -> AttentionSeq2SeqConfig:
    options = dict(
        vocab_size=12, source_vocab_size=14, embedding_size=6, hidden_size=8, attention_size=7,
        encoder_layers=2, decoder_layers=2, cell_type=cell_type, attention_type=attention_type,
        input_feeding=input_feeding, bidirectional_encoder=bidirectional_encoder, dropout=0.0,
        tie_word_embeddings=False, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS,
    )
    return AttentionSeq2SeqConfig(**{**options, **changes})


class AttentionSeq2SeqModelTester:
    """Tiny models of one variant: two layers on each side, hidden size != embedding size (so a tied output layer
    needs its projection), a source vocabulary of its own."""

    all_model_classes = (AttentionSeq2SeqModel, AttentionSeq2SeqForConditionalGeneration)
    generative_model_classes = (AttentionSeq2SeqForConditionalGeneration,)
    cache_class = RecurrentCache
    cache_implementations = ("static",)
    padding_sides = ("right", "left")

    def __init__(self, variant):
        self.variant = variant

    def get_config(self, model_class=None, **changes) -> AttentionSeq2SeqConfig:
        return tiny_config(*self.variant, **changes)

    def get_examples(self, config) -> list[dict]:
        generator = torch.Generator().manual_seed(1)
        return [
            {"input_ids": torch.randint(0, config.encoder_vocab_size, (source,), generator=generator),
             "decoder_input_ids": torch.cat([torch.tensor([BOS]), torch.randint(0, config.vocab_size, (target - 1,),
                                                                                 generator=generator)])}
            for source, target in ((5, 3), (2, 4), (7, 6), (3, 2))
        ]

    def expected_num_hidden_states(self, config) -> dict[str, int]:
        return {"encoder_hidden_states": config.encoder_layers + 1,
                "decoder_hidden_states": config.decoder_layers + 1}


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
def tester(request):
    return AttentionSeq2SeqModelTester(request.param)


class TestAttentionSeq2SeqModel(ModelTesterMixin, GenerationTesterMixin):
    def remote_code_testers(self, tester) -> list:
        return [tester] if tester.variant == VARIANTS[1] else []

    def test_hidden_states(self, tester):
        """The mixin's check, for the base model only without attention: with attention its `last_hidden_state` is
        the attentional vector, which follows the top decoder layer's outputs (`decoder_hidden_states[-1]`) and is
        returned as `decoder_attentional_states` (test_decoder_hidden_states below)."""
        if tester.variant[1] != "none":
            tester = copy.copy(tester)
            tester.all_model_classes = tester.generative_model_classes
        super().test_hidden_states(tester)


def spread(model, std=0.5, seed=0):
    """Wider random weights than the default init, so outputs differ clearly between positions and tokens."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, std)
    return model.eval()


# ---------------------------------------------------------------------------------------------------------------
# The decoder against the equations of Bahdanau et al. (2015), Luong et al. (2015) and Sutskever et al. (2014).


def cells_of(stack) -> list[nn.Module]:
    """torch's single-step cells with the weights of each layer of a RecurrentStack: an independent recurrence."""
    cells = []
    for layer in stack.layers:
        rnn = layer.rnn
        cell_class = {nn.GRU: nn.GRUCell, nn.LSTM: nn.LSTMCell, nn.RNN: nn.RNNCell}[type(rnn)]
        cell = cell_class(rnn.input_size, rnn.hidden_size).double()
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).data.copy_(getattr(rnn, f"{name}_l0"))
        cells.append(cell)
    return cells


def reference_logits(model, source: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Logits for one sentence pair (no padding), decoding one position at a time as the papers write it.

    The encoder outputs and final state come from the model's encoder (the recurrent layers are tested against
    their own equations in test_recurrent_layers.py); everything after them is recomputed here.
    """
    config = model.config
    decoder = model.model.decoder
    with torch.no_grad():
        encoded = model.get_encoder()(source[None])
    h = encoded.last_hidden_state[0]  # (S, memory): the annotations h_j
    final = encoded.final_state[0].flatten()  # [h_fwd; h_bwd] (then [c_fwd; c_bwd] for the LSTM)
    lstm = config.cell_type == "lstm"
    layers, size = config.decoder_layers, config.hidden_size
    init = torch.tanh(decoder.bridge.weight @ final + decoder.bridge.bias).view(2 if lstm else 1, layers, size)
    state = [(init[0, l], init[1, l]) if lstm else init[0, l] for l in range(layers)]
    cells = cells_of(decoder.rnn)
    top = (lambda s: s[0]) if lstm else (lambda s: s)

    def softmax_context(energies):
        a = torch.softmax(energies, dim=0)
        return a @ h

    kind = config.attention_type
    attention = decoder.attention
    feed = torch.zeros(size, dtype=torch.float64)
    outputs = []
    for y in targets:
        e = decoder.embed_tokens.weight[y]
        if kind == "bahdanau":  # e_j = v^T tanh(W s_{t-1} + U h_j), x = [E y_{t-1}; c_t]
            s_prev = top(state[-1])
            W, U, v = attention.query_layer.weight, attention.key_layer.weight, attention.energy_layer.weight[0]
            c = softmax_context(torch.stack([v @ torch.tanh(W @ s_prev + U @ hj) for hj in h]))
            x = torch.cat([e, c])
        else:
            x = torch.cat([e, feed]) if config.input_feeding else e
        for l, cell in enumerate(cells):
            state[l] = cell(x[None], tuple(part[None] for part in state[l]) if lstm else state[l][None])
            state[l] = tuple(part[0] for part in state[l]) if lstm else state[l][0]
            x = top(state[l])
        s = x
        if kind == "bahdanau":  # the output layer reads c_t, s_t and E y_{t-1} (eq. 4)
            out = torch.tanh(decoder.combine.weight @ torch.cat([c, s, e]) + decoder.combine.bias)
        elif kind == "none":
            out = s
        else:
            if kind == "luong_dot":
                energies = h @ s
            elif kind == "luong_general":
                energies = torch.stack([s @ attention.key_layer.weight @ hj for hj in h])
            else:  # luong_concat
                W_a, v_a = attention.concat_layer.weight, attention.energy_layer.weight[0]
                energies = torch.stack([v_a @ torch.tanh(W_a @ torch.cat([s, hj])) for hj in h])
            c = softmax_context(energies)
            out = torch.tanh(decoder.combine.weight @ torch.cat([c, s]))  # h~_t = tanh(W_c [c_t; h_t])
            feed = out
        outputs.append(model.lm_head.weight @ out + model.lm_head.bias)
    return torch.stack(outputs)


@pytest.mark.parametrize("cell_type,attention_type,input_feeding,bidirectional", VARIANTS, ids=VARIANT_IDS)
def test_decoder_matches_the_equations(cell_type, attention_type, input_feeding, bidirectional):
    config = tiny_config(cell_type, attention_type, input_feeding, bidirectional)
    model = spread(AttentionSeq2SeqForConditionalGeneration(config).double())
    source = torch.tensor([5, 3, 9, 11, 4])
    targets = torch.tensor([BOS, 4, 7, 3, 10, 6])
    with torch.no_grad():
        logits = model(input_ids=source[None], decoder_input_ids=targets[None]).logits[0]
        expected = reference_logits(model, source, targets)
    torch.testing.assert_close(logits, expected)


# ---------------------------------------------------------------------------------------------------------------
# Cross-attention outputs, the encoder run once, teacher forcing == incremental decoding.


def padded_batch():
    source = torch.tensor([[5, 3, 9, 11, 4], [7, 8, 3, PAD, PAD], [PAD, PAD, 12, 6, 13]])
    mask = (source != PAD).long()
    targets = torch.tensor([[BOS, 4, 7, 3], [BOS, 9, 9, 5], [BOS, 3, 11, 8]])
    return source, mask, targets


@pytest.mark.parametrize("cell_type,attention_type,input_feeding,bidirectional", VARIANTS, ids=VARIANT_IDS)
def test_cross_attentions(cell_type, attention_type, input_feeding, bidirectional):
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(cell_type, attention_type, input_feeding,
                                                                        bidirectional)))
    source, mask, targets = padded_batch()
    with torch.no_grad():
        outputs = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets, output_attentions=True)
    if attention_type == "none":
        assert outputs.cross_attentions is None
        return
    (weights,) = outputs.cross_attentions
    assert weights.shape == (3, 1, 4, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 1, 4))
    assert bool((weights.masked_select(~mask.bool()[:, None, None, :].expand_as(weights)) == 0).all())


@pytest.mark.parametrize("cell_type,attention_type,input_feeding,bidirectional", VARIANTS, ids=VARIANT_IDS)
def test_teacher_forcing_matches_incremental_decoding(cell_type, attention_type, input_feeding, bidirectional):
    """The whole target in one call == one position per call with the cache (what generate() does)."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(cell_type, attention_type, input_feeding,
                                                                        bidirectional)))
    source, mask, targets = padded_batch()
    with torch.no_grad():
        full = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets, output_attentions=True)
        encoder_outputs = model.get_encoder()(source, mask)
        cache, steps, weights = None, [], []
        for t in range(targets.shape[1]):
            out = model(encoder_outputs=encoder_outputs, attention_mask=mask, decoder_input_ids=targets[:, t : t + 1],
                        cache=cache, use_cache=True, output_attentions=True)
            cache = output_cache(out)
            steps.append(out.logits)
            weights.append(out.cross_attentions)
    assert cache.get_seq_length() == targets.shape[1]
    torch.testing.assert_close(torch.cat(steps, dim=1), full.logits, rtol=0, atol=1e-5)
    if attention_type != "none":
        torch.testing.assert_close(torch.cat([w[0] for w in weights], dim=2), full.cross_attentions[0])


def test_generate_runs_the_encoder_once_and_returns_attentions():
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config("gru", "bahdanau")))
    source, mask, _ = padded_batch()
    calls = []
    model.get_encoder().register_forward_hook(lambda module, args, output: calls.append(output.last_hidden_state.shape))
    with torch.no_grad():
        out = model.generate(input_ids=source, attention_mask=mask, num_beams=3, max_new_tokens=4, min_new_tokens=4,
                             output_attentions=True, return_dict_in_generate=True)
    assert calls == [torch.Size([3, 5, 16])], "the encoder runs once, on the unexpanded batch"
    assert len(out.cross_attentions) == 4  # one entry per generated token
    assert out.cross_attentions[0][0].shape == (9, 1, 1, 5)  # batch x beams, one head, one position, source


def test_generate_options_reach_the_search():
    """min/max new tokens, no_repeat_ngram_size, num_return_sequences and early stopping on this model's cache."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config("lstm", "luong_general", True)))
    source, mask, _ = padded_batch()
    with torch.no_grad():
        out = model.generate(input_ids=source, attention_mask=mask, num_beams=4, num_return_sequences=2,
                             min_new_tokens=5, max_new_tokens=5, no_repeat_ngram_size=1, early_stopping=True,
                             length_penalty=0.5)
    assert out.shape == (6, 6)
    for row in out[:, 1:].tolist():
        assert len(set(row)) == len(row), f"a token repeats in {row} despite no_repeat_ngram_size=1"
        assert EOS not in row, "min_new_tokens forbids an early end"
    assert all(not torch.equal(out[2 * i], out[2 * i + 1]) for i in range(3)), "the 2 returned beams differ"


# ---------------------------------------------------------------------------------------------------------------
# Configuration and inputs fail early and clearly.


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"attention_type": "multiplicative"}, "`attention_type`='multiplicative' is not supported"),
        ({"cell_type": "qrnn"}, "`cell_type`='qrnn' is not supported"),
        ({"attention_type": "bahdanau", "input_feeding": True}, "`input_feeding`=True is Luong's"),
        ({"attention_type": "none", "input_feeding": True}, "`input_feeding`=True is Luong's"),
        ({"attention_type": "luong_dot", "bidirectional_encoder": True}, "set `bidirectional_encoder=False`"),
        ({"dropout": 1.0}, "`dropout`=1.0 must be in"),
        ({"decoder_layers": 0}, "`decoder_layers`=0 must be a positive integer"),
        ({"eos_token_id": 12}, "`eos_token_id`=12 is outside the target vocabulary"),
        ({"teacher_forcing_ratio": 1.5}, "`teacher_forcing_ratio`=1.5 must be a number in [0, 1]"),
        ({"teacher_forcing_ratio": -0.1}, "`teacher_forcing_ratio`=-0.1 must be a number in [0, 1]"),
        ({"teacher_forcing_ratio": float("nan")}, "`teacher_forcing_ratio`=nan must be a number in [0, 1]"),
        ({"teacher_forcing_ratio": "0.5"}, "`teacher_forcing_ratio`='0.5' must be a number in [0, 1]"),
    ],
)
def test_config_errors(changes, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        tiny_config(**changes)


def test_decoder_start_defaults_to_bos():
    assert tiny_config().decoder_start_token_id == BOS
    assert tiny_config(decoder_start_token_id=EOS).decoder_start_token_id == EOS


def test_bad_inputs():
    model = AttentionSeq2SeqForConditionalGeneration(tiny_config()).eval()
    source = torch.tensor([[5, 3, 9]])
    with pytest.raises(ValueError, match="Pass `decoder_input_ids`"):
        model(input_ids=source)
    with pytest.raises(ValueError, match=r"`input_ids` holds token ids in \[3, 14\].*14 entries"):
        model(input_ids=torch.tensor([[5, 3, 14]]), labels=torch.tensor([[4, EOS]]))
    with pytest.raises(ValueError, match=r"`decoder_input_ids` holds token ids in \[1, 12\]"):
        model(input_ids=source, decoder_input_ids=torch.tensor([[BOS, 12]]))
    with pytest.raises(ValueError, match=r"`labels` holds token ids in \[2, 12\]"):
        model(input_ids=source, labels=torch.tensor([[12, EOS]]))
    with pytest.raises(ValueError, match="`input_ids` is empty"):
        model(input_ids=torch.zeros(1, 0, dtype=torch.long), labels=torch.tensor([[4, EOS]]))
    with pytest.raises(ValueError, match=r"Rows \[1\] of `attention_mask` are all padding"):
        model(input_ids=torch.tensor([[5, 3], [PAD, PAD]]), attention_mask=torch.tensor([[1, 1], [0, 0]]),
              labels=torch.tensor([[4, EOS], [4, EOS]]))
    with pytest.raises(ValueError, match="one target per source"):
        model(input_ids=source, labels=torch.tensor([[4, EOS], [4, EOS]]))
    with pytest.raises(ValueError, match="pad the decoder inputs on the right"):
        model(input_ids=source, decoder_input_ids=torch.tensor([[PAD, BOS, 4]]),
              decoder_attention_mask=torch.tensor([[0, 1, 1]]))
    unset = AttentionSeq2SeqForConditionalGeneration(tiny_config(pad_token_id=None)).eval()
    with pytest.raises(ValueError, match="needs `config.pad_token_id`"):
        unset(input_ids=source, labels=torch.tensor([[4, EOS]]))
    with pytest.raises(ValueError, match=r"`attention_mask` has shape \(1, 5\), expected \(1, 3\)"):
        model(input_ids=source, attention_mask=torch.ones(1, 5), labels=torch.tensor([[4, EOS]]))
    encoded = model.get_encoder()(source)
    for partial in ((encoded.last_hidden_state,), BaseModelOutput(last_hidden_state=encoded.last_hidden_state)):
        with pytest.raises(ValueError, match="`encoder_outputs` lacks the encoder's `final_state`"):
            model(encoder_outputs=partial, labels=torch.tensor([[4, EOS]]))
    as_tuple = model(encoder_outputs=(encoded.last_hidden_state, encoded.final_state), labels=torch.tensor([[4, EOS]]))
    torch.testing.assert_close(as_tuple.logits, model(input_ids=source, labels=torch.tensor([[4, EOS]])).logits)


def decoder_cache(config, sources: torch.Tensor):
    """The cache a model of ``config`` returns after two decoder positions on ``sources``."""
    torch.manual_seed(0)
    model = AttentionSeq2SeqForConditionalGeneration(config).eval()
    targets = torch.full((sources.shape[0], 2), 4)
    with torch.no_grad():
        return output_cache(model(input_ids=sources, decoder_input_ids=targets, use_cache=True))


SOURCES = torch.tensor([[5, 3, 9], [6, 7, 8]])
FOREIGN_CACHES = {  # name: (a cache the default tiny_config() model cannot continue SOURCES from, expected message)
    "another batch size": (lambda: decoder_cache(tiny_config(), SOURCES[:1]),
                           r"holds states of shapes \[\(\(1, 1, 8\),\), .*each of shape \(1, batch=2, hidden_size=8\)"),
    "another cell type": (lambda: decoder_cache(tiny_config(cell_type="lstm"), SOURCES),
                          r"holds states of shapes \[\(\(1, 2, 8\), \(1, 2, 8\)\), .*"
                          r"for its cell_type='gru' and decoder_layers=2"),
    "another layer count": (lambda: decoder_cache(tiny_config(decoder_layers=3), SOURCES),
                            r"holds states of shapes \[(\(\(1, 2, 8\),\), ){2}\(\(1, 2, 8\),\)\], but "
                            r".*decoder_layers=2"),
    "input feeding": (lambda: decoder_cache(tiny_config(input_feeding=True), SOURCES),
                      r"holds states of shapes .* and extras \{'input_feed': \(2, 1, 8\)\}, but"),
    "other sources": (lambda: decoder_cache(tiny_config(), torch.tensor([[5, 3, 9, 4], [6, 7, 8, 4]])),
                      r"was made for 2 sources of 4 positions, but this call has 2 of 3"),
}


@pytest.mark.parametrize("foreign", list(FOREIGN_CACHES))
def test_foreign_cache_is_rejected(foreign):
    make_cache, match = FOREIGN_CACHES[foreign]
    model = AttentionSeq2SeqForConditionalGeneration(tiny_config()).eval()
    with pytest.raises(ValueError, match=f"`past_key_values` {match}"):
        model(input_ids=SOURCES, decoder_input_ids=torch.tensor([[4], [4]]), cache=make_cache())
    model(input_ids=SOURCES, decoder_input_ids=torch.tensor([[4], [4]]),
          cache=decoder_cache(tiny_config(), SOURCES))  # its own kind of cache is continued

# ---------------------------------------------------------------------------------------------------------------
# Seq2SeqTrainer, with the collator that builds decoder inputs through prepare_decoder_input_ids_from_labels.


def test_seq2seq_trainer(tmp_path):
    model = AttentionSeq2SeqForConditionalGeneration(tiny_config("lstm", "bahdanau"))
    generator = torch.Generator().manual_seed(0)
    rows = [
        {"input_ids": torch.randint(3, 14, (n,), generator=generator).tolist(),
         "labels": torch.randint(3, 12, (n - 1,), generator=generator).tolist() + [EOS]}
        for n in (3, 5, 4, 6, 2, 5)
    ]

    class Tokenizer:  # what DataCollatorForSeq2Seq needs of a tokenizer: padding of the source ids
        pad_token_id = PAD
        padding_side = "right"

        def pad(self, features, return_tensors="pt", **kwargs):
            length = max(len(f["input_ids"]) for f in features)
            ids = [f["input_ids"] + [PAD] * (length - len(f["input_ids"])) for f in features]
            result = {"input_ids": torch.tensor(ids), "attention_mask": (torch.tensor(ids) != PAD).long()}
            if "labels" in features[0]:
                result["labels"] = torch.tensor([f["labels"] for f in features])
            if "decoder_input_ids" in features[0]:
                result["decoder_input_ids"] = torch.tensor([f["decoder_input_ids"] for f in features])
            return result

    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=2, per_device_eval_batch_size=3,
        learning_rate=1e-2, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True,
        predict_with_generate=True, generation_max_length=6, generation_num_beams=2, dataloader_pin_memory=False,
    )
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=rows, eval_dataset=rows,
                             data_collator=DataCollatorForSeq2Seq(Tokenizer(), model=model))
    trainer.train()
    assert trainer.state.global_step == 3
    metrics = trainer.evaluate()
    assert torch.isfinite(torch.tensor(metrics["eval_loss"]))
    predictions = trainer.predict(rows, max_new_tokens=5).predictions  # generated ids, padded
    assert predictions.shape[0] == len(rows) and (predictions[:, 0] == BOS).all()


def test_base_model_returns_decoder_outputs():
    config = tiny_config("gru", "luong_general")
    model = spread(AttentionSeq2SeqModel(config))
    source, mask, targets = padded_batch()
    with torch.no_grad():
        outputs = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets)
    assert outputs.last_hidden_state.shape == (3, 4, config.hidden_size)
    assert outputs.encoder_last_hidden_state.shape == (3, 5, 2 * config.hidden_size)


# ---------------------------------------------------------------------------------------------------------------
# transformers citizenship: decoder embeddings, logits_to_keep, generate's decoder mask, hidden states, gradient
# checkpointing, half precision, vocabulary resizing.

MODEL_CLASSES = pytest.mark.parametrize("model_class", [AttentionSeq2SeqModel, AttentionSeq2SeqForConditionalGeneration],
                                        ids=lambda cls: cls.__name__)
EACH_VARIANT = pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
LABELS = torch.tensor([[4, 7, 3, EOS], [9, 9, EOS, -100], [3, 11, 8, EOS]])


@MODEL_CLASSES
@EACH_VARIANT
def test_inputs_embeds_match_ids(model_class, variant):
    """The embeddings of the ids, passed as `inputs_embeds` / `decoder_inputs_embeds`, give what the ids give."""
    model = spread(model_class(tiny_config(*variant)))
    base = model.base_model
    source, mask, targets = padded_batch()
    extra = {"output_hidden_states": True, "use_cache": False}
    if model_class is AttentionSeq2SeqForConditionalGeneration:
        extra["labels"] = LABELS
    with torch.no_grad():
        expected = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets, **extra)
        got = model(inputs_embeds=base.encoder.embed_tokens(source), attention_mask=mask,
                    decoder_inputs_embeds=base.decoder.embed_tokens(targets), **extra)
    torch.testing.assert_close(got.to_tuple(), expected.to_tuple(), rtol=0, atol=0)


def test_decoder_inputs_embeds_continue_a_cache_and_are_checked():
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config("lstm", "luong_concat", True)))
    source, mask, targets = padded_batch()
    embeds = model.model.decoder.embed_tokens(targets).detach()
    with torch.no_grad():
        full = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets).logits
        first = model(input_ids=source, attention_mask=mask, decoder_inputs_embeds=embeds[:, :2], use_cache=True)
        rest = model(input_ids=source, attention_mask=mask, decoder_inputs_embeds=embeds[:, 2:],
                     cache=output_cache(first), use_cache=True)
    torch.testing.assert_close(torch.cat([first.logits, rest.logits], dim=1), full, rtol=0, atol=1e-5)
    inputs = {"input_ids": source, "attention_mask": mask}
    for bad, message in (
        ({"decoder_input_ids": targets, "decoder_inputs_embeds": embeds},
         "Pass exactly one of `decoder_input_ids` and `decoder_inputs_embeds`"),
        ({"decoder_inputs_embeds": embeds[..., :4]}, r"`decoder_inputs_embeds` must have shape \(batch, length, 6\)"),
        ({"decoder_inputs_embeds": embeds.double()}, "`decoder_inputs_embeds` has dtype torch.float64 but the model"),
        ({"decoder_inputs_embeds": embeds[:2]}, "`decoder_inputs_embeds` has 2 rows but the source has 3"),
        ({}, "Pass `decoder_input_ids` .* or `decoder_inputs_embeds`"),
    ):
        with pytest.raises(ValueError, match=message):
            model(**inputs, **bad)


@EACH_VARIANT
def test_logits_to_keep(variant):
    """Only the kept positions go through the output layer, and their logits are those of the whole target."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant)))
    source, mask, targets = padded_batch()
    inputs = {"input_ids": source, "attention_mask": mask, "decoder_input_ids": targets}
    read = []
    model.lm_head.register_forward_hook(lambda module, args, output: read.append(args[0].shape[1]))
    with torch.no_grad():
        full = model(**inputs).logits
        for keep, positions in ((0, [0, 1, 2, 3]), (1, [3]), (3, [1, 2, 3]), (9, [0, 1, 2, 3]),
                                (torch.tensor([0, 2]), [0, 2]), (torch.tensor([-1]), [3])):
            read.clear()
            torch.testing.assert_close(model(**inputs, logits_to_keep=keep).logits, full[:, positions],
                                       rtol=0, atol=1e-6)
            assert read == [len(positions)], (keep, read)
        last = model(**inputs, labels=LABELS[:, -1:], logits_to_keep=1)
    expected_loss = nn.functional.cross_entropy(full[:, -1], LABELS[:, -1], ignore_index=-100)
    torch.testing.assert_close(last.loss, expected_loss)
    assert model._supports_logits_to_keep()  # generate() asks for the last position only


def test_bad_logits_to_keep():
    model = AttentionSeq2SeqForConditionalGeneration(tiny_config()).eval()
    source, mask, targets = padded_batch()
    inputs = {"input_ids": source, "attention_mask": mask, "decoder_input_ids": targets}
    for bad, message in ((-1, r"`logits_to_keep`=-1 must be an int >= 0"), (1.5, r"`logits_to_keep`=1.5 must"),
                         (torch.tensor([[0]]), r"1-D, integer; got shape \(1, 1\)"),
                         (torch.tensor([0.0]), "1-D, integer; got shape .* dtype torch.float32"),
                         (torch.tensor([4]), r"positions outside the 4 positions \(valid: -4..3\)")):
        with pytest.raises(ValueError, match=message):
            model(**inputs, logits_to_keep=bad)
    with pytest.raises(ValueError, match=r"`labels` has shape \(3, 4\), expected \(3, 1\)"):
        model(**inputs, labels=LABELS, logits_to_keep=1)


@EACH_VARIANT
def test_generate_with_decoder_attention_mask(variant):
    """generate() widens `decoder_attention_mask` at every step: forward takes the cached positions' columns too, and
    the search finds what it finds without the mask, greedy and beam, from the start token or a decoder prefix."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant)))
    source, mask, _ = padded_batch()
    prefix = torch.tensor([[BOS, 4], [BOS, 9], [BOS, 3]])
    for search in ({"num_beams": 1}, {"num_beams": 3, "num_return_sequences": 2}):
        kwargs = {"input_ids": source, "attention_mask": mask, "max_new_tokens": 4, "min_new_tokens": 4,
                  "do_sample": False, **search}
        with torch.no_grad():
            for start in ({}, {"decoder_input_ids": prefix}):
                width = start["decoder_input_ids"].shape[1] if start else 1
                plain = model.generate(**kwargs, **start)
                masked = model.generate(**kwargs, **start, decoder_attention_mask=torch.ones(3, width, dtype=torch.long))
                assert torch.equal(masked, plain), (search, start)


def test_decoder_attention_mask_with_a_cache():
    """With a cache, the mask covers the cached positions and the new ones; another width, or padding in the cached
    part followed by a new token, is refused before the cache changes."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config("lstm", "bahdanau")))
    source, mask, targets = padded_batch()

    def step(**extra):
        with torch.no_grad():
            first = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets[:, :2], use_cache=True)
            return model(input_ids=source, attention_mask=mask, decoder_input_ids=targets[:, 2:3],
                         cache=output_cache(first), use_cache=True, **extra).logits

    torch.testing.assert_close(step(decoder_attention_mask=torch.ones(3, 3)), step(), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"`decoder_attention_mask` has 1 columns, but the cache holds 2 positions and "
                                         r"1 new ones come: pass the mask of the whole target so far, 2 \+ 1 = 3"):
        step(decoder_attention_mask=torch.ones(3, 1))
    with pytest.raises(ValueError, match="padding before real tokens: pad the decoder inputs on the right"):
        step(decoder_attention_mask=torch.tensor([[1, 1, 1], [1, 0, 1], [1, 1, 1]]))


@EACH_VARIANT
def test_decoder_hidden_states(variant):
    """The embeddings and one entry per decoder layer; the output vectors after the attention (what was their last
    entry before) in `decoder_attentional_states`: what the output layer reads."""
    config = tiny_config(*variant)
    model = spread(AttentionSeq2SeqForConditionalGeneration(config))
    decoder = model.model.decoder
    source, mask, targets = padded_batch()
    inputs = {"input_ids": source, "attention_mask": mask, "decoder_input_ids": targets}
    with torch.no_grad():
        out = model(**inputs, output_hidden_states=True)
        base = model.model(**inputs, output_hidden_states=True)
        plain = model(**inputs)
    states = out.decoder_hidden_states
    assert len(states) == config.decoder_layers + 1
    torch.testing.assert_close(states[0], decoder.embed_tokens(targets), rtol=0, atol=0)
    assert plain.decoder_attentional_states is None
    if config.attention_type == "none":
        assert out.decoder_attentional_states is None and base.decoder_attentional_states is None
        torch.testing.assert_close(base.decoder_hidden_states[-1], base.last_hidden_state, rtol=0, atol=0)
        return
    torch.testing.assert_close(base.decoder_attentional_states, base.last_hidden_state, rtol=0, atol=0)
    torch.testing.assert_close(model.lm_head(out.decoder_attentional_states), out.logits, rtol=0, atol=1e-6)
    if config.attention_type.startswith("luong") and not config.input_feeding:
        # Luong: the top layer's h_t attends, then tanh(W_c [c_t; h_t]).
        context, _ = decoder.attention(states[-1], out.encoder_last_hidden_state, mask.bool())
        attentional = torch.tanh(decoder.combine(torch.cat([context, states[-1]], dim=-1)))
        torch.testing.assert_close(attentional, out.decoder_attentional_states)


@EACH_VARIANT
def test_generate_returns_hidden_states_per_layer(variant):
    """generate(output_hidden_states=True, return_dict_in_generate=True): per new token, the embeddings and one
    entry per decoder layer (transformers' convention); the encoder's once."""
    config = tiny_config(*variant)
    model = spread(AttentionSeq2SeqForConditionalGeneration(config))
    source, mask, _ = padded_batch()
    for num_beams in (1, 2):
        with torch.no_grad():
            out = model.generate(input_ids=source, attention_mask=mask, max_new_tokens=3, min_new_tokens=3,
                                 num_beams=num_beams, output_hidden_states=True, return_dict_in_generate=True)
        assert len(out.encoder_hidden_states) == config.encoder_layers + 1
        assert len(out.decoder_hidden_states) == 3
        for per_token in out.decoder_hidden_states:
            assert len(per_token) == config.decoder_layers + 1
            assert {tuple(state.shape) for state in per_token[1:]} == {(3 * num_beams, 1, config.hidden_size)}


def loss_and_gradients(model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor], int]:
    """The training loss, every parameter's gradient, and the bytes of activations autograd kept for the backward
    pass (what checkpointing saves)."""
    kept = []

    def pack(tensor):
        kept.append(tensor.numel() * tensor.element_size())
        return tensor

    model.zero_grad()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = model(**batch).loss
    loss.backward()
    return loss.detach(), {name: param.grad.clone() for name, param in model.named_parameters()}, sum(kept)


@EACH_VARIANT
@pytest.mark.parametrize("use_reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_gradient_checkpointing(variant, use_reentrant):
    """activation_checkpointing_enable(): the same loss and gradients as without (dropout 0), with fewer activations
    kept during the forward pass; the attention's own share: keeping its activations keeps more, and its layers run
    again in the backward pass."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant))).train()
    source, mask, _ = padded_batch()
    batch = {"input_ids": source, "attention_mask": mask, "labels": LABELS}
    attention = model.model.decoder.attention
    runs = []  # calls of the attention's inner layers: their forward hooks fire when it is recomputed too
    for name, inner in attention.named_children() if attention is not None else ():
        if name != "key_layer":  # which projects the keys once per source, outside the attention (project_keys)
            inner.register_forward_hook(lambda *args: runs.append(1))
    loss, gradients, kept = loss_and_gradients(model, batch)
    runs_without, runs[:] = len(runs), []
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": use_reentrant})
    checkpointed_loss, checkpointed_gradients, checkpointed_kept = loss_and_gradients(model, batch)
    torch.testing.assert_close(checkpointed_loss, loss, rtol=0, atol=0)
    torch.testing.assert_close(checkpointed_gradients, gradients, rtol=1e-6, atol=1e-6)
    assert checkpointed_kept < kept, (checkpointed_kept, kept)
    if attention is not None:
        assert isinstance(attention, GradientCheckpointingLayer) and attention.gradient_checkpointing
        assert len(runs) == 2 * runs_without  # 0 for the dot and general scores, which have no such layer
        attention.gradient_checkpointing = False
        assert loss_and_gradients(model, batch)[2] > checkpointed_kept
    with torch.no_grad():  # evaluation and generation do not checkpoint
        model.eval().generate(input_ids=source, attention_mask=mask, max_new_tokens=2, num_beams=2)


@EACH_VARIANT
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_precision(variant, dtype, tmp_path):
    """from_pretrained(dtype=...) of a float32 folder, and dtype="auto" of a folder saved in that dtype: forward and
    generate() run in it, and the logits and first scores stay within a few of its rounding steps of float32's."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant)))
    model.save_pretrained(tmp_path / "float32")
    half = AttentionSeq2SeqForConditionalGeneration.from_pretrained(tmp_path / "float32", dtype=dtype).eval()
    half.save_pretrained(tmp_path / "half")
    auto = AttentionSeq2SeqForConditionalGeneration.from_pretrained(tmp_path / "half", dtype="auto").eval()
    assert {param.dtype for param in half.parameters()} == {param.dtype for param in auto.parameters()} == {dtype}
    source, mask, targets = padded_batch()
    inputs = {"input_ids": source, "attention_mask": mask}
    search = {**inputs, "max_new_tokens": 3, "output_scores": True, "return_dict_in_generate": True}
    with torch.no_grad():
        expected = model(**inputs, decoder_input_ids=targets).logits
        got = half(**inputs, decoder_input_ids=targets).logits
        torch.testing.assert_close(auto(**inputs, decoder_input_ids=targets).logits, got, rtol=0, atol=0)
        expected_first = model.generate(**search).scores[0]
        for num_beams in (1, 2):
            out = half.generate(**search, num_beams=num_beams)
            assert out.sequences.shape[0] == 3 and bool((out.sequences < half.config.vocab_size).all())
    tolerance = 4 * torch.finfo(dtype).eps * expected.abs().max().item()
    assert got.dtype == dtype
    torch.testing.assert_close(got.float(), expected, rtol=0, atol=tolerance)
    torch.testing.assert_close(half.generate(**search).scores[0].float(), expected_first, rtol=0, atol=tolerance)


@pytest.mark.parametrize("tie", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize("source_vocab_size", [None, 14], ids=["shared vocabulary", "source vocabulary"])
@MODEL_CLASSES
def test_resize_token_embeddings_updates_config_and_output_layer(model_class, source_vocab_size, tie, tmp_path):
    """The target vocabulary grows in the config, the decoder's embeddings, the output layer (still tied when tied)
    and, when the source shares it, the encoder's; old tokens keep their outputs, new ids are read and saved."""
    model = spread(model_class(tiny_config("lstm", "bahdanau", vocab_size=14, source_vocab_size=source_vocab_size,
                                           tie_word_embeddings=tie)))
    base = model.base_model
    source, mask, targets = padded_batch()
    inputs = {"input_ids": source, "attention_mask": mask, "decoder_input_ids": targets}
    with torch.no_grad():
        before = main_output(model(**inputs))
    model.resize_token_embeddings(17)
    assert model.config.vocab_size == 17 and base.decoder.embed_tokens.num_embeddings == 17
    assert base.encoder.embed_tokens.num_embeddings == model.config.encoder_vocab_size == (source_vocab_size or 17)
    if model_class is AttentionSeq2SeqForConditionalGeneration:
        assert model.lm_head.out_features == model.lm_head.weight.shape[0] == model.lm_head.bias.shape[0] == 17
        assert (model.lm_head.weight.data_ptr() == base.decoder.embed_tokens.weight.data_ptr()) == tie
    with torch.no_grad():
        after = main_output(model(**inputs))
    torch.testing.assert_close(after[..., : before.shape[-1]], before, rtol=0, atol=0)
    newest = {"input_ids": source.clone(), "attention_mask": mask, "decoder_input_ids": targets.clone()}
    newest["decoder_input_ids"][:, 1] = 16
    if source_vocab_size is None:
        newest["input_ids"][0, 0] = 16
    model.save_pretrained(tmp_path)
    loaded = model_class.from_pretrained(tmp_path).eval()
    assert loaded.config.vocab_size == 17
    assert_same_model(loaded, model, newest)
    model.resize_token_embeddings(17, pad_to_multiple_of=8)
    assert model.config.vocab_size == base.decoder.embed_tokens.num_embeddings == 24


def test_resize_token_embeddings_sets_model_vocab_size():
    """transformers' resize_token_embeddings sets `model.vocab_size` as well as the config's, and its common test reads
    it."""
    model = AttentionSeq2SeqForConditionalGeneration(tiny_config())
    model.resize_token_embeddings(17)
    assert model.vocab_size == 17


# ---------------------------------------------------------------------------------------------------------------
# torch.export and torch.compile


def traceable_batch(padded: bool = True) -> dict:
    """The padded batch (sources padded on either side, a target padded on the right) or one without padding."""
    source, mask, targets = padded_batch()
    decoder_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 1, 1]])
    if not padded:
        source, mask, decoder_mask = source.clamp(min=BOS), torch.ones_like(mask), torch.ones_like(decoder_mask)
    return {"input_ids": source, "attention_mask": mask, "decoder_input_ids": targets,
            "decoder_attention_mask": decoder_mask, "use_cache": False}  # a cache object is no graph output


@MODEL_CLASSES
@pytest.mark.parametrize("variant,padded", [(variant, True) for variant in VARIANTS] + [(VARIANTS[1], False)],
                         ids=[*VARIANT_IDS, f"{VARIANT_IDS[1]}-unpadded"])
def test_exported_program_gives_the_eager_outputs(model_class, variant, padded):
    """torch.export of the forward, every cell and attention type: the value checks step aside and the encoder runs
    without packing while tracing, and the exported program computes what the eager model (which packs) does."""
    model = spread(model_class(tiny_config(*variant)))
    batch = traceable_batch(padded)
    program = torch.export.export(model, (), kwargs=batch, strict=False)
    with torch.no_grad():
        expected, got = model(**batch), program.module()(**batch)
    torch.testing.assert_close(main_output(got), main_output(expected), rtol=0, atol=1e-5)
    torch.testing.assert_close(got.encoder_last_hidden_state, expected.encoder_last_hidden_state, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_strict_export_gives_the_eager_outputs():
    """torch.export in strict mode (Dynamo traces the Python code): LSTM encoder and Bahdanau decoder, padded."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config("lstm", "bahdanau")))
    batch = traceable_batch()
    program = torch.export.export(model, (), kwargs=batch, strict=True)
    with torch.no_grad():
        torch.testing.assert_close(program.module()(**batch).logits, model(**batch).logits, rtol=0, atol=1e-5)


@EACH_VARIANT
def test_compiled_forward_is_one_graph_with_the_eager_outputs(variant):
    """torch.compile(fullgraph=True) under Dynamo's allow_rnn flag (see AttentionSeq2SeqModel)."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant)))
    assert not model._can_compile_fullgraph  # generate() must not compile forward without the flag
    batch = traceable_batch()
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend="eager")  # fullgraph: any graph break raises
    with torch.no_grad(), torch._dynamo.config.patch(allow_rnn=True):
        expected, got = model(**batch).logits, compiled(**batch).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


def test_value_checks_still_run_in_eager_mode():
    """The checks that step aside while tracing (ids in range, 0/1 masks, empty rows, right-padded targets)."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config()))
    batch = traceable_batch()
    bad = {
        "vocabulary": {"input_ids": batch["input_ids"].clamp(max=13) + 1},
        "must hold 1 for a token and 0 for padding": {"attention_mask": batch["attention_mask"] * 2},
        "all padding": {"attention_mask": batch["attention_mask"].index_fill(0, torch.tensor([2]), 0)},
        "pad the decoder inputs on the right": {"decoder_attention_mask": batch["decoder_attention_mask"].flip(1)},
    }
    for match, change in bad.items():
        with pytest.raises(ValueError, match=match):
            model(**{**batch, **change})


# ---------------------------------------------------------------------------------------------------------------
# Teacher-forcing ratio: scheduled sampling (Bengio et al., 2015) while training.


def fed_tokens(model) -> list[torch.Tensor]:
    """The token ids the decoder's embedding reads, one tensor per call, recorded by a forward hook."""
    calls = []
    model.model.decoder.embed_tokens.register_forward_hook(lambda module, args, output: calls.append(args[0]))
    return calls


def sampling_batch(rows: int = 16, length: int = 5) -> dict:
    generator = torch.Generator().manual_seed(3)
    labels = torch.randint(3, 12, (rows, length), generator=generator)
    labels[::3, -2:] = -100  # padded targets
    return {"input_ids": torch.randint(1, 14, (rows, 4), generator=generator), "labels": labels}


def test_teacher_forcing_ratio_is_set_and_checked():
    config = tiny_config()
    assert config.teacher_forcing_ratio == 1.0
    config.set_teacher_forcing_ratio(0.25)
    assert config.teacher_forcing_ratio == 0.25
    with pytest.raises(ValueError, match=r"`teacher_forcing_ratio`=2.0 must be a number in \[0, 1\]"):
        config.set_teacher_forcing_ratio(2.0)
    assert config.teacher_forcing_ratio == 0.25


@EACH_VARIANT
def test_teacher_forcing_ratio_one_keeps_the_whole_target_path(variant):
    """Ratio 1 while training: one decoder call over the whole target, no coin drawn from the RNG, the logits of
    evaluation bit for bit (dropout 0); evaluation ignores any ratio."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant)))
    batch = sampling_batch()
    with torch.no_grad():
        evaluated = model(**batch).logits
        model.config.set_teacher_forcing_ratio(0.5)
        assert torch.equal(model(**batch).logits, evaluated)
        model.config.set_teacher_forcing_ratio(1.0)
        calls, rng = fed_tokens(model.train()), torch.get_rng_state()
        trained = model(**batch).logits
    assert len(calls) == 1 and calls[0].shape == batch["labels"].shape
    assert torch.equal(torch.get_rng_state(), rng)
    assert torch.equal(trained, evaluated)


@EACH_VARIANT
def test_teacher_forcing_ratio_zero_feeds_back_greedy_decoding(variant):
    """Ratio 0 while training (dropout 0): the decoder reads its own previous argmax at every position, so the tokens
    it reads and its logits are those of generate()'s greedy search in evaluation."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant, eos_token_id=None)))
    batch = sampling_batch()
    length = batch["labels"].shape[1]
    with torch.no_grad():
        greedy = model.generate(input_ids=batch["input_ids"], do_sample=False, num_beams=1, max_new_tokens=length,
                                output_logits=True, return_dict_in_generate=True)
        model.config.set_teacher_forcing_ratio(0.0)
        calls = fed_tokens(model.train())
        trained = model(**batch)
    assert torch.equal(torch.cat(calls, dim=1), greedy.sequences[:, :length])
    torch.testing.assert_close(trained.logits, torch.stack(greedy.logits, dim=1), rtol=0, atol=1e-5)


@EACH_VARIANT
def test_scheduled_sampling_mixes_gold_and_predicted_tokens(variant):
    """Ratio 0.5: each row and position after the first reads the gold token or the previous argmax, both happen,
    a seeded run repeats; the outputs (logits, attention, hidden states, loss) are those of teacher forcing on the
    tokens read, and gradients reach every parameter."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant)))
    batch = sampling_batch()
    gold = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    model.config.set_teacher_forcing_ratio(0.5)
    calls = fed_tokens(model.train())
    flags = {"output_attentions": True, "output_hidden_states": True}
    torch.manual_seed(0)
    trained = model(**batch, **flags)
    fed = torch.cat(calls, dim=1)
    torch.manual_seed(0)
    calls.clear()
    with torch.no_grad():
        model(**batch)
    assert torch.equal(torch.cat(calls, dim=1), fed), "a seeded run feeds the same tokens"

    predicted = torch.cat([gold[:, :1], trained.logits[:, :-1].argmax(-1)], dim=1)
    assert torch.equal(fed[:, 0], gold[:, 0])
    assert bool(((fed == gold) | (fed == predicted)).all())
    differ = gold != predicted
    assert bool((fed == gold)[differ].any()) and bool((fed == predicted)[differ].any())

    calls.clear()
    with torch.no_grad():
        forced = model.eval()(**batch, decoder_input_ids=fed, **flags)
    torch.testing.assert_close(trained.logits, forced.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(trained.loss, forced.loss, rtol=0, atol=1e-6)
    for name in ("cross_attentions", "decoder_hidden_states", "decoder_attentional_states", "encoder_hidden_states"):
        torch.testing.assert_close(getattr(trained, name), getattr(forced, name), rtol=0, atol=1e-5)
    trained.loss.backward()
    assert all(param.grad is not None for param in model.parameters())


def test_scheduled_sampling_refuses_decoder_inputs_embeds():
    model = AttentionSeq2SeqForConditionalGeneration(tiny_config(teacher_forcing_ratio=0.5)).train()
    embeds = torch.zeros(2, 3, 6)
    with pytest.raises(ValueError, match="`decoder_inputs_embeds` cannot be trained with `teacher_forcing_ratio` < 1"):
        model(input_ids=torch.tensor([[5, 3], [4, 6]]), decoder_inputs_embeds=embeds, labels=torch.ones(2, 3).long())


@EACH_VARIANT
def test_decoding_step_continues_a_cache_as_forward_does(variant):
    """The decoding loop's step (``decoding_step`` on what ``decoding_step_inputs`` prepares): the logits of the
    whole target, position after position, and the cache forward leaves; a padded source; and no step where
    generate() passes what only forward reads (a decoder attention mask) or keeps no cache."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant)))
    source, mask, targets = padded_batch()
    with torch.no_grad():
        full = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets).logits
        first = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets[:, :1], use_cache=True)
        kwargs = {"encoder_outputs": model.get_encoder()(source, mask), "attention_mask": mask, "use_cache": True,
                  CACHE_NAME: output_cache(first)}
        step_inputs = model.decoding_step_inputs(kwargs)
        logits = [first.logits[:, -1]] + [model.decoding_step(targets[:, t : t + 1], **step_inputs)
                                          for t in range(1, targets.shape[1])]
    torch.testing.assert_close(torch.stack(logits, dim=1), full, rtol=0, atol=1e-6)
    source_mask = step_inputs["cache"].per_input["memory_mask"]  # the source mask as forward left it in the cache
    assert source_mask.dtype == torch.bool and not source_mask.all()
    assert step_inputs["cache"].get_seq_length() == targets.shape[1]
    assert model.decoding_step_inputs({**kwargs, "decoder_attention_mask": torch.ones_like(targets)}) is None
    assert model.decoding_step_inputs({**kwargs, "use_cache": False}) is None
    with torch.no_grad():
        unpadded = model(input_ids=source, decoder_input_ids=targets[:, :1], use_cache=True)
    assert "memory_mask" not in model.decoding_step_inputs({**kwargs, CACHE_NAME: output_cache(unpadded)}
                                                           )["cache"].per_input


@EACH_VARIANT
def test_rows_sharing_a_source_attend_to_it_together(variant):
    """``rows_per_source``: the beams of a sentence (consecutive rows of one source, with different targets) attend
    as several queries of one memory row; the logits are those of one query per row."""
    model = spread(AttentionSeq2SeqForConditionalGeneration(tiny_config(*variant)))
    source, mask, _ = padded_batch()
    beams = 2
    source, mask = source.repeat_interleave(beams, dim=0), mask.repeat_interleave(beams, dim=0)
    targets = torch.tensor([[BOS, 4, 7, 3], [BOS, 9, 9, 5], [BOS, 3, 11, 8], [BOS, 5, 4, 4], [BOS, 8, 6, 3],
                            [BOS, 3, 3, 9]])
    logits = {}
    with torch.no_grad():
        for rows_per_source in (1, beams):
            first = model(input_ids=source, attention_mask=mask, decoder_input_ids=targets[:, :1], use_cache=True)
            kwargs = {"encoder_outputs": model.get_encoder()(source, mask), "attention_mask": mask, "use_cache": True,
                      CACHE_NAME: output_cache(first)}
            step_inputs = model.decoding_step_inputs(kwargs, rows_per_source)
            logits[rows_per_source] = torch.stack([model.decoding_step(targets[:, t : t + 1], **step_inputs)
                                                   for t in range(1, targets.shape[1])], dim=1)
    torch.testing.assert_close(logits[beams], logits[1], rtol=0, atol=1e-6)
