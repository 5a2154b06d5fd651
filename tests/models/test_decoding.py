"""Our decoding loop against GenerationMixin's own (``generate(custom_generate=None)``) on tiny random models of every
generative family: the same tokens, scores within 1e-5, fewer decoder rows; and a saved folder that runs it where
hf_seqmodels is not installed, as the package's classes do.

Our loop runs through plain ``generate()``, which takes it by default; where a test compares what ``generate()``
leaves to GenerationMixin's loop (per-step scores, with ``return_dict_in_generate``), it names the loop:
``custom_generate=decode``."""

import functools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from transformers import GenerationMixin, StoppingCriteria, StoppingCriteriaList

from hf_seqmodels import (
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentForCausalLM,
    TransformerForCausalLM,
    TransformerForConditionalGeneration,
)
from hf_seqmodels.models import decoding
from hf_seqmodels.models.decoding import decode, top_k
from hf_seqmodels.models.generation_utils import SeqModelsGenerationMixin
from tests.models.test_modeling_attention_seq2seq import tiny_config as attention_seq2seq_config
from tests.models.test_modeling_recurrent import RecurrentModelTester
from tests.models.test_modeling_transformer import tiny_config as transformer_config
from tests.test_generation_common import prompt_batch
from tests.test_modeling_common import EOS, REMOTE_CODE_SCRIPT, make_model

FAMILIES = {
    "gru_lm": lambda: (RecurrentForCausalLM, RecurrentModelTester("gru").get_config(RecurrentForCausalLM)),
    "lstm_lm": lambda: (RecurrentForCausalLM, RecurrentModelTester("lstm").get_config(RecurrentForCausalLM)),
    "attention_gru_bahdanau": lambda: (AttentionSeq2SeqForConditionalGeneration, attention_seq2seq_config(
        attention_type="bahdanau")),
    "attention_lstm_input_feeding": lambda: (AttentionSeq2SeqForConditionalGeneration, attention_seq2seq_config(
        cell_type="lstm", attention_type="luong_concat", input_feeding=True)),
    "transformer": lambda: (TransformerForConditionalGeneration, transformer_config(is_encoder_decoder=True)),
    "transformer_lm": lambda: (TransformerForCausalLM, transformer_config(is_encoder_decoder=False)),
}
BEAM_SETTINGS = [
    {"num_beams": 3, "num_return_sequences": 3, "length_penalty": 0.0},
    {"num_beams": 4, "length_penalty": 2.0, "early_stopping": True, "num_return_sequences": 2},
    {"num_beams": 3, "length_penalty": -1.0, "early_stopping": "never"},
    {"num_beams": 3, "length_penalty": 1.5, "early_stopping": "never"},
]
SEEDS = (0, 1)


@functools.cache
def model_and_prompts(family: str, seed: int):
    """A tiny random model of ``family``, a batch of 4 prompts (sources) of lengths 5, 2, 7, 3, padded on the left
    for a decoder-only model, on the right for an encoder-decoder, and the generate() options of the tests: 8 new
    tokens at most, and EOS made likelier (by the 20th percentile of its gap to the best token in a greedy run), so
    that the sentences of a batch finish at different steps."""
    model_class, config = FAMILIES[family]()
    model = make_model(model_class, config, seed=seed)
    vocab = getattr(config, "source_vocab_size", None) or config.vocab_size
    generator = torch.Generator().manual_seed(seed + 10)
    examples = [{"input_ids": torch.randint(3, vocab, (length,), generator=generator)} for length in (5, 2, 7, 3)]
    prompts = prompt_batch(model, examples)
    with torch.no_grad():
        logits = torch.stack(model.generate(**prompts, max_new_tokens=8, output_logits=True,
                                            return_dict_in_generate=True).logits)
    gaps = logits.max(dim=-1).values - logits[..., EOS]
    return model, prompts, {"max_new_tokens": 8, "sequence_bias": {(EOS,): float(gaps.quantile(0.2)) + 1e-3}}


GENERATION_MIXINS = {"custom_generate": None}  # generate() with GenerationMixin's own decoding methods
# generate() with our loop: by default; named where the call asks for per-step scores (GenerationMixin's by default)
OURS, OURS_WITH_SCORES = {}, {"custom_generate": decode}


def both(model, prompts, options: dict, seed: int = 0, **more):
    """GenerationMixin's result and ours for the same options, each after ``torch.manual_seed(seed)``."""
    results = []
    ours = OURS_WITH_SCORES if more.get("output_scores") else OURS
    for loop in (GENERATION_MIXINS, ours):
        torch.manual_seed(seed)
        with torch.no_grad():
            results.append(model.generate(**prompts, **options, **more, **loop))
    return results


def assert_scores_of_live_rows_equal(theirs: tuple, ours: tuple) -> None:
    """Per-step scores: ours are GenerationMixin's in every row still computed (rows that had left hold -inf)."""
    assert len(theirs) == len(ours)
    for their_step, our_step in zip(theirs, ours):
        computed = ~(our_step == float("-inf")).all(dim=1)
        torch.testing.assert_close(our_step[computed], their_step[computed], rtol=0, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_search_equals_generation_mixin(family, seed):
    model, prompts, options = model_and_prompts(family, seed)
    theirs, ours = both(model, prompts, options, output_scores=True, return_dict_in_generate=True)
    assert torch.equal(ours.sequences, theirs.sequences), (ours.sequences, theirs.sequences)
    assert_scores_of_live_rows_equal(theirs.scores, ours.scores)
    with torch.no_grad():
        assert torch.equal(model.generate(**prompts, **options), theirs.sequences)


@pytest.mark.parametrize("family", FAMILIES)
def test_sampling_with_the_same_seed_gives_the_same_tokens(family):
    model, prompts, options = model_and_prompts(family, 0)
    for seed in SEEDS:
        theirs, ours = both(model, prompts, options, seed=seed, do_sample=True, top_k=8, top_p=0.9, temperature=1.3)
        assert torch.equal(ours, theirs), (seed, ours, theirs)


@pytest.mark.parametrize("settings", BEAM_SETTINGS, ids=str)
@pytest.mark.parametrize("family", FAMILIES)
def test_beam_search_equals_generation_mixin(family, settings):
    for seed in SEEDS:
        model, prompts, options = model_and_prompts(family, seed)
        theirs, ours = both(model, prompts, options, output_scores=True, return_dict_in_generate=True, **settings)
        assert torch.equal(ours.sequences, theirs.sequences), (seed, ours.sequences, theirs.sequences)
        torch.testing.assert_close(ours.sequences_scores, theirs.sequences_scores, rtol=0, atol=1e-5)
        assert torch.equal(ours.beam_indices, theirs.beam_indices)
        assert_scores_of_live_rows_equal(theirs.scores, ours.scores)
        if seed == 0:  # without return_dict_in_generate: the sequences alone, generate()'s default loop
            assert torch.equal(model.generate(**prompts, **options, **settings), theirs.sequences)


class EndsAtTokenOrLength(StoppingCriteria):
    """A criterion of the user's own, so that the loops take their general path (``StoppingCriteriaList`` on the
    candidate sequences): a sequence ends at ``token`` or at ``length`` tokens, where every candidate ends."""

    def __init__(self, token: int, length: int):
        self.token, self.length = token, length

    def __call__(self, input_ids: torch.Tensor, scores, **kwargs) -> torch.Tensor:
        return (input_ids[:, -1] == self.token) | (input_ids.shape[1] >= self.length)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("search", [{}, {"num_beams": 3}, {"num_beams": 3, "early_stopping": True}],
                         ids=["greedy", "beam", "beam_early_stopping"])
def test_a_stopping_criterion_of_ones_own_gives_generation_mixins_results(family, search):
    model, prompts, options = model_and_prompts(family, 0)
    prompt_length = 1 if model.config.is_encoder_decoder else prompts["input_ids"].shape[1]
    for length in (prompt_length + 3, prompt_length + 20):  # every candidate ends at the first; the second not met
        criteria = StoppingCriteriaList([EndsAtTokenOrLength(token=5, length=length)])
        theirs, ours = both(model, prompts, options, stopping_criteria=criteria, output_scores=True,
                            return_dict_in_generate=True, **search)
        assert torch.equal(ours.sequences, theirs.sequences), (length, ours.sequences, theirs.sequences)
        if search:
            torch.testing.assert_close(ours.sequences_scores, theirs.sequences_scores, rtol=0, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("search", [{}, {"num_beams": 3, "early_stopping": True}], ids=["greedy", "beam"])
def test_several_eos_ids_give_generation_mixins_results(family, search):
    """The loops' own end test compares the tokens with one EOS id, and looks them up among several: here also the
    first token greedy search gives the first prompt, which ends some hypotheses early."""
    model, prompts, options = model_and_prompts(family, 0)
    with torch.no_grad():
        first = model.generate(**prompts, **{**options, "max_new_tokens": 1})[0, -1].item()
    theirs, ours = both(model, prompts, options, eos_token_id=[EOS, first], output_scores=True,
                        return_dict_in_generate=True, **search)
    assert torch.equal(ours.sequences, theirs.sequences), (ours.sequences, theirs.sequences)
    if search:
        torch.testing.assert_close(ours.sequences_scores, theirs.sequences_scores, rtol=0, atol=1e-5)


def decoder_rows(model, prompts, options: dict) -> tuple[int, int, torch.Tensor, torch.Tensor]:
    """Rows the model computes over a whole generate() call, GenerationMixin's and ours, and both results (each
    after ``torch.manual_seed(0)``)."""
    counts = []

    def count(module, args):  # at the output layer, which every step calls, through forward or decoding_step
        counts[-1] += args[0].shape[0]

    handle = model.get_output_embeddings().register_forward_pre_hook(count)
    try:
        results = []
        for loop in (GENERATION_MIXINS, OURS):
            counts.append(0)
            torch.manual_seed(0)
            with torch.no_grad():
                results.append(model.generate(**prompts, **options, **loop))
    finally:
        handle.remove()
    return counts[0], counts[1], *results


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("search", [{}, {"num_beams": 3}], ids=["greedy", "beam"])
def test_finished_sentences_leave_the_batch(family, search):
    """The decoder computes fewer rows than under GenerationMixin (never more), with the same results."""
    totals = [0, 0]
    for seed in SEEDS:
        model, prompts, options = model_and_prompts(family, seed)
        theirs, ours, their_result, our_result = decoder_rows(model, prompts, {**options, **search})
        assert torch.equal(our_result, their_result) and ours <= theirs, (seed, ours, theirs)
        totals = [totals[0] + theirs, totals[1] + ours]
    assert totals[1] < totals[0], totals


@pytest.mark.parametrize("family", FAMILIES)
def test_beam_search_takes_its_first_step_once_per_sentence(family):
    """Every beam of a sentence starts as the same hypothesis: the first step (the prompt, or the decoder start)
    runs on one row per sentence and is shared by its beams, with GenerationMixin's results."""
    model, prompts, options = model_and_prompts(family, 0)
    rows = {}  # per generate() call, the rows of each call of the output layer
    handle = model.get_output_embeddings().register_forward_pre_hook(
        lambda module, args: rows[len(rows) - 1].append(args[0].shape[0]))
    try:
        with torch.no_grad():
            rows[0] = []
            theirs = model.generate(**prompts, **options, num_beams=3, **GENERATION_MIXINS)
            rows[1] = []
            ours = model.generate(**prompts, **options, num_beams=3)
    finally:
        handle.remove()
    sentences = next(iter(prompts.values())).shape[0]
    assert torch.equal(ours, theirs)
    assert (rows[0][0], rows[1][0], rows[1][1]) == (3 * sentences, sentences, 3 * sentences), rows


def test_beam_search_steps_read_each_source_once_for_its_beams(monkeypatch):
    """After the first step, a sentence's beams share one row of the encoder outputs, of the source mask and of the
    projected keys (generate() repeats them for every beam): the rows left are those of the sentences still
    decoding, with GenerationMixin's results."""
    model, prompts, options = model_and_prompts("attention_lstm_input_feeding", 0)
    given, read = [], []

    def recording_decode(model, input_ids, logits_processor, stopping_criteria, generation_config, **model_kwargs):
        given.append(model_kwargs["encoder_outputs"].last_hidden_state)
        return decode(model, input_ids, logits_processor, stopping_criteria, generation_config, **model_kwargs)

    def recording_step(input_ids, cache, *args, **kwargs):
        source = cache.per_input
        read.append((input_ids.shape[0], source["memory"], source["memory_mask"], source["projected_keys"]))
        return step(input_ids, cache, *args, **kwargs)

    step = model.decoding_step
    monkeypatch.setattr(model, "decoding_step", recording_step)
    with torch.no_grad():
        theirs = model.generate(**prompts, **options, num_beams=3, **GENERATION_MIXINS)
        ours = model.generate(**prompts, **options, num_beams=3, custom_generate=recording_decode)
    assert torch.equal(ours, theirs)
    sentences = prompts["input_ids"].shape[0]
    rows, memory, mask, keys = read[0]
    assert rows == 3 * sentences and memory.shape[0] == mask.shape[0] == keys.shape[0] == sentences
    torch.testing.assert_close(memory, given[0][::3], rtol=0, atol=0)
    assert torch.equal(mask, prompts["attention_mask"].bool())
    assert any(rows < 3 * sentences for rows, *_ in read)  # sentences left: the per-source tensors follow
    assert all(rows == 3 * memory.shape[0] == 3 * mask.shape[0] == 3 * keys.shape[0]
               for rows, memory, mask, keys in read)


@pytest.mark.parametrize("family", ["attention_lstm_input_feeding", "gru_lm"])
@pytest.mark.parametrize("search", [{}, {"num_beams": 3}], ids=["greedy", "beam"])
def test_a_model_with_a_decoding_step_runs_forward_once(family, search):
    """After the first step, the loop steps through the model's ``decoding_step`` (without forward's checks and
    output objects): forward runs once per generate() call, with GenerationMixin's results."""
    model, prompts, options = model_and_prompts(family, 0)
    calls = []
    handle = model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        with torch.no_grad():
            theirs = model.generate(**prompts, **options, **search, **GENERATION_MIXINS)
            their_calls = len(calls)
            ours = model.generate(**prompts, **options, **search)
    finally:
        handle.remove()
    assert torch.equal(ours, theirs)
    assert their_calls > 1 and len(calls) - their_calls == 1, (their_calls, len(calls))


def test_what_rows_cannot_follow_is_left_to_generation_mixin():
    """A processor with per-row state (``prefix_allowed_tokens_fn``) and beam sampling: GenerationMixin decodes,
    every row to the end."""
    model, prompts, options = model_and_prompts("attention_gru_bahdanau", 0)
    for search in ({"prefix_allowed_tokens_fn": lambda batch_id, sequence: [EOS, 4 + batch_id % 3, 7],
                    "num_beams": 2}, {"do_sample": True, "num_beams": 2}):
        theirs, ours, their_result, our_result = decoder_rows(model, prompts, {**options, **search})
        assert torch.equal(our_result, their_result) and ours == theirs, search


def _refused(method):
    """``method`` (its signature kept, which generate() reads) raising when called."""
    @functools.wraps(method)
    def refused(*args, **kwargs):
        raise AssertionError(f"GenerationMixin's {method.__name__} decoded, not our loop")
    return refused


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("search", [{}, {"num_beams": 3}], ids=["greedy", "beam"])
def test_one_sentence_is_ours_whatever_the_cache_and_processors(family, search, monkeypatch):
    """A batch of one sentence drops no rows, so our loop decodes it even with a processor that keeps per-row state
    and a static cache (what it leaves to GenerationMixin in larger batches), with GenerationMixin's results."""
    model, prompts, options = model_and_prompts(family, 0)
    one = {name: value[:1] for name, value in prompts.items()}
    options = {**options, **search, "prefix_allowed_tokens_fn": lambda batch_id, sequence: [EOS, 4, 5, 7, 9],
               "return_dict_in_generate": True, "output_scores": True}
    if family.startswith(("gru", "lstm", "attention")):
        options["cache_implementation"] = "static"
    with torch.no_grad():
        theirs = model.generate(**one, **options, **GENERATION_MIXINS)
        for method in ("_sample", "_beam_search"):  # so that only our loop can decode
            monkeypatch.setattr(GenerationMixin, method, _refused(getattr(GenerationMixin, method)))
        ours = model.generate(**one, **options, **OURS_WITH_SCORES)
        assert torch.equal(model.generate(**one, **{**options, "return_dict_in_generate": False}), theirs.sequences)
    assert torch.equal(ours.sequences, theirs.sequences), (ours.sequences, theirs.sequences)
    assert_scores_of_live_rows_equal(theirs.scores, ours.scores)


def test_a_mode_the_loop_does_not_run_is_refused():
    """Named, our loop refuses a mode it does not run; by default generate() leaves it to transformers (which refuses
    a search moved to the Hub unless asked to load it)."""
    model, prompts, _ = model_and_prompts("transformer", 0)
    with pytest.raises(ValueError, match="not a decoding mode of hf_seqmodels' loop"):
        model.generate(**prompts, max_new_tokens=3, penalty_alpha=0.6, top_k=4, custom_generate=decode)
    with pytest.raises(ValueError, match="transformers-community/contrastive-search"):
        model.generate(**prompts, max_new_tokens=3, penalty_alpha=0.6, top_k=4)


def counted_loops(monkeypatch) -> dict:
    """Calls into our loop's searches and into GenerationMixin's decoding methods, counted by name."""
    counts = {}
    for owner, name in ((decoding, "beam_search"), (decoding, "greedy_or_sample"), (GenerationMixin, "_sample"),
                        (GenerationMixin, "_beam_search"), (GenerationMixin, "_assisted_decoding")):
        def counting(*args, _method=getattr(owner, name), _name=name, **kwargs):
            counts[_name] = counts.get(_name, 0) + 1
            return _method(*args, **kwargs)
        monkeypatch.setattr(owner, name, functools.wraps(getattr(owner, name))(counting))
    return counts


# generate() options, and whether generate() runs our loop for them by default: where it returns what GenerationMixin's
# own returns; not where it would return other per-step scores or logits, or no cache, nor for what generate() hands
# only its own decoding methods (`test_a_streamer_gets_generation_mixins_loop`), nor for the modes our loop does not
# run.
BY_DEFAULT = {
    "beam": ({"num_beams": 3}, True),
    "greedy": ({}, True),
    "sampling": ({"do_sample": True, "top_k": 8}, True),
    "beam, dict without cache": ({"num_beams": 3, "return_dict_in_generate": True, "use_cache": False}, True),
    "beam, scores": ({"num_beams": 3, "return_dict_in_generate": True, "output_scores": True}, False),
    "beam, dict with cache": ({"num_beams": 3, "return_dict_in_generate": True}, False),
    "greedy, logits": ({"return_dict_in_generate": True, "output_logits": True}, False),
    "beam sampling": ({"num_beams": 3, "do_sample": True}, False),
    "prompt lookup": ({"prompt_lookup_num_tokens": 2}, False),
}


@pytest.mark.parametrize("case", BY_DEFAULT)
def test_generate_runs_our_loop_where_it_returns_what_generation_mixin_returns(case, monkeypatch):
    """By default generate() returns what GenerationMixin's own returns (every field; of the cache, its class),
    through our loop or, for the rest, GenerationMixin's decoding method."""
    options, runs_ours = BY_DEFAULT[case]
    family = "transformer_lm" if case == "prompt lookup" else "attention_gru_bahdanau"
    model, prompts, base = model_and_prompts(family, 0)
    if case == "prompt lookup":  # assisted decoding takes one sequence at a time
        prompts = {name: value[:1] for name, value in prompts.items()}
    method = ("_assisted_decoding" if "prompt_lookup_num_tokens" in options
              else "_beam_search" if options.get("num_beams", 1) > 1 else "_sample")
    counts = counted_loops(monkeypatch)
    results = []
    for loop in (GENERATION_MIXINS, OURS):
        torch.manual_seed(0)
        with torch.no_grad():
            results.append(model.generate(**prompts, **base, **options, **loop))
    theirs, ours = results
    if runs_ours:
        search = "beam_search" if method == "_beam_search" else "greedy_or_sample"
        assert counts == {method: 1, search: 1}, counts
    else:
        assert counts == {method: 2}, counts
    if isinstance(theirs, torch.Tensor):
        assert torch.equal(ours, theirs)
        return
    assert type(ours) is type(theirs) and ours.keys() == theirs.keys(), (ours.keys(), theirs.keys())
    for name in theirs:
        if isinstance(theirs[name], torch.Tensor):
            assert torch.equal(ours[name], theirs[name]), name
        elif isinstance(theirs[name], tuple):
            torch.testing.assert_close(ours[name], theirs[name], rtol=0, atol=0, msg=name)
        else:
            assert type(ours[name]) is type(theirs[name]), name


def test_a_streamer_gets_generation_mixins_loop(monkeypatch):
    """What generate() hands only a decoding method of its own choosing, such as a streamer, runs GenerationMixin's
    generate() whole: the streamer receives every token."""
    model, prompts, options = model_and_prompts("gru_lm", 0)
    received = []

    class Streamer:
        def put(self, value):
            received.append(value)

        def end(self):
            received.append(None)

    counts = counted_loops(monkeypatch)
    with torch.no_grad():
        streamed = model.generate(**{name: value[:1] for name, value in prompts.items()}, **options,
                                  streamer=Streamer())
    assert counts == {"_sample": 1}, counts
    assert received[-1] is None and len(received) == streamed.shape[1] - prompts["input_ids"].shape[1] + 2


def test_only_trust_remote_code_replaces_generate(tmp_path):
    """A saved folder loaded with the package installed keeps the class's generate() (our loop, from the package);
    with ``trust_remote_code=True`` its ``generate`` is the folder's ``custom_generate`` (our loop, from the
    folder)."""
    model, _, _ = model_and_prompts("gru_lm", 0)
    model.save_pretrained(tmp_path)
    assert RecurrentForCausalLM.from_pretrained(tmp_path).generate.__func__ is SeqModelsGenerationMixin.generate
    loaded = RecurrentForCausalLM.from_pretrained(tmp_path, trust_remote_code=True)
    assert loaded.generate.func.__module__.endswith("custom_generate.generate")


RUN_SAVED_GENERATE = REMOTE_CODE_SCRIPT[: REMOTE_CODE_SCRIPT.index("for case in")] + textwrap.dedent(
    """
    for case in torch.load(sys.argv[1]):
        model = getattr(transformers, case["auto_class"]).from_pretrained(case["folder"], trust_remote_code=True)
        generate = model.generate
        assert generate.func.__module__.endswith("custom_generate.generate"), generate
        loop = sys.modules[generate.func.__module__]
        rows = []
        model.register_forward_pre_hook(
            lambda module, args, kwargs: rows.append(kwargs.get("decoder_input_ids", kwargs.get("input_ids")).shape[0]),
            with_kwargs=True)
        scored = {"return_dict_in_generate": True, "output_scores": True}
        with torch.no_grad():
            sequences = model.generate(**case["prompts"], **case["options"])  # our loop, by default
            ours = sum(rows)
            named = model.generate(**case["prompts"], **case["options"], **scored, custom_generate=loop.decode)
            default = model.generate(**case["prompts"], **case["options"], **scored)  # GenerationMixin's loop
        assert torch.equal(sequences, case["sequences"]), (sequences, case["sequences"])
        assert ours < case["their_rows"], (ours, case["their_rows"])
        for result in (named, default):
            assert torch.equal(result.sequences, case["sequences"]), (result.sequences, case["sequences"])
            torch.testing.assert_close(result.sequences_scores, case["scores"], rtol=0, atol=1e-5)
        torch.testing.assert_close(default.scores, case["step_scores"], rtol=0, atol=1e-5)
        model.save_pretrained(case["folder"] + "_again")  # the code of a saved folder saves its loop again
        loop_file = "/custom_generate/generate.py"
        assert open(case["folder"] + "_again" + loop_file).read() == open(case["folder"] + loop_file).read()
        print("decoded", type(model).__name__, "rows", ours, "of", case["their_rows"])
    """
)


def blocked_package_env(tmp_path) -> dict:
    """The environment of a process that runs REMOTE_CODE_SCRIPT's opening (hf_seqmodels cannot be imported)."""
    return {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
            "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}


@pytest.mark.slow
def test_saved_folder_decodes_with_our_loop_where_the_package_is_not_installed(tmp_path):
    """``save_pretrained`` writes ``custom_generate/``, each code file once (at most 12 for an attention
    seq2seq); a process that cannot import hf_seqmodels loads the folder with ``trust_remote_code=True``, its
    ``generate()`` gives GenerationMixin's beams with fewer rows (asked for per-step scores, GenerationMixin's own
    results; our loop named, the same beams and beam scores), and a save from there carries the loop again."""
    cases = []
    for family, auto_class in (("attention_gru_bahdanau", "AutoModelForSeq2SeqLM"), ("gru_lm", "AutoModelForCausalLM"),
                               ("transformer", "AutoModelForSeq2SeqLM")):
        model, prompts, options = model_and_prompts(family, 0)
        folder = tmp_path / family
        model.save_pretrained(folder)
        code = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.py"))
        assert "custom_generate/generate.py" in code and len({path.split("/")[-1] for path in code}) == len(code), code
        if family.startswith("attention"):
            assert len(code) <= 12, code
        options = {**options, "num_beams": 3}
        their_rows, _, _, _ = decoder_rows(model, prompts, options)
        with torch.no_grad():
            theirs = model.generate(**prompts, **options, return_dict_in_generate=True, output_scores=True,
                                    **GENERATION_MIXINS)
        cases.append({"folder": str(folder), "auto_class": auto_class, "prompts": prompts, "options": options,
                      "sequences": theirs.sequences, "scores": theirs.sequences_scores, "step_scores": theirs.scores,
                      "their_rows": their_rows})
    torch.save(cases, tmp_path / "cases.pt")
    result = subprocess.run([sys.executable, "-c", RUN_SAVED_GENERATE, str(tmp_path / "cases.pt")], cwd=tmp_path,
                            env=blocked_package_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("decoded ") == len(cases), result.stdout


# Which code runs `model.generate(num_beams=5)`: the loop's `beam_search` wrapped, counting its calls and recording
# the frames above each, in the loop's file, the model's code and transformers' generation/utils.py. Run in this
# process on the package's loop, and in the process that loads a saved folder on the folder's.
TRACE_BEAM_SEARCH = textwrap.dedent(
    """
    import hashlib
    import pathlib
    import traceback

    import transformers

    GENERATION_UTILS = pathlib.Path(transformers.__file__).parent / "generation" / "utils.py"


    def trace_beam_search(loop, code_folder):
        # loop.beam_search counting its calls: each call's chain of (file, function) frames, the loop's file as
        # "loop", transformers' generation/utils.py as "transformers", a file of code_folder by its name. Returns
        # the calls and the unwrapped function.
        calls, search = [], loop.beam_search

        def traced(*args, **kwargs):
            chain = []
            for frame in traceback.extract_stack()[:-1]:
                path = pathlib.Path(frame.filename)
                if path == pathlib.Path(loop.__file__):
                    chain.append(("loop", frame.name))
                elif path == GENERATION_UTILS:
                    chain.append(("transformers", frame.name))
                elif path.parent == pathlib.Path(code_folder):
                    chain.append((path.name, frame.name))
            calls.append(chain + [("loop", "beam_search")])
            return search(*args, **kwargs)

        loop.beam_search = traced
        return calls, search


    def loop_identity(loop):
        # the loop's module name, the digest of its file and of beam_search's bytecode
        return {"module": loop.__name__, "sha256": hashlib.sha256(pathlib.Path(loop.__file__).read_bytes()).hexdigest(),
                "beam_search_code": hashlib.sha256(loop.beam_search.__code__.co_code).hexdigest()}
    """
)

RUN_TRACED_FOLDER = REMOTE_CODE_SCRIPT[: REMOTE_CODE_SCRIPT.index("for case in")] + TRACE_BEAM_SEARCH + textwrap.dedent(
    """
    import json

    case = torch.load(sys.argv[1])
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(case["folder"], trust_remote_code=True)
    loop = sys.modules[model.generate.func.__module__]
    identity = loop_identity(loop)
    calls, _ = trace_beam_search(loop, pathlib.Path(sys.modules[type(model).__module__].__file__).parent)
    with torch.no_grad():
        sequences = model.generate(**case["prompts"], num_beams=5, max_new_tokens=8)
    print(json.dumps({"class": type(model).__module__ + "." + type(model).__name__, "loop": identity,
                      "calls": calls, "sequences": sequences.tolist()}))
    """
)


@pytest.mark.slow
def test_package_class_and_saved_folder_run_the_same_beam_search(tmp_path):
    """``generate(num_beams=5)`` on AttentionSeq2SeqForConditionalGeneration, from the package's class and from its
    saved folder loaded with ``trust_remote_code=True`` in a process that cannot import hf_seqmodels: each calls our
    loop's ``beam_search`` once, through the same chain of the loop's functions (the package's class enters it
    through ``SeqModelsGenerationMixin.generate``, the folder's model through transformers' binding of the folder's
    ``custom_generate/generate.py``), in files of the same text; the outputs are identical, and GenerationMixin's."""
    model, prompts, _ = model_and_prompts("attention_gru_bahdanau", 0)
    folder = tmp_path / "attention_seq2seq"
    model.save_pretrained(folder)
    namespace = {}
    exec(TRACE_BEAM_SEARCH, namespace)
    identity = namespace["loop_identity"](decoding)
    calls, search = namespace["trace_beam_search"](decoding, Path(decoding.__file__).parent)
    try:
        with torch.no_grad():
            ours = model.generate(**prompts, num_beams=5, max_new_tokens=8)
    finally:
        decoding.beam_search = search
    with torch.no_grad():
        theirs = model.generate(**prompts, num_beams=5, max_new_tokens=8, **GENERATION_MIXINS)
    torch.save({"folder": str(folder), "prompts": prompts}, tmp_path / "case.pt")
    result = subprocess.run([sys.executable, "-c", RUN_TRACED_FOLDER, str(tmp_path / "case.pt")], cwd=tmp_path,
                            env=blocked_package_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    folder_run = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"\npackage: {type(model).__module__}.{type(model).__name__} {identity}\n  {calls}\n"
          f"folder: {folder_run['class']} {folder_run['loop']}\n  {folder_run['calls']}")

    assert folder_run["class"].startswith("transformers_modules.")
    assert folder_run["loop"]["module"].endswith("custom_generate.generate") and identity["module"] == decoding.__name__
    assert folder_run["loop"]["sha256"] == identity["sha256"]  # the folder's loop is decoding.py's text
    assert folder_run["loop"]["beam_search_code"] == identity["beam_search_code"]
    assert len(calls) == len(folder_run["calls"]) == 1, (calls, folder_run["calls"])
    chain = [("loop", "generate"), ("transformers", "generate"), ("loop", "decode_by_default"), ("loop", "decode"),
             ("loop", "beam_search")]
    assert [tuple(frame) for frame in folder_run["calls"][0]] == chain, folder_run["calls"]
    assert calls[0] == [("generation_utils.py", "generate")] + chain, calls
    assert torch.equal(ours, theirs) and ours.tolist() == folder_run["sequences"], (ours, folder_run["sequences"])


@pytest.mark.parametrize("family", ["gru_lm", "attention_gru_bahdanau"])
@pytest.mark.parametrize("search", [{}, {"num_beams": 3}])
def test_steps_write_their_logits_into_one_buffer(family, search):
    """After the first step, every step's logits land in the loop's one (rows, vocab) buffer, however many rows are
    still live: no rows x vocabulary allocation per step, and GenerationMixin's results."""
    model, prompts, options = model_and_prompts(family, 0)
    addresses = []

    def recording(*args, **kwargs):
        logits = type(model).decoding_step(model, *args, **kwargs)
        addresses.append((logits.data_ptr(), kwargs["out"].data_ptr(), len(logits)))
        return logits

    with torch.no_grad():
        theirs = model.generate(**prompts, **options, **search, **GENERATION_MIXINS)
        model.decoding_step = recording
        try:
            ours = model.generate(**prompts, **options, **search)
        finally:
            del model.decoding_step
    assert torch.equal(ours, theirs)
    rows = len(next(iter(prompts.values()))) * search.get("num_beams", 1)
    assert min(count for _, _, count in addresses) < rows, "no row left the batch: the test shows nothing"
    assert all(address == buffer for address, buffer, _ in addresses), addresses
    assert len({address for address, _, _ in addresses}) == 1, addresses


@pytest.mark.parametrize("shape, k", [((64, 5 * 6000), 10), ((9, 4 * 8000), 8), ((3, 50257), 6), ((1, 30000), 10)])
def test_top_k_finds_what_topk_finds(shape, k):
    """The two-pass top-k (best blocks first) against torch.topk: the same values and positions without ties; with
    ties (values from a few integers, -inf among them), the same values, at positions that hold them."""
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(shape, generator=generator)
    assert all(torch.equal(ours, theirs) for ours, theirs in zip(top_k(values, k), torch.topk(values, k)))
    tied = torch.randint(-3, 3, shape, generator=generator).float().masked_fill_(values > 1.5, float("-inf"))
    scores, positions = top_k(tied, k)
    assert torch.equal(scores, torch.topk(tied, k).values) and torch.equal(tied.gather(1, positions), scores)
    assert all(len(set(row)) == k for row in positions.tolist())
