"""The live batch of our decoding loop (``decoding``): one model step on the rows still decoding, and the removal of
the rows whose sentences have finished from everything generate() prepared for the model (cache, encoder outputs,
masks). Imports only torch and transformers: the file travels in a saved folder's ``custom_generate/``."""

import torch
from transformers.cache_utils import Cache
from transformers.generation.stopping_criteria import EosTokenCriteria, MaxLengthCriteria
from transformers.utils import ModelOutput

# model_kwargs entries that are not one row per sequence, whatever their first dimension.
_NOT_PER_ROW = frozenset({"cache_position", "use_cache"})


def cache_of(model_kwargs: dict) -> Cache | None:
    """The cache generate() carries in ``model_kwargs`` (under whichever name), or None."""
    return next((value for value in model_kwargs.values() if isinstance(value, Cache)), None)


def _select(value, rows: int, keep: torch.Tensor, sources: tuple[int, torch.Tensor] | None):
    """``value`` with only the rows ``keep`` of its first dimension, when it has ``rows`` of them, or only the
    sources ``sources[1]`` when it has one row per source (``sources[0]`` of them); anything else unchanged. Tensors
    inside a ModelOutput (encoder outputs), tuple or list are selected too; a cache in place."""
    if isinstance(value, torch.Tensor):
        if value.dim() and value.shape[0] == rows:
            return value.index_select(0, keep)
        if sources is not None and value.dim() and value.shape[0] == sources[0]:
            return value.index_select(0, sources[1])
        return value
    if isinstance(value, Cache):
        value.batch_select_indices(keep)
        return value
    if isinstance(value, ModelOutput):
        return type(value)(**{name: _select(field, rows, keep, sources) for name, field in value.items()})
    if isinstance(value, (tuple, list)):
        return type(value)(_select(item, rows, keep, sources) for item in value)
    return value


def rows_can_leave(generation_config, cache: Cache | None) -> bool:
    """Whether ``select_rows`` can take rows out of what generate() prepared: no cache, or one that selects batch
    rows and is not static (a static cache keeps the size it was made for, at fixed addresses for CUDA graphs)."""
    return generation_config.cache_implementation != "static" and (
        cache is None or (hasattr(cache, "batch_select_indices") and not getattr(cache, "static", False)))


def select_rows(model_kwargs: dict, rows: int, keep: torch.Tensor) -> dict:
    """``model_kwargs`` for the rows ``keep`` (1-D indices into the current ``rows``): the rows of sentences that
    have finished stop costing. The cache shrinks in place (``batch_select_indices``). Inputs that hold
    ``rows_per_source`` > 1 (a model's ``decoding_step_inputs`` for beam search) hold their per-source tensors once
    per source: ``keep`` then keeps whole runs of rows, and those tensors keep their sources."""
    per_source = model_kwargs.get("rows_per_source", 1)
    sources = (rows // per_source, keep[::per_source] // per_source) if per_source > 1 else None
    return {name: value if name in _NOT_PER_ROW else _select(value, rows, keep, sources)
            for name, value in model_kwargs.items()}


def next_logits(model, sequences: torch.Tensor, model_kwargs: dict, out: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """One decoding step, as GenerationMixin's loop takes it: the float32 logits of the next token
    ``(rows, vocab_size)`` after ``sequences`` ``(rows, length)``, copied into ``out``, and the updated
    ``model_kwargs``."""
    inputs = model.prepare_inputs_for_generation(
        sequences, next_sequence_length=1 if model_kwargs["use_cache"] else None, **model_kwargs
    )
    outputs = model(**inputs, return_dict=True)
    return _logits_and_kwargs(model, outputs, model_kwargs, out)


def model_step(model, sequences: torch.Tensor, step_inputs: dict, out: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """One decoding step through the model's own ``decoding_step``, on what its ``decoding_step_inputs`` prepared:
    as ``next_logits``, without ``forward``'s per-call checks and output objects (the logits written into ``out``
    where the model's output layer can)."""
    return model.decoding_step(sequences[:, -1:], **step_inputs, out=out), step_inputs


def prefill(model, input_ids: torch.Tensor, generation_config, model_kwargs: dict, rows_per_source: int = 1):
    """The first step (the whole prompt, or the decoder start), through GenerationMixin's ``_prefill``: its logits
    as ``next_logits`` gives them, the inputs of the next steps and the function that takes them: ``model_step``
    where the model has a ``decoding_step`` that applies, else ``next_logits`` with ``model_kwargs``.

    ``rows_per_source`` > 1: the rows come in runs of that many identical rows, which stay together to the end (a
    sentence's beams, as generate() expands them). The first step then runs on one row per run, and its logits and
    what it made (the cache) are repeated for the others, while what it read unchanged (encoder outputs) is taken
    back as generate() expanded it: at batch 64 and 5 beams the step costs a fifth (a prompt's prefill too), with the
    same results up to the last bits of a batch of another size. A static cache keeps the size it was made for: all
    rows then take the step."""
    rows = input_ids.shape[0]
    cache = cache_of(model_kwargs)
    once = rows_per_source > 1 and rows_can_leave(generation_config, cache) and (
        cache is None or cache.get_seq_length() == 0)
    if once:
        firsts = torch.arange(0, rows, rows_per_source, device=input_ids.device)
        every_row = model_kwargs
        input_ids, model_kwargs = input_ids.index_select(0, firsts), select_rows(model_kwargs, rows, firsts)
        given = dict(model_kwargs)  # the step updates model_kwargs in place
    outputs = model._prefill(input_ids, generation_config, model_kwargs, is_first_iteration=True)
    logits, model_kwargs = _logits_and_kwargs(model, outputs, model_kwargs)
    if once:
        unchanged = {name for name, value in model_kwargs.items()  # a cache is filled in place: it has changed
                     if name in given and value is given[name] and not isinstance(value, Cache)}
        model_kwargs = {name: every_row[name] if name in unchanged else value for name, value in model_kwargs.items()}
        repeat = torch.arange(len(firsts), device=logits.device).repeat_interleave(rows_per_source)
        logits, model_kwargs = logits.index_select(0, repeat), select_rows(model_kwargs, len(firsts), repeat)
    step_inputs = (model.decoding_step_inputs(model_kwargs, rows_per_source)
                   if hasattr(model, "decoding_step_inputs") else None)
    return (logits, model_kwargs, next_logits) if step_inputs is None else (logits, step_inputs, model_step)


def _logits_and_kwargs(model, outputs, model_kwargs: dict, out: torch.Tensor | None = None
                       ) -> tuple[torch.Tensor, dict]:
    model_kwargs = model._update_model_kwargs_for_generation(
        outputs, model_kwargs, is_encoder_decoder=model.config.is_encoder_decoder
    )
    logits = outputs.logits[:, -1]
    return (logits.to(copy=True, dtype=torch.float32) if out is None else out.copy_(logits)), model_kwargs


class DefaultStops:
    """generate()'s own stopping criteria, a maximum length and end-of-sequence tokens, applied to the newest tokens
    alone: the loops then build no candidate sequences to hand to ``StoppingCriteriaList``. ``of`` gives None when
    any other criterion is present."""

    def __init__(self, max_length: int | None, eos: torch.Tensor | None):
        self.max_length, self.eos = max_length, eos

    @classmethod
    def of(cls, stopping_criteria) -> "DefaultStops | None":
        if not all(type(criteria) in (EosTokenCriteria, MaxLengthCriteria) for criteria in stopping_criteria):
            return None
        lengths = [criteria.max_length for criteria in stopping_criteria if type(criteria) is MaxLengthCriteria]
        eos = [criteria.eos_token_id.view(-1) for criteria in stopping_criteria if type(criteria) is EosTokenCriteria]
        return cls(min(lengths, default=None), torch.cat(eos) if eos else None)

    def ends_all(self, length: int) -> bool:
        """Whether every sequence of ``length`` tokens ends, whatever its last token."""
        return self.max_length is not None and length >= self.max_length

    def __call__(self, tokens: torch.Tensor, length: int) -> torch.Tensor:
        """Whether each of ``tokens`` (any shape), the last of a sequence of ``length`` tokens, ends it."""
        if self.ends_all(length):
            return torch.ones_like(tokens, dtype=torch.bool)
        return torch.isin(tokens, self.eos) if self.eos is not None else torch.zeros_like(tokens, dtype=torch.bool)


class StepRecord:
    """What ``output_scores`` / ``output_logits`` ask for: one ``(total_rows, vocab_size)`` tensor per step, as
    GenerationMixin returns them. Rows that have left the batch are no longer computed: they hold ``-inf``."""

    def __init__(self, enabled: bool, total_rows: int):
        self.steps = [] if enabled else None
        self.total_rows = total_rows

    def add(self, values: torch.Tensor, live_rows: torch.Tensor) -> None:
        """Record ``values`` of the live rows, ``live_rows`` being their indices among all rows."""
        if self.steps is None:
            return
        if values.shape[0] == self.total_rows:
            self.steps.append(values.clone())
            return
        full = values.new_full((self.total_rows, values.shape[1]), float("-inf"))
        self.steps.append(full.index_copy_(0, live_rows, values))

    def result(self) -> tuple[torch.Tensor, ...] | None:
        return None if self.steps is None else tuple(self.steps)
