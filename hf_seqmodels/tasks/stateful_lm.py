"""Language modelling over one token stream, as the published PTB figures are measured (Zaremba et al. 2014,
Merity et al. 2017): truncated backpropagation through time with the state carried, and evaluations that score
every token.

The texts of a split become one stream, each text followed by ``eos`` (Mikolov's ``ptb.*.txt`` lines), after one
``eos`` of context, so that every token of the split, each text's ``eos`` included, is a target: 82,430 on PTB's
test split. The stream is cut into ``rows`` contiguous rows (AWD-LSTM's ``batchify``); the last row's end is padding
that is never a target. A recurrent model reads each row window by window, carrying its state from one window to
the next; in training the state is detached between windows (`RecurrentCache.detach_`), so the gradient flows back
``bptt`` positions at most. PTB marks no document boundaries, so the state is never reset within a row; each row
starts from a zero state.

A Transformer has no state to carry: `sliding_window_loss` scores the stream with windows of its context length,
each moved on by ``stride`` positions and scoring only its new targets (transformers' "Perplexity of fixed-length
models").
"""

import logging
import math
import time
from collections.abc import Callable, Iterator

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase, get_scheduler

from ..models.modeling_utils import output_cache
from ..training.arguments import TrainingArguments
from ..training.loop import make_optimizer
from ..training.nt_asgd import evaluate_with_averages

logger = logging.getLogger(__name__)

SHORT_WINDOW_CHANCE = 0.05  # AWD-LSTM: a window of about bptt/2 this often, else about bptt
WINDOW_LENGTH_STD = 5
MIN_WINDOW = 5


def token_stream(texts: list[str], tokenizer: PreTrainedTokenizerBase) -> torch.LongTensor:
    """``eos``, then each text's ids followed by ``eos``: 1 + sum(len(ids) + 1) ids."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("The tokenizer has no eos_token: set tokenizer.eos_token before preparing LM data.")
    stream = [eos]
    for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]:
        stream += ids + [eos]
    return torch.tensor(stream)


def stream_rows(stream: torch.LongTensor, rows: int, pad_id: int) -> tuple[torch.LongTensor, torch.LongTensor]:
    """``inputs`` and aligned ``targets`` ``(rows, ceil((len(stream) - 1) / rows))``: row ``i`` holds the ``i``-th
    contiguous part of ``stream[:-1]`` and of ``stream[1:]``; the positions after the stream's end hold ``pad_id``
    inputs and -100 targets (not scored)."""
    if len(stream) < 2:
        raise ValueError(f"A stream of {len(stream)} token(s) has no target: give the split some text.")
    targets_count = len(stream) - 1
    width = math.ceil(targets_count / rows)
    inputs = torch.full((rows * width,), pad_id, dtype=torch.long)
    targets = torch.full((rows * width,), -100, dtype=torch.long)
    inputs[:targets_count], targets[:targets_count] = stream[:-1], stream[1:]
    return inputs.view(rows, width), targets.view(rows, width)


def windows(length: int, bptt: int, variable: bool, generator: torch.Generator | None = None
            ) -> Iterator[tuple[int, int]]:
    """``(start, size)`` of the windows that cover ``length`` positions: ``bptt`` each, or with ``variable`` AWD-LSTM's
    random sizes (about ``bptt``, sometimes about ``bptt / 2``, normally spread with deviation 5, at least 5)."""
    start = 0
    while start < length:
        size = bptt
        if variable:
            mean = bptt / 2 if torch.rand((), generator=generator) < SHORT_WINDOW_CHANCE else bptt
            size = max(MIN_WINDOW, int(torch.normal(float(mean), float(WINDOW_LENGTH_STD), (), generator=generator)))
        size = min(size, length - start)
        yield start, size
        start += size


def _window_loss(model: PreTrainedModel, inputs, targets, cache):
    """The model's mean loss over the targets of one window (column slices of the rows), and the cache it continues
    to."""
    outputs = model(input_ids=inputs.contiguous(), shift_labels=targets.contiguous(), cache=cache, use_cache=True)
    return outputs.loss, output_cache(outputs)


@torch.no_grad()
def evaluate_stateful(model: PreTrainedModel, stream: torch.LongTensor, rows: int, bptt: int, pad_id: int
                      ) -> tuple[float, int]:
    """Mean loss per target over ``stream`` cut in ``rows`` rows, read in ``bptt`` windows with the state carried
    through each row, and the number of targets (``len(stream) - 1``: every token after the first ``eos``)."""
    was_training = model.training
    model.eval()
    device = model.device
    inputs, targets = (t.to(device) for t in stream_rows(stream, rows, pad_id))
    total, count, cache = torch.zeros((), dtype=torch.float64, device=device), 0, None
    for start, size in windows(inputs.shape[1], bptt, variable=False):
        window_targets = targets[:, start : start + size]
        scored = int((window_targets != -100).sum())
        loss, cache = _window_loss(model, inputs[:, start : start + size], window_targets, cache)
        total += loss.double() * scored
        count += scored
    model.train(was_training)
    return (total / count).item(), count


@torch.no_grad()
def sliding_window_loss(model: PreTrainedModel, stream: torch.LongTensor, context: int, stride: int
                        ) -> tuple[float, int]:
    """Mean loss per target over ``stream`` for a model without a state: windows of ``context`` inputs, each
    ``stride`` positions after the last, score only the targets no earlier window scored, so every target is
    scored once, with at least ``context - stride`` tokens before it (all it has, near the start)."""
    if not 1 <= stride <= context:
        raise ValueError(f"--eval_stride={stride} must be between 1 and the model's context length {context}.")
    was_training = model.training
    model.eval()
    inputs, targets = stream[:-1].to(model.device), stream[1:].to(model.device)
    total, scored_until = torch.zeros((), dtype=torch.float64, device=model.device), 0
    for end in range(min(context, len(inputs)), len(inputs) + stride, stride):
        end = min(end, len(inputs))
        if end <= scored_until:
            break
        begin = max(0, end - context)
        window_targets = targets[begin:end].clone()
        window_targets[: scored_until - begin] = -100  # scored by an earlier window
        loss = model(input_ids=inputs[begin:end].unsqueeze(0), shift_labels=window_targets.unsqueeze(0)).loss
        total += loss.double() * (end - scored_until)
        scored_until = end
    model.train(was_training)
    return (total / len(targets)).item(), len(targets)


def train_stateful(
    model: PreTrainedModel,
    stream: torch.LongTensor,
    args: TrainingArguments,
    bptt: int,
    variable_bptt: bool,
    evaluate: Callable[[PreTrainedModel], float],
    pad_id: int,
) -> dict:
    """Train a recurrent LM on ``stream`` cut in ``per_device_train_batch_size`` rows, window by window with the state
    carried and detached between windows; ``evaluate(model)`` (the validation loss) runs after every epoch and at the
    end. With ``variable_bptt`` each window's learning rate is scaled by its size / ``bptt`` (as AWD-LSTM does), so
    every token weighs the same. The schedule, clipping, time budget and optimizers (NT-ASGD's switch included) are
    those of `training.train`. One process; no checkpoints."""
    device = model.device
    inputs, targets = (t.to(device) for t in stream_rows(stream, args.per_device_train_batch_size, pad_id))
    steps_per_epoch = math.ceil(inputs.shape[1] / bptt)
    max_steps = args.max_train_steps or args.num_train_epochs * steps_per_epoch
    optimizer = make_optimizer(model, args)
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer, args.num_warmup_steps, max_steps)
    generator = torch.Generator().manual_seed(args.seed)
    history, step, start, window_losses, train_tokens = [], 0, time.monotonic(), [], 0
    stopped_by_time_budget = False
    model.train()
    while step < max_steps and not stopped_by_time_budget:
        cache = None
        for begin, size in windows(inputs.shape[1], bptt, variable_bptt, generator):
            loss, cache = _window_loss(model, inputs[:, begin : begin + size], targets[:, begin : begin + size], cache)
            loss.backward()
            cache.detach_()
            if args.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            _scaled_step(optimizer, size / bptt if variable_bptt else 1.0)
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            window_losses.append(loss.item())
            train_tokens += inputs.shape[0] * size
            if step % args.logging_steps == 0:
                recent = window_losses[-args.logging_steps:]
                logger.info(f"step {step}/{max_steps}: loss {sum(recent) / len(recent):.3f}, "
                            f"{time.monotonic() - start:.0f} s")
            stopped_by_time_budget = (args.time_budget_minutes is not None
                                      and time.monotonic() - start > 60 * args.time_budget_minutes)
            if step >= max_steps or stopped_by_time_budget:
                break
        loss = evaluate_with_averages(optimizer, model, lambda: evaluate(model))
        history.append({"step": step, "epoch": step / steps_per_epoch, "eval_loss": loss,
                        "eval_perplexity": math.exp(loss)})
        logger.info(f"step {step}: eval_loss {loss:.4f}, eval_perplexity {math.exp(loss):.2f}")
    recent = window_losses[-args.logging_steps:]
    return {
        "steps": step,
        "epochs": step / steps_per_epoch,
        "train_runtime_s": time.monotonic() - start,
        "stopped_by_time_budget": stopped_by_time_budget,
        "train_tokens": train_tokens,
        "train_loss": sum(recent) / len(recent),
        "eval_loss": history[-1]["eval_loss"],
        "eval_perplexity": history[-1]["eval_perplexity"],
        "eval_history": history,
    }


def _scaled_step(optimizer: torch.optim.Optimizer, scale: float) -> None:
    """An optimizer step with every group's learning rate times ``scale`` (then restored)."""
    for group in optimizer.param_groups:
        group["lr"] *= scale
    optimizer.step()
    for group in optimizer.param_groups:
        group["lr"] /= scale
