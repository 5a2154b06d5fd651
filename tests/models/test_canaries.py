"""Canaries for "trains fine, decodes garbage": each generative family learns a tiny task in a few seconds, then
``generate()`` must solve it through the cache, greedy and with beams.

The tasks need memory of earlier positions (a language model copies its prompt, an encoder-decoder reverses its
source), so a model that loses its cache between decoding steps, or reads it in the wrong beam order, fails them
even though its training loss looked right. transformers 5.24 did exactly that to us: it renamed the cache argument
and our models silently decoded without their state. These tests fail on any such upstream change; the
cached == recomputed tests say where.
"""

import pytest
import torch

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentConfig,
    RecurrentForCausalLM,
    TransformerConfig,
    TransformerForCausalLM,
    TransformerForConditionalGeneration,
)

PAD, BOS, EOS, SEP = 0, 1, 2, 3
SYMBOLS = range(4, 10)
VOCAB_SIZE = 10
LENGTHS = range(2, 5)  # mixed, so that sources and prompts are padded; longer copies take an LSTM far longer
TOKEN_IDS = dict(vocab_size=VOCAB_SIZE, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)
MIN_EXACT_MATCH = 0.95


def random_words(generator: torch.Generator, count: int) -> list[list[int]]:
    lengths = torch.randint(LENGTHS.start, LENGTHS.stop, (count,), generator=generator)
    return [torch.randint(SYMBOLS.start, SYMBOLS.stop, (int(n),), generator=generator).tolist() for n in lengths]


def pad(rows: list[list[int]], value: int, side: str = "right") -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([row + [value] * (width - len(row)) if side == "right" else [value] * (width - len(row)) + row
                         for row in rows])


def copy_batch(words: list[list[int]]) -> dict:
    """Language model: ``BOS w SEP w EOS``; only the copy (after SEP) is scored."""
    rows = [[BOS, *w, SEP, *w, EOS] for w in words]
    input_ids = pad(rows, PAD)
    labels = pad([[-100] * (len(w) + 2) + [*w, EOS] for w in words], -100)
    return {"input_ids": input_ids, "attention_mask": (input_ids != PAD).long(), "labels": labels}


def reverse_batch(words: list[list[int]]) -> dict:
    """Encoder-decoder: source ``w EOS``, target ``reversed(w) EOS``."""
    input_ids = pad([[*w, EOS] for w in words], PAD)
    return {"input_ids": input_ids, "attention_mask": (input_ids != PAD).long(),
            "labels": pad([[*reversed(w), EOS] for w in words], -100)}


def train(model, make_batch, steps: int, learning_rate: float, batch_size: int = 64) -> None:
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    model.train()
    for _ in range(steps):
        loss = model(**make_batch(random_words(generator, batch_size))).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


def exact_match(model, words: list[list[int]], num_beams: int) -> float:
    """Share of ``words`` whose answer ``generate()`` gets exactly right (up to and including EOS)."""
    if model.config.is_encoder_decoder:
        batch = reverse_batch(words)
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        answers = [[*reversed(w), EOS] for w in words]
    else:
        prompts = pad([[BOS, *w, SEP] for w in words], PAD, side="left")
        inputs = {"input_ids": prompts, "attention_mask": (prompts != PAD).long()}
        answers = [[*w, EOS] for w in words]
    with torch.no_grad():
        output = model.generate(**inputs, num_beams=num_beams, do_sample=False, use_cache=True,
                                max_new_tokens=LENGTHS.stop + 1, pad_token_id=PAD, eos_token_id=EOS)
    new_tokens = output[:, 1:] if model.config.is_encoder_decoder else output[:, inputs["input_ids"].shape[1]:]
    correct = sum(row[: len(answer)] == answer for row, answer in zip(new_tokens.tolist(), answers))
    return correct / len(words)


def recurrent_lm(cell_type: str):
    config = RecurrentConfig(cell_type=cell_type, embedding_size=32, hidden_size=64, num_layers=1, dropout=0.0,
                             tie_word_embeddings=False, **TOKEN_IDS)
    return RecurrentForCausalLM(config), copy_batch, 400, 1e-2


def attention_seq2seq(cell_type: str):
    config = AttentionSeq2SeqConfig(cell_type=cell_type, embedding_size=32, hidden_size=64, encoder_layers=1,
                                    decoder_layers=1, dropout=0.0, decoder_start_token_id=BOS, **TOKEN_IDS)
    return AttentionSeq2SeqForConditionalGeneration(config), reverse_batch, 200, 1e-2


def transformer(head):
    config = TransformerConfig(d_model=32, num_heads=4, encoder_layers=1, decoder_layers=2, ffn_dim=64,
                               max_position_embeddings=32, dropout=0.0, decoder_start_token_id=BOS, **TOKEN_IDS)
    make_batch = reverse_batch if head is TransformerForConditionalGeneration else copy_batch
    return head(config), make_batch, 300, 3e-3


CANARIES = {
    "recurrent_lm_lstm": lambda: recurrent_lm("lstm"),
    "recurrent_lm_gru": lambda: recurrent_lm("gru"),
    "attention_seq2seq_gru": lambda: attention_seq2seq("gru"),
    "attention_seq2seq_lstm": lambda: attention_seq2seq("lstm"),
    "transformer_encoder_decoder": lambda: transformer(TransformerForConditionalGeneration),
    "transformer_decoder_only": lambda: transformer(TransformerForCausalLM),
}


@pytest.mark.parametrize("name", CANARIES)
@pytest.mark.slow
def test_generate_solves_a_learned_task_through_the_cache(name):
    torch.manual_seed(0)
    model, make_batch, steps, learning_rate = CANARIES[name]()
    train(model, make_batch, steps, learning_rate)
    held_out = random_words(torch.Generator().manual_seed(1), 64)
    for num_beams in (1, 3):
        score = exact_match(model, held_out, num_beams)
        assert score >= MIN_EXACT_MATCH, f"{name}: exact match {score:.2f} with num_beams={num_beams}"
