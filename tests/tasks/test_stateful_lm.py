"""Stateful language modelling: the stream, its rows and windows, the evaluations that score every token (against
brute-force recomputations), and truncated BPTT's detached state."""

import pytest
import torch
from torch.nn import functional as F

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM, TransformerConfig, TransformerForCausalLM
from hf_seqmodels.data.loading import load_text_dataset
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.models.modeling_utils import output_cache
from hf_seqmodels.tasks.stateful_lm import evaluate_stateful, sliding_window_loss, stream_rows, token_stream, windows

VOCAB = 13
EOS = 3


def test_ptb_test_stream_scores_every_token(data_dir):
    """Every word of PTB's test split and each line's eos is a target: 82,430, as in ptb.test.txt."""
    texts = load_text_dataset("ptb")["test"]["sentence"]
    stream = token_stream(texts, train_tokenizer(texts, "word"))
    expected = sum(len(text.split()) + 1 for text in texts)
    assert len(stream) - 1 == expected == 82430
    inputs, targets = stream_rows(stream, 20, pad_id=0)
    assert int((targets != -100).sum()) == expected


def test_stream_rows_cut_the_stream_in_order():
    stream = torch.arange(12)
    inputs, targets = stream_rows(stream, 3, pad_id=-1)
    assert inputs.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, -1]]
    assert targets.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, -100]]


def test_windows_cover_the_rows():
    assert list(windows(10, 4, variable=False)) == [(0, 4), (4, 4), (8, 2)]
    sizes = [size for _, size in windows(2000, 35, variable=True, generator=torch.Generator().manual_seed(0))]
    assert sum(sizes) == 2000 and min(sizes[:-1]) >= 5 and 25 < sum(sizes) / len(sizes) < 40
    assert len(set(sizes)) > 5


def recurrent_lm(cell_type: str, **changes) -> RecurrentForCausalLM:
    torch.manual_seed(0)
    config = RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8, num_layers=2, cell_type=cell_type,
                             eos_token_id=EOS, **changes)
    return RecurrentForCausalLM(config).eval()


def a_stream(length: int = 47) -> torch.LongTensor:
    return torch.randint(0, VOCAB, (length,), generator=torch.Generator().manual_seed(2))


@pytest.mark.parametrize("cell_type", ["lstm", "gru"])
@pytest.mark.parametrize("rows, bptt", [(1, 5), (3, 4), (4, 50)])
def test_stateful_evaluation_equals_whole_rows_in_one_call(cell_type, rows, bptt):
    """Windows with the state carried give the loss of each row read in one call from a zero state."""
    model, stream = recurrent_lm(cell_type), a_stream()
    found, count = evaluate_stateful(model, stream, rows, bptt, pad_id=EOS)
    inputs, targets = stream_rows(stream, rows, pad_id=EOS)
    with torch.no_grad():
        logits = model(input_ids=inputs, use_cache=False).logits
    expected = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100)
    assert count == len(stream) - 1
    assert abs(found - expected.item()) < 1e-5


def test_sliding_window_scores_each_target_once_with_its_window():
    """Each target j, predicted from the tokens of its window (the first window that reaches it) up to j."""
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=VOCAB, d_model=16, num_heads=2, decoder_layers=1, ffn_dim=32,
                               max_position_embeddings=32, dropout=0.0, eos_token_id=EOS)
    model, stream = TransformerForCausalLM(config).eval(), a_stream(30)
    context, stride = 8, 3
    found, count = sliding_window_loss(model, stream, context, stride)
    inputs, targets = stream[:-1], stream[1:]
    ends = list(range(context, len(inputs), stride)) + [len(inputs)]
    losses = []
    with torch.no_grad():
        for j in range(len(targets)):
            end = next(e for e in ends if e > j)
            begin = max(0, end - context)
            logits = model(input_ids=inputs[begin : j + 1].unsqueeze(0)).logits[0, -1]
            losses.append(F.cross_entropy(logits, targets[j]))
    assert count == len(targets)
    assert abs(found - torch.stack(losses).mean().item()) < 1e-5
    with pytest.raises(ValueError, match="--eval_stride=9"):
        sliding_window_loss(model, stream, context, 9)


def test_detach_cuts_the_graph_between_windows():
    """After `detach_` the next window's backward pass stops at its start: the embeddings of tokens read only in the
    first window get no gradient (they do without the detach); untied, so that the output layer gives them none."""
    first, second = torch.tensor([[1, 2, 4, 5]]), torch.tensor([[6, 7, 8, 9]])
    for detach in (True, False):
        model = recurrent_lm("lstm", tie_word_embeddings=False).train()
        cache = output_cache(model(input_ids=first, use_cache=True))
        if detach:
            cache.detach_()
            assert all(t.grad_fn is None and not t.requires_grad for t in cache.tensors())
        model(input_ids=second, labels=second, cache=cache, use_cache=True).loss.backward()
        gradient = model.model.embed_tokens.weight.grad[[1, 2, 4, 5]]
        assert bool(gradient.eq(0).all()) == detach
