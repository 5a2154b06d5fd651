"""NT-ASGD: plain SGD until the non-monotone trigger, then the average of every later step's weights, swapped in for
evaluating and saving."""

import pytest
import torch

from hf_seqmodels.training.loop import TrainingArguments, make_optimizer
from hf_seqmodels.training.nt_asgd import NTASGD, evaluate_with_averages


def model_and_data():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2), torch.randn(8, 3), torch.randn(8, 2)


def step(model, optimizer, x, y):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()


def test_before_the_trigger_it_is_sgd():
    model, x, y = model_and_data()
    twin = torch.nn.Linear(3, 2)
    twin.load_state_dict(model.state_dict())
    ours, sgd = NTASGD(model.parameters(), lr=0.1, weight_decay=0.01), torch.optim.SGD(twin.parameters(), lr=0.1,
                                                                                     weight_decay=0.01)
    for _ in range(3):
        step(model, ours, x, y)
        step(twin, sgd, x, y)
    for mine, theirs in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(mine, theirs)


@pytest.mark.parametrize("losses, switch_at", [([5, 4, 3, 2, 1, 0.5], None), ([5, 4, 3, 3.5, 4.2], 4),
                                               ([5, 4, 4.5, 4.4], None), ([5, 4, 4.5, 4.4, 5.1], 4)])
def test_trigger_is_non_monotone(losses, switch_at):
    """Averaging starts at the first loss worse than the best before the last `nonmono` (here 2) losses."""
    model, _, _ = model_and_data()
    optimizer = NTASGD(model.parameters(), lr=0.1, nonmono=2)
    started = None
    for index, loss in enumerate(losses):
        optimizer.observe(loss)
        if optimizer.averaging and started is None:
            started = index
    assert started == switch_at


def test_averages_the_weights_of_every_step_since_the_trigger_and_swaps_them_in():
    model, x, y = model_and_data()
    optimizer = NTASGD(model.parameters(), lr=0.1, nonmono=1)
    for loss in (1.0, 0.5, 1.2):  # 1.2 > min(1.0): averaging starts from the current weights
        optimizer.observe(loss)
    assert optimizer.averaging
    seen = [[p.detach().clone() for p in model.parameters()]]
    for _ in range(4):
        step(model, optimizer, x, y)
        seen.append([p.detach().clone() for p in model.parameters()])
    trained = [p.detach().clone() for p in model.parameters()]
    model.eval()
    loss = evaluate_with_averages(optimizer, model, lambda: torch.nn.functional.mse_loss(model(x), y).item())
    for p, history in zip(model.parameters(), zip(*seen)):
        torch.testing.assert_close(p.detach(), torch.stack(history).mean(0))
    assert loss == pytest.approx(torch.nn.functional.mse_loss(model(x), y).item())
    assert optimizer.param_groups[0]["losses"][-1] == loss
    model.train()
    step(model, optimizer, x, y)  # the next training forward puts the trained weights back
    optimizer.zero_grad()
    twin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        twin.weight.copy_(trained[0])
        twin.bias.copy_(trained[1])
    step(twin, torch.optim.SGD(twin.parameters(), lr=0.1), x, y)
    torch.testing.assert_close(model.weight, twin.weight)


def test_make_optimizer_and_plain_evaluation():
    model, _, _ = model_and_data()
    args = TrainingArguments(output_dir="unused", optimizer="nt_asgd", learning_rate=30.0, nonmono=3)
    optimizer = make_optimizer(model, args)
    assert isinstance(optimizer, NTASGD) and optimizer.param_groups[0]["nonmono"] == 3
    assert evaluate_with_averages(torch.optim.SGD(model.parameters(), lr=1.0), model, lambda: 2.5) == 2.5
    with pytest.raises(ValueError, match="--nonmono"):
        TrainingArguments(output_dir="unused", nonmono=0)
