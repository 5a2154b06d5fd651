"""Decoding loops written by hand around an encoder-decoder's single decoder step, for comparison with
``generate()``: the per-sentence searches of the tutorials and plain batched loops.

All of them use the model exactly as ``generate()`` does: the encoder once per source, then one decoder call per
step with the previous token and the cache (``cache``) of the hypothesis being extended. Scores are
sums of ``log_softmax`` of the logits in float32.

- ``matched_beam_search``: the classic tutorial structure (one sentence; a list of hypotheses; the decoder called
  once per hypothesis per step) with transformers' semantics (``length_penalty`` as given, ``early_stopping=True``):
  the ``k`` live beams are the best non-EOS among the top ``2k`` candidates; an EOS candidate is finished only if it
  ranks in the top ``k``; scores are divided by (generated tokens, EOS included) ** length_penalty; at the length
  limit the live hypotheses are finished too and compete; stop once ``k`` are finished.
- ``hand_greedy`` and ``hand_beam_search``: batched loops (rows, or rows x beams, in one decoder call per step),
  the plain way to decode without ``generate()``; the beam loop follows the matched semantics. At batch 1,
  ``hand_beam_search`` is the per-sentence search as JoeyNMT or OpenNMT run it: the sentence's ``k`` beams in one
  decoder call per step.
"""

from dataclasses import dataclass

import torch
from torch.nn import functional as F

from hf_seqmodels.models.cache import RecurrentCache
from hf_seqmodels.models.modeling_utils import output_cache


def fork(cache: RecurrentCache | None) -> RecurrentCache:
    """A new cache holding the same state; the model replaces (never edits) the state tensors, so a shallow copy
    lets several hypotheses continue from one parent."""
    new = RecurrentCache()
    if cache is not None:
        new.states, new.extras, new.seen_tokens = list(cache.states), dict(cache.extras), cache.seen_tokens
        new.per_input = dict(cache.per_input)
    return new


def encode(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None):
    return model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)


def decoder_step(model, encoder_outputs, attention_mask, tokens: torch.Tensor, cache: RecurrentCache | None):
    """Feed ``tokens`` ``(rows, 1)``; returns log-probabilities ``(rows, vocab)`` and the new cache (``cache`` is
    left as it was)."""
    out = model(encoder_outputs=encoder_outputs, attention_mask=attention_mask, decoder_input_ids=tokens,
                cache=fork(cache), use_cache=True)
    return F.log_softmax(out.logits[:, -1].float(), dim=-1), output_cache(out)


@dataclass
class Hypothesis:
    tokens: list[int]  # generated tokens, without the start token
    score: float  # sum of log-probabilities
    cache: RecurrentCache | None = None


@torch.no_grad()
def matched_beam_search(
    model, source: torch.Tensor, num_beams: int, max_new_tokens: int, length_penalty: float = 1.0
) -> list[int]:
    """Per sentence and per hypothesis like the tutorial, with transformers' beam semantics (see module doc)."""
    config = model.config
    start = torch.tensor([[config.decoder_start_token_id]], device=source.device)
    encoder_outputs = encode(model, source, None)
    live = [Hypothesis([], 0.0)]
    finished: list[tuple[float, list[int]]] = []  # (normalised score, tokens), at most num_beams, best first
    for length in range(1, max_new_tokens + 1):
        candidates = []
        for hyp in live:
            previous = start if not hyp.tokens else torch.tensor([[hyp.tokens[-1]]], device=source.device)
            log_probs, cache = decoder_step(model, encoder_outputs, None, previous, hyp.cache)
            # Sum in float32 as generate() does, so that near-ties break the same way.
            top = (log_probs[0] + hyp.score).topk(min(2 * num_beams, log_probs.shape[-1]))
            for total, token in zip(top.values.tolist(), top.indices.tolist()):
                candidates.append(Hypothesis(hyp.tokens + [token], total, cache))
        candidates.sort(key=lambda hyp: hyp.score, reverse=True)
        candidates = candidates[: 2 * num_beams]
        at_limit = length == max_new_tokens
        live = []
        for rank, hyp in enumerate(candidates):
            if hyp.tokens[-1] == config.eos_token_id or at_limit:
                if rank < num_beams:
                    normalised = torch.tensor(hyp.score, dtype=torch.float32) / length**length_penalty
                    finished.append((normalised.item(), hyp.tokens))
            elif len(live) < num_beams:
                live.append(hyp)
        finished = sorted(finished, key=lambda item: item[0], reverse=True)[:num_beams]
        if len(finished) == num_beams:
            break
    return finished[0][1]


def strip(tokens: list[int], config) -> list[int]:
    """Tokens up to (without) the first EOS, for comparing outputs of different lengths and paddings."""
    return tokens[: tokens.index(config.eos_token_id)] if config.eos_token_id in tokens else tokens


def agreement(ours: list[list[int]], other: list[list[int]]) -> float:
    """The fraction of sentences for which two searches found the same (stripped) tokens."""
    return sum(a == b for a, b in zip(ours, other)) / len(ours)


def counts(ours: list[list[int]], other: list[list[int]]) -> str:
    """Whether a speed comparison of two searches counts: "yes" when they found the same outputs for every
    sentence, else how many differ."""
    differ = sum(a != b for a, b in zip(ours, other, strict=True))
    return "yes" if differ == 0 else f"NO: {differ} of {len(ours)} outputs differ"


@torch.no_grad()
def hand_greedy(model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_new_tokens: int):
    """Greedy decoding of a batch in one decoder call per step, until every row has emitted EOS."""
    config = model.config
    encoder_outputs = encode(model, input_ids, attention_mask)
    tokens = torch.full((input_ids.shape[0], 1), config.decoder_start_token_id, device=input_ids.device)
    done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    cache, generated = None, []
    for _ in range(max_new_tokens):
        out = model(encoder_outputs=encoder_outputs, attention_mask=attention_mask, decoder_input_ids=tokens,
                    cache=cache, use_cache=True)
        cache = output_cache(out)
        tokens = out.logits[:, -1].argmax(-1, keepdim=True).masked_fill(done.unsqueeze(1), config.pad_token_id)
        generated.append(tokens)
        done |= tokens.squeeze(1) == config.eos_token_id
        if bool(done.all()):
            break
    return torch.cat(generated, dim=1)


@torch.no_grad()
def hand_beam_search(
    model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, num_beams: int, max_new_tokens: int,
    length_penalty: float = 1.0,
) -> list[list[int]]:
    """Beam search over a batch, all rows x beams in one decoder call per step (the matched semantics)."""
    config = model.config
    device = input_ids.device
    batch, k = input_ids.shape[0], num_beams
    encoder_outputs = encode(model, input_ids, attention_mask)
    encoder_outputs = type(encoder_outputs)(**{name: value.repeat_interleave(k, dim=0)
                                               for name, value in encoder_outputs.items()})
    mask = None if attention_mask is None else attention_mask.repeat_interleave(k, dim=0)
    tokens = torch.full((batch * k, 1), config.decoder_start_token_id, device=device)
    scores = torch.zeros(batch, k, device=device)
    scores[:, 1:] = -1e9  # every beam starts as the same empty hypothesis: keep one
    history = torch.empty(batch, k, 0, dtype=torch.long, device=device)
    finished = [[] for _ in range(batch)]
    done = [False] * batch
    cache = None
    for length in range(1, max_new_tokens + 1):
        out = model(encoder_outputs=encoder_outputs, attention_mask=mask, decoder_input_ids=tokens,
                    cache=cache, use_cache=True)
        cache = output_cache(out)
        log_probs = F.log_softmax(out.logits[:, -1].float(), dim=-1)
        vocab = log_probs.shape[-1]
        totals = (log_probs.view(batch, k, vocab) + scores.unsqueeze(-1)).view(batch, k * vocab)
        top_scores, top_index = totals.topk(2 * k, dim=1)
        top_beam, top_token = top_index // vocab, top_index % vocab
        ends = (top_token == config.eos_token_id) | (length == max_new_tokens)
        # Live beams: the best k candidates that do not end here (never fewer than k among 2k).
        keep = (top_scores - ends.float() * 1e9).topk(k, dim=1).indices
        beam_source = top_beam.gather(1, keep)
        new_history = torch.cat([history.gather(1, beam_source.unsqueeze(-1).expand_as(history)),
                                 top_token.gather(1, keep).unsqueeze(-1)], dim=-1)
        ends_cpu, normalised = ends[:, :k].tolist(), (top_scores[:, :k] / length**length_penalty).tolist()
        for row in range(batch):
            if done[row]:
                continue
            for rank in range(k):
                if ends_cpu[row][rank]:
                    sequence = history[row, top_beam[row, rank]].tolist() + [int(top_token[row, rank])]
                    finished[row].append((normalised[row][rank], sequence))
            finished[row] = sorted(finished[row], key=lambda item: item[0], reverse=True)[:k]
            done[row] = len(finished[row]) == k
        if all(done):
            break
        scores = top_scores.gather(1, keep)
        history = new_history
        flat = (beam_source + torch.arange(batch, device=device).unsqueeze(1) * k).flatten()
        cache.reorder_cache(flat)
        tokens = new_history[:, :, -1].reshape(batch * k, 1)
    return [rows[0][1] for rows in finished]
