"""AWD-LSTM's regularisation in the recurrent family (Merity et al. 2017): each option against its definition, and
each a no-op when off."""

import pytest
import torch
from torch.nn import functional as F

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.models.recurrent_layers import LockedDropout, RecurrentLayer
from tests.models.test_recurrent_layers import lstm_step

VOCAB, EMBED, HIDDEN = 11, 6, 6
AWD_OFF = {"locked_dropout": False, "weight_drop": 0.0, "word_type_dropout": 0.0, "activation_regularization": 0.0,
           "temporal_activation_regularization": 0.0}


def lm(**changes) -> RecurrentForCausalLM:
    torch.manual_seed(0)
    options = {"vocab_size": VOCAB, "embedding_size": EMBED, "hidden_size": HIDDEN, "num_layers": 2, **changes}
    return RecurrentForCausalLM(RecurrentConfig(**options))


def ids(batch: int = 3, length: int = 7) -> torch.LongTensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(1))


def plain_lstms(model: RecurrentForCausalLM) -> list[torch.nn.LSTM]:
    """torch's own LSTM modules with the weights of the model's layers."""
    lstms = []
    for layer in model.model.rnn.layers:
        lstm = torch.nn.LSTM(layer.rnn.input_size, HIDDEN, batch_first=True)
        lstm.load_state_dict(layer.rnn.state_dict())
        lstms.append(lstm)
    return lstms


def plain_torch_logits(model: RecurrentForCausalLM, lstms: list[torch.nn.LSTM], input_ids: torch.Tensor,
                       p_embed: float, p_between: float, p_out: float) -> torch.Tensor:
    """The model recomputed with torch's own modules and dropout calls, in the order the model makes them."""
    embedding = model.model.embed_tokens.weight
    hidden = F.dropout(embedding[input_ids], p_embed, training=True)
    hidden = lstms[0](hidden)[0]
    hidden = lstms[1](F.dropout(hidden, p_between, training=True))[0]
    hidden = F.dropout(hidden, p_out, training=True)
    return hidden @ embedding.T + model.lm_head.bias


@pytest.mark.parametrize("explicit", [False, True])
def test_awd_options_off_change_nothing(explicit):
    """With the AWD fields off (by default or set to their off values), a training forward with the plain dropouts
    on is bit-identical to the same model in plain torch, from the same seed."""
    dropouts = {"embedding_dropout": 0.2, "dropout": 0.3, "output_dropout": 0.4}
    model = lm(**dropouts, **(AWD_OFF if explicit else {})).train()
    input_ids, lstms = ids(), plain_lstms(model)
    torch.manual_seed(5)
    found = model(input_ids).logits
    torch.manual_seed(5)
    expected = plain_torch_logits(model, lstms, input_ids, 0.2, 0.3, 0.4)
    assert torch.equal(found, expected)


def test_weight_drop_masks_whole_weights_once_per_batch():
    """The layer's outputs are the LSTM equations run with one dropped copy of W_hh at every step; the mask (read
    off the gradient: a dropped entry gets none) drops about p of the entries, and the next batch draws another."""
    torch.manual_seed(0)
    layer = RecurrentLayer("lstm", 4, 5, bidirectional=False, nonlinearity="tanh", weight_drop=0.5).train()
    x = torch.randn(2, 6, 4)
    outputs, *_ = layer(x)
    outputs.sum().backward()
    rnn = layer.rnn
    kept = rnn.weight_hh_l0.grad != 0
    assert 0.3 < 1 - kept.float().mean() < 0.7
    w_hh = rnn.weight_hh_l0.detach() * kept / 0.5
    for row in range(2):
        state = (torch.zeros(5), torch.zeros(5))
        for t in range(6):
            state = lstm_step(x[row, t], state, rnn.weight_ih_l0.detach(), w_hh, rnn.bias_ih_l0.detach(),
                              rnn.bias_hh_l0.detach(), "tanh")
            torch.testing.assert_close(outputs[row, t].detach(), state[0], rtol=1e-5, atol=1e-6)
    layer.zero_grad()
    layer(x)[0].sum().backward()
    assert not torch.equal(rnn.weight_hh_l0.grad != 0, kept)
    assert [name for name, _ in layer.named_parameters()] == [name for name, _ in RecurrentLayer(
        "lstm", 4, 5, False, "tanh").named_parameters()]
    layer.eval()
    plain = torch.nn.LSTM(4, 5, batch_first=True)
    plain.load_state_dict(rnn.state_dict())
    assert torch.equal(layer(x)[0], plain(x)[0])


def test_weight_drop_keeps_the_saved_weights_loadable(tmp_path):
    model = lm(weight_drop=0.5)
    model.save_pretrained(tmp_path)
    plain = RecurrentForCausalLM.from_pretrained(tmp_path, weight_drop=0.0)
    assert model.state_dict().keys() == plain.state_dict().keys() == lm().state_dict().keys()
    assert torch.equal(model.eval()(ids()).logits, plain.eval()(ids()).logits)


def test_locked_dropout_uses_one_mask_per_sequence():
    torch.manual_seed(0)
    dropout = LockedDropout(0.5).train()
    out = dropout(torch.ones(4, 9, 16))
    assert torch.equal(out, out[:, :1].expand_as(out))  # the same features dropped at every position
    assert set(out.unique().tolist()) == {0.0, 2.0}
    assert not torch.equal(out[0], out[1])  # each sequence its own mask
    assert torch.equal(dropout.eval()(out), out)


def test_locked_dropout_reaches_every_dropout_of_the_language_model():
    model = lm(locked_dropout=True, embedding_dropout=0.3, dropout=0.3, output_dropout=0.3)
    assert [type(m).__name__ for m in (model.model.embedding_dropout, model.model.rnn.dropout, model.dropout)] == [
        "LockedDropout"] * 3


def test_word_type_dropout_drops_whole_word_types():
    model = lm(word_type_dropout=0.5).train()
    input_ids = torch.tensor([[1, 2, 1, 3, 2, 1, 4, 3, 1, 2]] * 2)
    torch.manual_seed(3)
    embeds = model.model._embed(input_ids)
    table = model.model.embed_tokens.weight
    dropped = set()
    for position, token in enumerate(input_ids.flatten().tolist()):
        row = embeds.flatten(0, 1)[position]
        if torch.equal(row, torch.zeros_like(row)):
            dropped.add(token)
        else:
            torch.testing.assert_close(row, table[token] * 2)
    assert dropped and dropped != {1, 2, 3, 4}
    for position, token in enumerate(input_ids.flatten().tolist()):  # every occurrence of a dropped type
        assert (token in dropped) == bool(embeds.flatten(0, 1)[position].eq(0).all())
    assert torch.equal(model.eval().model._embed(input_ids), table[input_ids])


def test_activation_regularisation_terms_equal_their_formulas():
    alpha, beta = 2.0, 1.5
    model = lm(activation_regularization=alpha, temporal_activation_regularization=beta).train()
    input_ids = ids()
    loss = model(input_ids, labels=input_ids).loss
    top = model.model(input_ids).last_hidden_state
    plain = F.cross_entropy(model(input_ids).logits[:, :-1].reshape(-1, VOCAB), input_ids[:, 1:].reshape(-1))
    expected = plain + alpha * top.pow(2).mean() + beta * (top[:, 1:] - top[:, :-1]).pow(2).mean()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(model.eval()(input_ids, labels=input_ids).loss, plain)  # training only


def test_tied_embeddings_with_a_projection_stay_tied_through_save_and_load(tmp_path):
    model = lm(embedding_size=4, hidden_size=7, tie_word_embeddings=True).eval()
    assert model.projection is not None
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists()
    loaded = RecurrentForCausalLM.from_pretrained(tmp_path).eval()
    assert loaded.lm_head.weight is loaded.model.embed_tokens.weight
    assert torch.equal(loaded(ids()).logits, model(ids()).logits)
    with torch.no_grad():
        loaded.model.embed_tokens.weight[0, 0] += 1
    assert loaded.lm_head.weight[0, 0] == loaded.model.embed_tokens.weight[0, 0]


@pytest.mark.parametrize("field, value", [("weight_drop", 1.0), ("word_type_dropout", -0.1), ("locked_dropout", "yes"),
                                          ("activation_regularization", -1.0),
                                          ("temporal_activation_regularization", float("inf"))])
def test_bad_awd_fields_are_refused(field, value):
    with pytest.raises(ValueError, match=f"`{field}`"):
        RecurrentConfig(**{field: value})
