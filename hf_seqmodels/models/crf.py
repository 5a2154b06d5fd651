"""A linear-chain conditional random field (Lafferty et al., 2001) over a tagger's per-position emission scores, as in
the BiLSTM-CRF of Huang et al. (2015) and Lample et al. (2016): the score of a tag sequence ``y`` of length ``n`` is

    start[y_1] + sum_i emissions[i, y_i] + sum_{i>1} transitions[y_{i-1}, y_i] + end[y_n]

and its probability is ``exp(score) / Z``, ``Z`` summing over every tag sequence of that length (the forward
algorithm, in log space). Decoding finds the best-scoring sequence (Viterbi). Both run batched, over a mask.

Masks follow `masks.py`: ``(batch, length)`` bool, True for a position of the chain. Each row's chain is its first
positions (True, then only False): a tagger whose scored positions are scattered (later sub-words and special tokens
are not tagged) gathers them to the front first with `gather_to_front`. The first position of every row must be
real; padding never changes a row's result.

Optional BIO (IOB2) constraints forbid the transitions no BIO sequence has (``O -> I-x``, ``B-x -> I-y`` and
``I-x -> I-y`` for ``y != x``, and starting with ``I-x``), by adding `FORBIDDEN` to their scores, in training (the
partition function sums over valid sequences only) and in decoding (every decoded path is valid).
"""

import re

import torch
from torch import nn
from transformers.utils import is_tracing

# The score added to a forbidden transition: large enough that no path takes it, finite so that sums stay numbers
# (-inf minus -inf is NaN) in float16 too.
FORBIDDEN = -10000.0
BIO_LABEL = re.compile(r"^([BI])-(.+)$")


def bio_entities(id2label: dict) -> list[tuple[str, str] | None]:
    """Each label's ``(prefix, entity type)`` in id order (``"B-person"`` -> ``("B", "person")``), None for ``O``.

    Raises:
        ValueError: naming `crf_constrain_bio`, unless every label is ``O``, ``B-x`` or ``I-x`` (IOB2).
    """
    names = [id2label[i] for i in range(len(id2label))]
    wrong = [name for name in names if name != "O" and not BIO_LABEL.match(name)]
    if wrong or "O" not in names:
        raise ValueError(
            f"`crf_constrain_bio`=True needs BIO (IOB2) labels in `id2label`: 'O', 'B-<type>' and 'I-<type>', but "
            f"the labels are {names}{f' ({wrong[:3]} are not BIO)' if wrong else ' (no O)'}. Set id2label to the "
            "tag names, or crf_constrain_bio=False for other tag schemes."
        )
    return [None if name == "O" else BIO_LABEL.match(name).groups() for name in names]


def check_crf_fields(use_crf, crf_constrain_bio, id2label: dict) -> None:
    """The config checks of the CRF fields of a tagger's config (after PretrainedConfig has set ``id2label``)."""
    for name, value in (("use_crf", use_crf), ("crf_constrain_bio", crf_constrain_bio)):
        if not isinstance(value, bool):
            raise ValueError(f"`{name}`={value!r} must be True or False (a bool).")
    if crf_constrain_bio and not use_crf:
        raise ValueError("`crf_constrain_bio`=True constrains a CRF, but `use_crf`=False: set use_crf=True too, or "
                         "crf_constrain_bio=False.")
    if crf_constrain_bio:
        bio_entities(id2label)


def bio_constraints(id2label: dict) -> tuple[list[bool], list[list[bool]]]:
    """The allowed starts (one bool per tag) and transitions (``[from][to]``) of BIO tags: a tag ``I-x`` may only
    follow ``B-x`` or ``I-x``; every other tag may start, follow anything and end."""
    entities = bio_entities(id2label)

    def can_follow(previous, tag) -> bool:
        return tag is None or tag[0] == "B" or (previous is not None and previous[1] == tag[1])

    allowed_start = [tag is None or tag[0] == "B" for tag in entities]
    return allowed_start, [[can_follow(previous, tag) for tag in entities] for previous in entities]


def check_chain_mask(mask: torch.Tensor, emissions: torch.Tensor) -> None:
    """Raise unless ``mask`` is a bool ``(batch, length)`` of ``emissions``' first two sizes whose rows start with
    a real position and hold no real position after padding."""
    if mask.dtype != torch.bool or tuple(mask.shape) != tuple(emissions.shape[:2]):
        raise ValueError(f"The CRF mask must be a bool tensor of shape {tuple(emissions.shape[:2])} (batch, length), "
                         f"got {mask.dtype} {tuple(mask.shape)}.")
    if is_tracing(mask):
        return
    if not bool(mask[:, 0].all()):
        raise ValueError("Every row of the CRF mask must start with a real position (True): each chain is its row's "
                         "first positions. Gather the scored positions to the front (gather_to_front) and leave out "
                         "rows with none.")
    if bool((mask[:, 1:] & ~mask[:, :-1]).any()):
        raise ValueError("The CRF mask has a real position after padding: each row's chain must be its first "
                         "positions. Gather the scored positions to the front (gather_to_front).")


def gather_to_front(values: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Move the kept positions of each row to its front, in order, cut to the longest row's count.

    Args:
        values: ``(batch, length)`` or ``(batch, length, size)``.
        keep: ``(batch, length)`` bool, True for the positions to keep.

    Returns:
        ``(gathered, mask, order)``: ``gathered`` of shape ``(batch, kept)`` or ``(batch, kept, size)`` where ``kept``
        is the largest count of any row; ``mask`` ``(batch, kept)`` True where ``gathered`` holds a kept position;
        ``order`` ``(batch, kept)`` the position each entry came from, to scatter results back.
    """
    kept = int(keep.sum(1).max()) if keep.numel() else 0
    order = torch.sort((~keep).to(torch.uint8), dim=1, stable=True).indices[:, :kept]
    index = order if values.dim() == 2 else order.unsqueeze(-1).expand(-1, -1, values.shape[-1])
    return values.gather(1, index), keep.gather(1, order), order


class LinearChainCRF(nn.Module):
    """A linear-chain CRF over ``num_tags`` tags: start, end and transition scores, learned.

    Args:
        num_tags: the number of tags.
        allowed_start: optional, one bool per tag: whether a sequence may start with it (see `bio_constraints`).
        allowed_transitions: optional, ``[from][to]`` bools: whether the transition is allowed.

    The constraints are penalty buffers (`FORBIDDEN` where not allowed, 0 elsewhere), recomputed rather than saved:
    a model rebuilds them from its config. Emissions are ``(batch, length, num_tags)``, masks ``(batch, length)``
    bool (see the module docstring); scores are computed in float32 at least.
    """

    def __init__(self, num_tags: int, allowed_start: list[bool] | None = None,
                 allowed_transitions: list[list[bool]] | None = None):
        super().__init__()
        self.num_tags = num_tags
        self.start_transitions = nn.Parameter(torch.zeros(num_tags))
        self.end_transitions = nn.Parameter(torch.zeros(num_tags))
        self.transitions = nn.Parameter(torch.zeros(num_tags, num_tags))  # [from, to]
        # Python lists, not tensors: a model built on the meta device (from_pretrained) recomputes the buffers
        # from them.
        self.allowed_start = [True] * num_tags if allowed_start is None else list(allowed_start)
        self.allowed_transitions = ([[True] * num_tags] * num_tags if allowed_transitions is None
                                    else [list(row) for row in allowed_transitions])
        start_penalty, transition_penalty = self.penalties()
        self.register_buffer("start_penalty", start_penalty, persistent=False)
        self.register_buffer("transition_penalty", transition_penalty, persistent=False)

    def penalties(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The penalty buffers' values: `FORBIDDEN` where a start or transition is not allowed, else 0."""
        start, transitions = torch.tensor(self.allowed_start), torch.tensor(self.allowed_transitions)
        return (~start).float() * FORBIDDEN, (~transitions).float() * FORBIDDEN

    @property
    def constrained(self) -> bool:
        return not (all(self.allowed_start) and all(map(all, self.allowed_transitions)))

    def extra_repr(self) -> str:
        return f"num_tags={self.num_tags}, constrained={self.constrained}"

    def _scores(self, emissions: torch.Tensor):
        """Emissions, start, end and (penalised) transition scores, in float32 or wider."""
        dtype = torch.promote_types(emissions.dtype, torch.float32)
        start = (self.start_transitions + self.start_penalty).to(dtype)
        transitions = (self.transitions + self.transition_penalty).to(dtype)
        return emissions.to(dtype), start, self.end_transitions.to(dtype), transitions

    def _check(self, emissions: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if emissions.dim() != 3 or emissions.shape[-1] != self.num_tags or emissions.shape[1] == 0:
            raise ValueError(f"CRF emissions must have shape (batch, length >= 1, {self.num_tags}), got "
                             f"{tuple(emissions.shape)}.")
        if mask is None:
            return emissions.new_ones(emissions.shape[:2], dtype=torch.bool)
        check_chain_mask(mask, emissions)
        return mask

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``log Z`` of each row ``(batch,)``: the log-sum-exp of the scores of every tag sequence of the row's
        length (the forward algorithm)."""
        mask = self._check(emissions, mask)
        emissions, start, end, transitions = self._scores(emissions)
        alpha = start + emissions[:, 0]  # (batch, tags): log-sum of the paths ending in each tag
        for i in range(1, emissions.shape[1]):
            step = torch.logsumexp(alpha.unsqueeze(2) + transitions + emissions[:, i].unsqueeze(1), dim=1)
            alpha = torch.where(mask[:, i, None], step, alpha)
        return torch.logsumexp(alpha + end, dim=1)

    def sequence_score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None):
        """The score of the tag sequence ``tags`` ``(batch, length)`` of each row ``(batch,)``; tags at padding
        are not read."""
        mask = self._check(emissions, mask)
        if tuple(tags.shape) != tuple(mask.shape):
            raise ValueError(f"CRF tags have shape {tuple(tags.shape)}, expected {tuple(mask.shape)}.")
        emissions, start, end, transitions = self._scores(emissions)
        tags = tags.long().masked_fill(~mask, 0)
        weights = mask.to(emissions.dtype)
        emitted = (emissions.gather(2, tags.unsqueeze(2)).squeeze(2) * weights).sum(1)
        moved = (transitions[tags[:, :-1], tags[:, 1:]] * weights[:, 1:]).sum(1)
        last = tags.gather(1, (mask.sum(1, keepdim=True) - 1)).squeeze(1)
        return start[tags[:, 0]] + emitted + moved + end[last]

    def neg_log_likelihood(self, emissions: torch.Tensor, tags: torch.Tensor,
                           mask: torch.Tensor | None = None) -> torch.Tensor:
        """``-log p(tags | emissions)`` of each row ``(batch,)``.

        Raises:
            ValueError: when constrained and a row's ``tags`` take a forbidden start or transition (tags that are
                not IOB2, e.g. IOB1's ``I-x`` opening an entity): such a sequence has no probability.
        """
        mask = self._check(emissions, mask)
        self._check_allowed(tags, mask)
        return self.log_partition(emissions, mask) - self.sequence_score(emissions, tags, mask)

    def _check_allowed(self, tags: torch.Tensor, mask: torch.Tensor) -> None:
        if is_tracing(tags) or not self.constrained:
            return
        tags = tags.long().masked_fill(~mask, 0)
        forbidden = (self.transition_penalty[tags[:, :-1], tags[:, 1:]] < 0) & mask[:, 1:]
        bad_rows = forbidden.any(1) | (self.start_penalty[tags[:, 0]] < 0)
        if bool(bad_rows.any()):
            row = int(bad_rows.nonzero()[0])
            raise ValueError(
                f"Row {row}'s tags {tags[row][mask[row]].tolist()} take a transition that the BIO constraints forbid "
                "(an I-x that does not follow B-x or I-x): the tags are not IOB2. Convert them to IOB2, or set "
                "crf_constrain_bio=False."
            )

    @torch.no_grad()
    def decode(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The best tag sequence of each row (Viterbi).

        Returns:
            ``(paths, scores)``: ``paths`` ``(batch, length)`` long, the tag ids, -100 at padding; ``scores``
            ``(batch,)`` each path's score (`sequence_score`).
        """
        mask = self._check(emissions, mask)
        emissions, start, end, transitions = self._scores(emissions)
        score = start + emissions[:, 0]
        identity = torch.arange(self.num_tags, device=emissions.device).expand_as(score)
        backpointers = []
        for i in range(1, emissions.shape[1]):
            best, previous = (score.unsqueeze(2) + transitions).max(dim=1)
            score = torch.where(mask[:, i, None], best + emissions[:, i], score)
            # At padding each tag points to itself, so that the walk back carries the last real tag through it.
            backpointers.append(torch.where(mask[:, i, None], previous, identity))
        scores, tag = (score + end).max(dim=1)
        path = [tag]
        for pointers in reversed(backpointers):
            tag = pointers.gather(1, tag.unsqueeze(1)).squeeze(1)
            path.append(tag)
        paths = torch.stack(path[::-1], dim=1).masked_fill(~mask, -100)
        return paths, scores
