"""Our decoding loop (``generate(custom_generate=decode)``) against GenerationMixin's own on tiny random models of
every generative family: the same tokens, scores within 1e-5, fewer decoder rows; and a saved folder that runs it
where hf_seqmodels is not installed."""

import functools
import subprocess
import sys
import textwrap

import pytest
import torch
from transformers import GenerationMixin, StoppingCriteria, StoppingCriteriaList

from hf_seqmodels import (
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentForCausalLM,
    TransformerForCausalLM,
    TransformerForConditionalGeneration,
)
from hf_seqmodels.models.decoding import decode, top_k
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


def both(model, prompts, options: dict, seed: int = 0, **more):
    """GenerationMixin's result and ours for the same options, each after ``torch.manual_seed(seed)``."""
    results = []
    for custom_generate in (None, decode):
        torch.manual_seed(seed)
        with torch.no_grad():
            results.append(model.generate(**prompts, **options, **more, custom_generate=custom_generate))
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
        if seed == 0:  # without return_dict_in_generate: the sequences alone
            assert torch.equal(model.generate(**prompts, **options, **settings, custom_generate=decode),
                               theirs.sequences)


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


def decoder_rows(model, prompts, options: dict) -> tuple[int, int, torch.Tensor, torch.Tensor]:
    """Rows the model computes over a whole generate() call, GenerationMixin's and ours, and both results (each
    after ``torch.manual_seed(0)``)."""
    counts = []

    def count(module, args):  # at the output layer, which every step calls, through forward or decoding_step
        counts[-1] += args[0].shape[0]

    handle = model.get_output_embeddings().register_forward_pre_hook(count)
    try:
        results = []
        for custom_generate in (None, decode):
            counts.append(0)
            torch.manual_seed(0)
            with torch.no_grad():
                results.append(model.generate(**prompts, **options, custom_generate=custom_generate))
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
            theirs = model.generate(**prompts, **options, num_beams=3)
            rows[1] = []
            ours = model.generate(**prompts, **options, num_beams=3, custom_generate=decode)
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
        theirs = model.generate(**prompts, **options, num_beams=3)
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
            theirs = model.generate(**prompts, **options, **search)
            their_calls = len(calls)
            ours = model.generate(**prompts, **options, **search, custom_generate=decode)
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
        theirs = model.generate(**one, **options)
        for method in ("_sample", "_beam_search"):  # so that only our loop can decode
            monkeypatch.setattr(GenerationMixin, method, _refused(getattr(GenerationMixin, method)))
        ours = model.generate(**one, **options, custom_generate=decode)
    assert torch.equal(ours.sequences, theirs.sequences), (ours.sequences, theirs.sequences)
    assert_scores_of_live_rows_equal(theirs.scores, ours.scores)


def test_a_mode_the_loop_does_not_run_is_refused():
    model, prompts, _ = model_and_prompts("transformer", 0)
    with pytest.raises(ValueError, match="not a decoding mode of hf_seqmodels' loop"):
        model.generate(**prompts, max_new_tokens=3, penalty_alpha=0.6, top_k=4, custom_generate=decode)


def test_only_trust_remote_code_replaces_generate(tmp_path):
    """A saved folder loaded with the package installed keeps GenerationMixin's generate(); with
    ``trust_remote_code=True`` its ``generate`` is the folder's ``custom_generate`` (our loop)."""
    model, _, _ = model_and_prompts("gru_lm", 0)
    model.save_pretrained(tmp_path)
    assert RecurrentForCausalLM.from_pretrained(tmp_path).generate.__func__ is GenerationMixin.generate
    loaded = RecurrentForCausalLM.from_pretrained(tmp_path, trust_remote_code=True)
    assert loaded.generate.func.__module__.endswith("custom_generate.generate")


RUN_SAVED_GENERATE = REMOTE_CODE_SCRIPT[: REMOTE_CODE_SCRIPT.index("for case in")] + textwrap.dedent(
    """
    for case in torch.load(sys.argv[1]):
        model = getattr(transformers, case["auto_class"]).from_pretrained(case["folder"], trust_remote_code=True)
        generate = model.generate
        assert generate.func.__module__.endswith("custom_generate.generate"), generate
        rows = []
        model.register_forward_pre_hook(
            lambda module, args, kwargs: rows.append(kwargs.get("decoder_input_ids", kwargs.get("input_ids")).shape[0]),
            with_kwargs=True)
        with torch.no_grad():
            result = model.generate(**case["prompts"], **case["options"], return_dict_in_generate=True,
                                    output_scores=True)
        assert torch.equal(result.sequences, case["sequences"]), (result.sequences, case["sequences"])
        torch.testing.assert_close(result.sequences_scores, case["scores"], rtol=0, atol=1e-5)
        assert sum(rows) < case["their_rows"], (sum(rows), case["their_rows"])
        model.save_pretrained(case["folder"] + "_again")  # the code of a saved folder saves its loop again
        loop = "/custom_generate/generate.py"
        assert open(case["folder"] + "_again" + loop).read() == open(case["folder"] + loop).read()
        print("decoded", type(model).__name__, "rows", sum(rows), "of", case["their_rows"])
    """
)


@pytest.mark.slow
def test_saved_folder_decodes_with_our_loop_where_the_package_is_not_installed(tmp_path):
    """``save_pretrained`` writes ``custom_generate/``, each code file once (at most 10 for an attention
    seq2seq); a process that cannot import hf_seqmodels loads the folder with ``trust_remote_code=True``, its
    ``generate()`` gives GenerationMixin's beams with fewer rows, and a save from there carries the loop again."""
    cases = []
    for family, auto_class in (("attention_gru_bahdanau", "AutoModelForSeq2SeqLM"), ("gru_lm", "AutoModelForCausalLM"),
                               ("transformer", "AutoModelForSeq2SeqLM")):
        model, prompts, options = model_and_prompts(family, 0)
        folder = tmp_path / family
        model.save_pretrained(folder)
        code = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.py"))
        assert "custom_generate/generate.py" in code and len({path.split("/")[-1] for path in code}) == len(code), code
        if family.startswith("attention"):
            assert len(code) <= 10, code
        options = {**options, "num_beams": 3}
        their_rows, _, theirs, _ = decoder_rows(model, prompts, {**options, "return_dict_in_generate": True,
                                                                 "output_scores": True})
        cases.append({"folder": str(folder), "auto_class": auto_class, "prompts": prompts, "options": options,
                      "sequences": theirs.sequences, "scores": theirs.sequences_scores, "their_rows": their_rows})
    torch.save(cases, tmp_path / "cases.pt")
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}
    result = subprocess.run([sys.executable, "-c", RUN_SAVED_GENERATE, str(tmp_path / "cases.pt")], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("decoded ") == len(cases), result.stdout



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
        theirs = model.generate(**prompts, **options, **search)
        model.decoding_step = recording
        try:
            ours = model.generate(**prompts, **options, **search, custom_generate=decode)
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
