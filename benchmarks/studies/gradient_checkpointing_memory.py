"""Memory of a training step with and without gradient checkpointing, for every family's training head.

For each model, one forward + backward on the same random batch, plain and after
``model.activation_checkpointing_enable()`` (non-reentrant, as ``--gradient_checkpointing`` turns it on), measuring:

- ``saved_activations_mb``: the bytes autograd keeps for the backward pass once the forward has run, counted by
  ``torch.autograd.graph.saved_tensors_hooks`` (each storage once, parameters left out: they are there anyway).
  Under checkpointing the layers' own activations are not kept (the checkpoint's inner hooks take them and
  recompute them in the backward pass), so what is left is what lies outside the checkpointed layers; the layer
  inputs that the checkpoints hold are not counted;
- ``peak_memory_mb``: the peak of live tensors over forward + backward (``common.peak_memory_bytes``:
  ``torch.cuda.max_memory_allocated`` on a GPU, the profiler's memory events on the CPU), which does count them;
- ``same_gradients``: the checkpointed gradients equal the plain ones (dropout off), so the memory saved costs
  nothing but time.

A model class without ``supports_gradient_checkpointing`` is reported as such, not measured.

    python -m benchmarks.studies.gradient_checkpointing_memory         # results/gradient_checkpointing_memory.json
    python -m benchmarks.studies.gradient_checkpointing_memory --smoke --out /tmp/b
    python -m benchmarks.studies.gradient_checkpointing_memory --device cuda --set batch_size=64

``run(settings)`` returns the entry in the shape of the other benchmarks (``common.entry_result``).
"""

import argparse
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import torch

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqForConditionalGeneration,
    TransformerConfig,
    TransformerForConditionalGeneration,
)
from hf_seqmodels.provenance import provenance

from ..helpers.common import Settings, entry_result, mb, peak_memory_bytes, resolve_sizes, target
from ..helpers.language_models import LMSizes, recurrent_lm, transformer_lm


@dataclasses.dataclass(frozen=True)
class Sizes(LMSizes):
    batch_size: int = 32
    length: int = 128


SMOKE = Sizes(vocab_size=50, hidden_size=16, num_layers=2, batch_size=2, length=12)
PAD, BOS, EOS = 0, 1, 2


def attention_seq2seq(sizes: Sizes) -> AttentionSeq2SeqForConditionalGeneration:
    return AttentionSeq2SeqForConditionalGeneration(AttentionSeq2SeqConfig(
        vocab_size=sizes.vocab_size, embedding_size=sizes.hidden_size, hidden_size=sizes.hidden_size,
        encoder_layers=sizes.num_layers, decoder_layers=sizes.num_layers, cell_type=sizes.cell_type,
        attention_type="luong_general", input_feeding=True, dropout=0.0, pad_token_id=PAD, bos_token_id=BOS,
        eos_token_id=EOS,
    ))


def transformer_seq2seq(sizes: Sizes) -> TransformerForConditionalGeneration:
    return TransformerForConditionalGeneration(TransformerConfig(
        vocab_size=sizes.vocab_size, d_model=sizes.hidden_size, num_heads=max(1, sizes.hidden_size // 64),
        encoder_layers=sizes.num_layers, decoder_layers=sizes.num_layers, ffn_dim=4 * sizes.hidden_size,
        dropout=0.0, max_position_embeddings=sizes.length, pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS,
        decoder_start_token_id=BOS, is_encoder_decoder=True,
    ))


# Family -> a builder of its training head at ``sizes``; every model without dropout, so both runs compute the same.
MODELS: dict[str, Callable[[Sizes], torch.nn.Module]] = {
    "recurrent (causal LM)": recurrent_lm,
    "attention seq2seq": attention_seq2seq,
    "transformer (encoder-decoder)": transformer_seq2seq,
    "transformer (decoder-only)": lambda sizes: transformer_lm(sizes, max_positions=sizes.length),
}


def batch_for(model, sizes: Sizes, seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(EOS + 1, sizes.vocab_size, (sizes.batch_size, sizes.length), generator=generator)
    if not model.config.is_encoder_decoder:
        return {"input_ids": ids, "labels": ids}
    labels = torch.randint(EOS + 1, sizes.vocab_size, (sizes.batch_size, sizes.length), generator=generator)
    return {"input_ids": ids, "labels": labels}


class SavedTensors:
    """Counts the bytes autograd saves for the backward pass inside ``with``: each storage once, parameters out."""

    def __init__(self, model: torch.nn.Module):
        self.parameters = {param.untyped_storage().data_ptr() for param in model.parameters()}
        self.storages: dict[int, int] = {}
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda tensor: tensor)

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in self.parameters:
            self.storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())

    def __enter__(self):
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self.hooks.__exit__(*exc)


def measure(model, batch: dict[str, torch.Tensor], device: str) -> tuple[dict, dict[str, torch.Tensor]]:
    """One forward + backward: saved activation bytes, peak memory, the loss and the gradients."""
    model.zero_grad(set_to_none=True)
    with SavedTensors(model) as saved:
        loss = model(**batch).loss
    saved_bytes = saved.bytes
    loss.backward()
    gradients = {name: param.grad.detach().clone() for name, param in model.named_parameters()
                 if param.grad is not None}

    def step():
        model.zero_grad(set_to_none=True)
        model(**batch).loss.backward()

    peak = peak_memory_bytes(step, device)
    return {"saved_activations_bytes": saved_bytes, "saved_activations_mb": mb(saved_bytes),
            "peak_memory_bytes": peak, "peak_memory_mb": mb(peak), "loss": round(loss.item(), 6)}, gradients


def checkpointed(model) -> str | None:
    """Turn gradient checkpointing on as the training loop does; the reason it cannot be, or None."""
    if not getattr(model, "supports_gradient_checkpointing", False):
        return f"{type(model).__name__} does not support gradient checkpointing (supports_gradient_checkpointing)"
    try:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    except ValueError as error:  # transformers' own refusal
        return str(error)
    return None


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    device = settings.device
    rows, summary, targets = [], {}, []
    for family, build in MODELS.items():
        torch.manual_seed(settings.seed)
        model = build(sizes).to(device).train()
        batch = {name: tensor.to(device) for name, tensor in batch_for(model, sizes, settings.seed).items()}
        plain, plain_gradients = measure(model, batch, device)
        rows.append({"family": family, "model": type(model).__name__, "gradient_checkpointing": False, **plain})
        reason = checkpointed(model)
        if reason is not None:
            rows.append({"family": family, "model": type(model).__name__, "gradient_checkpointing": "unsupported",
                         "reason": reason})
            summary[family] = "gradient checkpointing unsupported"
            continue
        saving, gradients = measure(model, batch, device)
        same = gradients.keys() == plain_gradients.keys() and all(
            torch.allclose(gradients[name], plain_gradients[name], rtol=1e-4, atol=1e-6) for name in gradients)
        rows.append({"family": family, "model": type(model).__name__, "gradient_checkpointing": True, **saving,
                     "same_gradients": same})
        ratios = {name: round(saving[name] / plain[name], 3) if plain[name] else None
                  for name in ("saved_activations_bytes", "peak_memory_bytes")}
        summary[family] = {"saved_activations_ratio": ratios["saved_activations_bytes"],
                           "peak_memory_ratio": ratios["peak_memory_bytes"], "same_gradients": same}
        targets.append(target(f"{family}: peak memory with / without checkpointing", ratios["peak_memory_bytes"],
                              maximum=1.0))
    notes = ("Ratios below 1 are memory saved; the time it costs is the forward pass of the checkpointed layers run "
             "again in the backward pass. Saved activations leave out the layer inputs the checkpoints keep; the "
             "peak counts them.")
    return entry_result("Gradient checkpointing: memory of a training step", sizes, rows, summary, targets, notes)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check that everything runs, in seconds")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--out", type=Path, default=Path("results"), help="output folder (default: results/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override a size, e.g. --set batch_size=64")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and data")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda was asked for but torch sees no CUDA device.")
    overrides = dict(item.partition("=")[::2] for item in args.overrides)
    started = provenance([args.seed], [], args.device)  # random data
    entry = run(Settings(device=args.device, smoke=args.smoke, out_dir=args.out, overrides=overrides, seed=args.seed))
    entry.update(device=args.device, smoke=args.smoke, provenance=started, overrides=overrides)
    results = {"entries": {"gradient_checkpointing_memory": entry}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gradient_checkpointing_memory.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
