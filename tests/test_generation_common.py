"""GenerationTesterMixin: generate() on our models against hand-written references.

Greedy and sampling are compared with loops that recompute the whole prefix at every step without a cache; beam
search with exhaustive search over a tiny vocabulary (../shared/GENERATION.md, "Exactness of beam search"). A
dedicated test breaks the cache's reordering and checks that the beam test then fails.

generate() decodes with our loop (models/decoding.py) by default, and with GenerationMixin's own where the call asks
for per-step scores (``SCORED_SEARCH``): the tests that ask for them run twice (the ``loop`` fixture), by default
and with our loop named (``custom_generate=decode``), which returns the same sequences and beam scores.
"""

import pytest
import torch
from transformers import pipeline

from hf_seqmodels.models.decoding import decode
from tests.test_modeling_common import WORDS, collate, make_model, make_tokenizer

NEW_TOKENS = 3
NO_EOS = {"eos_token_id": None, "max_new_tokens": NEW_TOKENS}  # no early stop: every run has NEW_TOKENS tokens
# Deterministic search returning its scores; with length_penalty=0 a beam's score is its sum of log-probs.
SCORED_SEARCH = {**NO_EOS, "min_new_tokens": NEW_TOKENS, "length_penalty": 0.0, "do_sample": False,
                 "output_scores": True, "return_dict_in_generate": True}
# The decoding loops a scored search is checked with: generate()'s default (for scores, GenerationMixin's own loop),
# and ours named.
LOOPS = {"default": {}, "ours": {"custom_generate": decode}}


def prompt_batch(model, examples: list[dict]) -> dict[str, torch.Tensor]:
    """generate()'s inputs for ``examples``: prompts padded on the left, or sources (right) for encoder-decoders."""
    side = "right" if model.config.is_encoder_decoder else "left"
    return collate([{"input_ids": example["input_ids"]} for example in examples], model.config.pad_token_id, side)


def start_of(model, prompts: torch.Tensor) -> torch.Tensor:
    """What generate() returns before the new tokens: the prompts, or the decoder start token."""
    if not model.config.is_encoder_decoder:
        return prompts
    start = model.generation_config.decoder_start_token_id
    start = model.generation_config.bos_token_id if start is None else start
    return torch.full((prompts.shape[0], 1), start)


def full_logits(model, prompts: torch.Tensor, sequences: torch.Tensor) -> torch.Tensor:
    """Logits at every position of ``sequences``, recomputed from scratch without a cache.

    ``prompts`` (unpadded, one row per row of ``sequences``) are the encoder's inputs for an encoder-decoder, whose
    ``sequences`` are decoder inputs; a decoder-only model reads ``sequences`` (which begin with the prompts) alone.
    """
    if model.config.is_encoder_decoder:
        return model(input_ids=prompts, decoder_input_ids=sequences, use_cache=False).logits
    return model(input_ids=sequences, use_cache=False).logits


def exhaustive_search(model, prompt: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` most probable continuations of ``NEW_TOKENS`` tokens of one prompt ``(1, S)`` and their log-probs,
    by scoring every one of the ``vocab_size ** NEW_TOKENS`` continuations."""
    continuations = torch.cartesian_prod(*[torch.arange(model.config.vocab_size)] * NEW_TOKENS)
    start = start_of(model, prompt)
    sequences = torch.cat([start.expand(len(continuations), -1), continuations], dim=1)
    with torch.no_grad():
        logits = full_logits(model, prompt.expand(len(continuations), -1), sequences[:, :-1])
    log_probs = logits[:, start.shape[1] - 1 :].log_softmax(-1)
    scores = log_probs.gather(-1, continuations.unsqueeze(-1)).squeeze(-1).sum(-1)
    top = scores.topk(k)
    return continuations[top.indices], top.values


class GenerationTesterMixin:
    """Checks generate() (greedy, sampling, beam search, batching, cache) and the text-generation pipeline.

    The ``tester`` fixture (see ``ModelTesterMixin``) also provides:

    - ``generative_model_classes``: the classes that generate: ``*ForCausalLM`` (prompts are the examples'
      ``input_ids``, left-padded in batches) or ``*ForConditionalGeneration`` (sources are the examples'
      ``input_ids``, right-padded, loaded through ``AutoModelForSeq2SeqLM``; the decoder starts from
      ``decoder_start_token_id``, else ``bos_token_id``; ``decoder_input_ids`` of the examples are unused here).
    - ``cache_class``: the type of the model's cache during generation (``RecurrentCache``,
      ``EncoderDecoderCache``, ...); ``test_beam_search_needs_reorder_cache`` makes its ``reorder_cache`` a no-op.
    - ``cache_implementations``: the ``generate(cache_implementation=...)`` values the models accept besides the
      default, each checked to give the default's results and an exact beam search.

    ``get_config`` must give a vocabulary of at most 16 tokens: exact beam search keeps ``vocab_size ** 2`` beams.
    """

    @pytest.fixture(params=list(LOOPS))
    def loop(self, request) -> dict:
        """The generate() options that choose the decoding loop of a scored search (``LOOPS``)."""
        return LOOPS[request.param]

    def generative_models(self, tester):
        for model_class in tester.generative_model_classes:
            config = tester.get_config(model_class)
            yield make_model(model_class, config), tester.get_examples(config)

    def test_greedy_matches_hand_loop(self, tester):
        for model, examples in self.generative_models(tester):
            for example in examples:
                prompt = example["input_ids"][None]
                sequence = start_of(model, prompt)
                with torch.no_grad():
                    for _ in range(NEW_TOKENS):
                        next_token = full_logits(model, prompt, sequence)[:, -1].argmax(-1, keepdim=True)
                        sequence = torch.cat([sequence, next_token], dim=1)
                    generated = model.generate(**prompt_batch(model, [example]), do_sample=False, **NO_EOS)
                assert torch.equal(generated, sequence), f"{generated} != {sequence}"

    def test_cache_matches_no_cache(self, tester, loop):
        for model, examples in self.generative_models(tester):
            inputs = prompt_batch(model, examples)
            for search in ({"num_beams": 1}, {"num_beams": 3, "num_return_sequences": 2}):
                kwargs = {**inputs, **SCORED_SEARCH, **search, **loop}
                with torch.no_grad():
                    cached = model.generate(**kwargs, use_cache=True)
                    uncached = model.generate(**kwargs, use_cache=False)
                assert torch.equal(cached.sequences, uncached.sequences), search
                torch.testing.assert_close(cached.scores, uncached.scores, rtol=0, atol=1e-4)

    def test_batched_generation_matches_one_by_one(self, tester, loop):
        for model, examples in self.generative_models(tester):
            for search in ({"num_beams": 1}, {"num_beams": 3}):
                with torch.no_grad():
                    batched = model.generate(**prompt_batch(model, examples), **SCORED_SEARCH, **search, **loop)
                    for i, example in enumerate(examples):
                        alone = model.generate(**prompt_batch(model, [example]), **SCORED_SEARCH, **search, **loop)
                        assert torch.equal(batched.sequences[i, -NEW_TOKENS:], alone.sequences[0, -NEW_TOKENS:])
                        if "sequences_scores" in alone:
                            torch.testing.assert_close(
                                batched.sequences_scores[i], alone.sequences_scores[0], rtol=0, atol=1e-4
                            )

    def exact_beam_search(self, model, example, k: int = 3, **options):
        """Beam search wide enough to keep every prefix: its ``k`` best equal exhaustive search's."""
        vocab_size = model.config.vocab_size
        assert vocab_size <= 16, f"vocab_size={vocab_size}: exact beam search needs a tiny vocabulary"
        with torch.no_grad():
            out = model.generate(**prompt_batch(model, [example]), **SCORED_SEARCH,
                                 num_beams=vocab_size ** (NEW_TOKENS - 1), num_return_sequences=k, **options)
        return out.sequences[:, -NEW_TOKENS:], out.sequences_scores

    def test_beam_search_is_exact(self, tester, loop):
        for model, examples in self.generative_models(tester):
            for example in examples[:2]:
                sequences, scores = self.exact_beam_search(model, example, **loop)
                expected_sequences, expected_scores = exhaustive_search(model, example["input_ids"][None], k=3)
                assert torch.equal(sequences, expected_sequences), f"{sequences} != {expected_sequences}"
                torch.testing.assert_close(scores, expected_scores, rtol=0, atol=1e-4)

    def test_beam_search_needs_reorder_cache(self, tester, monkeypatch, loop):
        """With a cache that does not follow the beams, the exact beam test above fails: it has teeth."""
        monkeypatch.setattr(tester.cache_class, "reorder_cache", lambda cache, beam_idx: None)
        for model, examples in self.generative_models(tester):
            example = examples[0]
            sequences, scores = self.exact_beam_search(model, example, **loop)
            expected_sequences, expected_scores = exhaustive_search(model, example["input_ids"][None], k=3)
            assert not (torch.equal(sequences, expected_sequences) and torch.allclose(scores, expected_scores))

    def test_cache_implementations_match_the_default(self, tester, loop):
        for implementation in tester.cache_implementations:
            for model, examples in self.generative_models(tester):
                inputs = prompt_batch(model, examples)
                for search in ({"num_beams": 1}, {"num_beams": 3, "num_return_sequences": 2}):
                    kwargs = {**inputs, **SCORED_SEARCH, **search, **loop}
                    with torch.no_grad():
                        default = model.generate(**kwargs)
                        other = model.generate(**kwargs, cache_implementation=implementation)
                    assert torch.equal(default.sequences, other.sequences), (implementation, search)
                    torch.testing.assert_close(default.scores, other.scores, rtol=0, atol=1e-5)
                example = examples[0]
                sequences, scores = self.exact_beam_search(model, example, cache_implementation=implementation,
                                                           **loop)
                expected_sequences, expected_scores = exhaustive_search(model, example["input_ids"][None], k=3)
                assert torch.equal(sequences, expected_sequences), implementation
                torch.testing.assert_close(scores, expected_scores, rtol=0, atol=1e-4)

    def test_unknown_cache_implementation(self, tester):
        if not tester.cache_implementations:
            pytest.skip("no cache implementations besides the default")
        for model, examples in self.generative_models(tester):
            with pytest.raises(ValueError, match="does not apply to a recurrent state"):
                model.generate(**prompt_batch(model, examples[:1]), max_new_tokens=2, cache_implementation="offloaded")

    def test_n_best_lists(self, tester, loop):
        """num_return_sequences: distinct hypotheses, best first, each scored with its true log-probability."""
        for model, examples in self.generative_models(tester):
            example = examples[0]
            prompt = example["input_ids"][None]
            with torch.no_grad():
                out = model.generate(**prompt_batch(model, [example]), **SCORED_SEARCH, num_beams=4,
                                     num_return_sequences=4, **loop)
                new = out.sequences[:, -NEW_TOKENS:]
                sequences = torch.cat([start_of(model, prompt).expand(len(new), -1), new], dim=1)
                log_probs = full_logits(model, prompt.expand(len(new), -1), sequences[:, :-1]).log_softmax(-1)
            scores = log_probs[:, -NEW_TOKENS:].gather(-1, new.unsqueeze(-1)).sum((1, 2))
            assert len({tuple(row.tolist()) for row in new}) == len(new), new
            assert bool((out.sequences_scores[:-1] >= out.sequences_scores[1:]).all()), out.sequences_scores
            torch.testing.assert_close(out.sequences_scores, scores, rtol=0, atol=1e-4)

    def test_sampling_matches_hand_loop(self, tester):
        """Sampling with a seed draws what a hand loop with the same seed, temperature and top-k draws."""
        temperature, top_k, seed = 0.7, 4, 7
        for model, examples in self.generative_models(tester):
            length = min(len(example["input_ids"]) for example in examples)
            prompts = torch.stack([example["input_ids"][:length] for example in examples])
            sequence = start_of(model, prompts)
            torch.manual_seed(seed)
            with torch.no_grad():
                for _ in range(NEW_TOKENS):
                    logits = full_logits(model, prompts, sequence)[:, -1] / temperature
                    logits = logits.masked_fill(logits < logits.topk(top_k).values[:, -1:], float("-inf"))
                    next_token = torch.multinomial(logits.softmax(-1), num_samples=1)
                    sequence = torch.cat([sequence, next_token], dim=1)
                torch.manual_seed(seed)
                sampled = model.generate(input_ids=prompts, do_sample=True, temperature=temperature, top_k=top_k,
                                         top_p=1.0, **NO_EOS)
            assert torch.equal(sampled, sequence), f"{sampled} != {sequence}"

    def test_top_k_1_sampling_is_greedy(self, tester):
        for model, examples in self.generative_models(tester):
            inputs = prompt_batch(model, examples)
            with torch.no_grad():
                greedy = model.generate(**inputs, do_sample=False, **NO_EOS)
                sampled = model.generate(**inputs, do_sample=True, top_k=1, **NO_EOS)
            assert torch.equal(sampled, greedy)

    def test_text_generation_pipeline(self, tester):
        for model, _ in self.generative_models(tester):
            if model.config.is_encoder_decoder:
                pytest.skip("transformers 5 has no text-to-text pipeline")
            tokenizer = make_tokenizer(model.config.vocab_size)
            prompt = " ".join(WORDS[:3])
            ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
            with torch.no_grad():
                new_tokens = model.generate(ids, do_sample=False, **NO_EOS)[0, ids.shape[1] :]
            generator = pipeline("text-generation", model=model, tokenizer=tokenizer)
            result = generator(prompt, do_sample=False, **NO_EOS)  # the prompt, then the new words after a space
            assert result[0]["generated_text"] == prompt + tokenizer.decode(new_tokens, skip_special_tokens=True)
