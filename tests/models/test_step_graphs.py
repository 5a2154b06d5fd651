"""StepGraphStore (cuda_graphs.py) without a GPU: CUDA graph capture emulated on CPU. The ops run during capture are recorded with the
tensors they read and wrote, and a replay runs them again on those same tensors, which is what a CUDA graph does.
This checks what StepGraphStore itself is responsible for: the inputs copied into the graph's tensors, the state taken
over by the cache, and a cache that another one displaced getting its own state back."""

import contextlib
import types

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from hf_seqmodels import AttentionSeq2SeqForConditionalGeneration, RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.models import cuda_graphs
from hf_seqmodels.models.cache import RecurrentCache
from hf_seqmodels.models.decoding import decode as our_loop
from tests.models.test_modeling_attention_seq2seq import tiny_config
from tests.test_modeling_common import make_model


class RecordedGraph:
    def __init__(self):
        self.ops = []

    def pool(self):
        return None

    def replay(self):
        for func, args, kwargs, out in self.ops:
            result = func(*args, **kwargs)
            if func._schema.returns and func._schema.returns[0].alias_info is None:  # not a view or in-place op
                for recorded, new in zip(tree_leaves(out), tree_leaves(result), strict=True):
                    if isinstance(recorded, torch.Tensor):
                        recorded.copy_(new)


class Recorder(TorchDispatchMode):
    def __init__(self, graph: RecordedGraph):
        super().__init__()
        self.graph = graph

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.graph.ops.append((func, args, kwargs or {}, out))
        return out


@pytest.fixture
def emulated_graphs(monkeypatch):
    """CUDA graphs replayed on CPU tensors; the check for a GPU sees one."""
    stream = types.SimpleNamespace(wait_stream=lambda other: None)
    monkeypatch.setattr(torch.cuda, "Stream", lambda: stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: stream)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", RecordedGraph)
    monkeypatch.setattr(torch.cuda, "graph", lambda graph, pool=None: Recorder(graph))
    monkeypatch.setattr(cuda_graphs, "_on_gpu", lambda tensor: True)


VARIANTS = [("gru", "luong_general", False), ("lstm", "bahdanau", False), ("lstm", "luong_concat", True)]


@pytest.mark.parametrize("cell_type,attention_type,input_feeding", VARIANTS)
def test_graph_steps_match_the_default_cache(emulated_graphs, cell_type, attention_type, input_feeding):
    model = make_model(AttentionSeq2SeqForConditionalGeneration,
                       tiny_config(cell_type, attention_type, input_feeding, eos_token_id=None)).eval()
    generator = torch.Generator().manual_seed(0)
    search = {"max_new_tokens": 5, "do_sample": False, "output_scores": True, "return_dict_in_generate": True}
    for beams in (1, 3):
        for _ in range(2):  # a second batch of the same shape reuses the graphs with new encoder outputs
            source = torch.randint(3, 14, (2, 6), generator=generator)
            mask = torch.ones_like(source)
            mask[1, 4:] = 0
            with torch.no_grad():
                default = model.generate(source, attention_mask=mask, num_beams=beams, **search)
                graphed = model.generate(source, attention_mask=mask, num_beams=beams, cache_implementation="static",
                                         **search)
            assert torch.equal(default.sequences, graphed.sequences)
            torch.testing.assert_close(default.scores, graphed.scores)
    assert len(model.model.step_graphs.graphs) == 2  # one per batch size (2 rows, 2 x 3 beams)


@pytest.mark.parametrize("beams", [1, 3])
def test_our_loop_steps_through_the_graphs_for_one_sentence(emulated_graphs, beams):
    """One sentence leaves no rows to drop, so our loop (``custom_generate``) takes it with a static cache: forward
    runs for the first step only, the graph for the others, and the results are GenerationMixin's with the default
    cache."""
    model = make_model(AttentionSeq2SeqForConditionalGeneration,
                       tiny_config("lstm", "luong_concat", True, eos_token_id=None)).eval()
    source = torch.randint(3, 14, (1, 6), generator=torch.Generator().manual_seed(0))
    search = {"num_beams": beams, "max_new_tokens": 5, "do_sample": False, "output_scores": True,
              "return_dict_in_generate": True}
    calls = []
    handle = model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        with torch.no_grad():
            default = model.generate(source, **search)
            calls.clear()
            graphed = model.generate(source, cache_implementation="static", custom_generate=our_loop, **search)
    finally:
        handle.remove()
    assert len(calls) == 1 and len(model.model.step_graphs.graphs) == 1, (calls, beams)
    assert torch.equal(default.sequences, graphed.sequences)
    torch.testing.assert_close(default.scores, graphed.scores)
    if beams > 1:
        torch.testing.assert_close(default.sequences_scores, graphed.sequences_scores)


def check_displaced_caches_keep_their_state(device: str) -> None:
    """Two static caches of the same shape take turns on one graph on ``device``: each continues from its own
    state, step for step as the default cache does (tests/cuda runs it on a GPU)."""
    model = make_model(AttentionSeq2SeqForConditionalGeneration,
                       tiny_config("lstm", "luong_concat", True)).eval().to(device)
    sources = [torch.randint(3, 14, (1, 4), generator=torch.Generator().manual_seed(seed)).to(device)
               for seed in (1, 2)]
    tokens = torch.tensor([[1], [5], [7], [2]], device=device)

    def decode(source, cache, positions):
        return [model(input_ids=source, decoder_input_ids=tokens[i : i + 1].T, cache=cache).logits.clone()
                for i in positions]

    with torch.no_grad():
        expected = [torch.cat(decode(source, RecurrentCache(), range(4))) for source in sources]
        caches = [RecurrentCache(static=True) for _ in sources]
        got = [[], []]
        for positions in ((0, 1), (2,), (3,)):
            for which in (0, 1):
                got[which] += decode(sources[which], caches[which], positions)
    assert len(model.model.step_graphs.graphs) == 1
    for which in (0, 1):
        torch.testing.assert_close(torch.cat(got[which]), expected[which])


def test_a_displaced_cache_keeps_its_state(emulated_graphs):
    check_displaced_caches_keep_their_state("cpu")


@pytest.mark.parametrize("cell_type", ["lstm", "gru"])
def test_language_model_graph_steps_match_the_default_cache(emulated_graphs, cell_type):
    config = RecurrentConfig(vocab_size=12, embedding_size=6, hidden_size=8, num_layers=2, cell_type=cell_type,
                             pad_token_id=0, bos_token_id=1, eos_token_id=None)
    model = make_model(RecurrentForCausalLM, config).eval()
    prompts = torch.tensor([[0, 0, 5, 7], [3, 4, 8, 9]])  # left-padded
    mask = (prompts != 0).long()
    search = {"max_new_tokens": 5, "do_sample": False, "output_scores": True, "return_dict_in_generate": True}
    for beams in (1, 3):
        with torch.no_grad():
            default = model.generate(prompts, attention_mask=mask, num_beams=beams, **search)
            graphed = model.generate(prompts, attention_mask=mask, num_beams=beams, cache_implementation="static",
                                     **search)
        assert torch.equal(default.sequences, graphed.sequences)
        torch.testing.assert_close(default.scores, graphed.scores)
    assert len(model.model.step_graphs.graphs) == 2
