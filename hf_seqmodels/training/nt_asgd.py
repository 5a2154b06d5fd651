"""NT-ASGD, the non-monotonically triggered averaged SGD of AWD-LSTM (Merity et al. 2017, section 3).

Plain SGD until the validation loss stops improving: when an evaluation is worse than the best of those before the
last ``nonmono`` evaluations, the optimizer starts averaging the weights of every later step (Polyak averaging).
From then on evaluations, and the model that is saved, use the averaged weights: `evaluate_with_averages` swaps
them in for an evaluation and leaves them there (a model saved after it holds them) until the model next runs in
training mode, which puts the trained weights back first.
"""

from collections.abc import Callable

import torch


class NTASGD(torch.optim.Optimizer):
    """SGD (``lr``, ``weight_decay`` added to the gradient) that switches to averaging on its own, from the
    validation losses it is shown (`observe`). Everything it decides is in its ``state_dict``: the losses seen and
    whether it averages live in its parameter group, the running average (and the trained weights while the
    averages are swapped in) in each parameter's state."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0, nonmono: int = 5):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "nonmono": nonmono, "losses": [],
                                  "averaging": False})
        self._restore_hook = None

    @property
    def averaging(self) -> bool:
        return self.param_groups[0]["averaging"]

    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        loss = None if closure is None else closure()
        self.restore_trained_weights()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.add_(p.grad + group["weight_decay"] * p if group["weight_decay"] else p.grad, alpha=-group["lr"])
                if group["averaging"]:
                    state = self.state[p]
                    state["count"] += 1
                    state["average"].add_(p - state["average"], alpha=1 / state["count"])
        return loss

    def observe(self, loss: float) -> None:
        """Take a validation loss; start averaging when it is worse than the best before the last ``nonmono``."""
        group = self.param_groups[0]
        losses, nonmono = group["losses"], group["nonmono"]
        if not self.averaging and len(losses) > nonmono and loss > min(losses[:-nonmono]):
            for group in self.param_groups:
                group["averaging"] = True
                for p in group["params"]:
                    self.state[p].update(average=p.detach().clone(), count=1)
        losses.append(loss)

    @torch.no_grad()
    def use_averages(self, model: torch.nn.Module) -> None:
        """Put the averaged weights in ``model`` (keeping the trained ones), once averaging has started, until
        ``model`` next runs a forward in training mode."""
        if not self.averaging:
            return
        for p, state in self._averaged():
            if "trained" not in state:
                state["trained"] = p.detach().clone()
                p.copy_(state["average"])
        if self._restore_hook is None:
            self._restore_hook = model.register_forward_pre_hook(
                lambda module, args: self.restore_trained_weights() if module.training else None)

    @torch.no_grad()
    def restore_trained_weights(self) -> None:
        for p, state in self._averaged():
            if "trained" in state:
                p.copy_(state.pop("trained"))
        if self._restore_hook is not None:
            self._restore_hook.remove()
            self._restore_hook = None

    def _averaged(self):
        return ((p, self.state[p]) for group in self.param_groups for p in group["params"]
                if "average" in self.state[p])


def evaluate_with_averages(optimizer: torch.optim.Optimizer, model: torch.nn.Module, evaluate: Callable[[], float]
                           ) -> float:
    """``evaluate()``, the validation loss of ``model``; under `NTASGD` (bare or wrapped by Accelerate) with its
    averaged weights, which stay in the model (for saving) until it next trains, and the loss is shown to the
    optimizer."""
    nt_asgd = getattr(optimizer, "optimizer", optimizer)
    if not isinstance(nt_asgd, NTASGD):
        return evaluate()
    nt_asgd.use_averages(model)
    loss = evaluate()
    nt_asgd.observe(loss)
    nt_asgd.use_averages(model)  # averaging may have started at this evaluation
    return loss
