"""Lazy momentum SGD on sparse embedding gradients equals dense momentum SGD, row by row."""

import pytest
import torch
from torch import nn

from seqtransfer.training.optimizer import LazyMomentumSGD, clip_gradient_norm


def train_pair(steps, learning_rates, momentum=0.9, weight_decay=0.0, clip=None):
    """The same model and batches, once with a dense and once with a sparse embedding."""
    torch.manual_seed(0)
    dense, sparse = nn.Embedding(30, 4), nn.Embedding(30, 4, sparse=True)
    dense_linear, sparse_linear = nn.Linear(4, 1), nn.Linear(4, 1)
    sparse.load_state_dict(dense.state_dict())
    sparse_linear.load_state_dict(dense_linear.state_dict())
    reference = torch.optim.SGD([*dense.parameters(), *dense_linear.parameters()], lr=learning_rates[0], momentum=momentum, weight_decay=weight_decay)
    lazy = LazyMomentumSGD([*sparse.parameters(), *sparse_linear.parameters()], lr=learning_rates[0], momentum=momentum, weight_decay=weight_decay, fused=True)
    generator = torch.Generator().manual_seed(1)
    with lazy.track_rows(sparse):
        run_steps(steps, learning_rates, clip, generator, (dense, dense_linear, reference), (sparse, sparse_linear, lazy))
    return dense, sparse, reference, lazy


def run_steps(steps, learning_rates, max_norm, generator, *setups):
    """Train each (embedding, linear, optimizer) setup on the same random batches."""
    for step in range(steps):
        for _, _, optimizer in setups:
            for group in optimizer.param_groups:
                group["lr"] = learning_rates[step % len(learning_rates)]
        words = torch.randint(0, 30, (3, 5), generator=generator)  # few rows per step, with repeats
        for embedding, linear, optimizer in setups:
            optimizer.zero_grad(set_to_none=True)
            torch.tanh(linear(embedding(words))).square().sum().backward()
            if max_norm:
                parameters = [*embedding.parameters(), *linear.parameters()]
                clip = clip_gradient_norm if isinstance(optimizer, LazyMomentumSGD) else nn.utils.clip_grad_norm_
                clip(parameters, max_norm)
            optimizer.step()


@pytest.mark.parametrize("momentum", [0.9, 0.0])
def test_lazy_updates_equal_dense_momentum_sgd(momentum):
    dense, sparse, reference, lazy = train_pair(40, [0.05], momentum=momentum, clip=1.0)
    assert torch.allclose(dense.weight, sparse.weight, atol=1e-5)
    if momentum:
        assert torch.allclose(reference.state[dense.weight]["momentum_buffer"], lazy.state[sparse.weight]["momentum_buffer"], atol=1e-5)


def test_lazy_updates_follow_a_learning_rate_that_changes_every_step():
    dense, sparse, _, _ = train_pair(30, [0.05, 0.01, 0.03])
    assert torch.allclose(dense.weight, sparse.weight, atol=1e-5)


def test_weight_decay_falls_back_to_dense_updates():
    dense, sparse, _, _ = train_pair(10, [0.05], weight_decay=0.01)
    assert torch.allclose(dense.weight, sparse.weight, atol=1e-5)


def test_clipping_a_sparse_gradient_with_repeated_rows_uses_its_dense_norm():
    embedding = nn.Embedding(5, 2, sparse=True)
    with torch.no_grad():
        embedding.weight.fill_(1.0)
    embedding(torch.tensor([1, 1, 3])).sum().backward()  # row 1 twice: dense gradient (2, 2) and (1, 1)
    total = clip_gradient_norm([embedding.weight], max_norm=1.0)
    assert total.item() == pytest.approx(10**0.5)
    clipped = embedding.weight.grad.to_dense()
    assert clipped.norm().item() == pytest.approx(1.0, abs=1e-5)
    assert clipped[1, 0].item() == pytest.approx(2 / 10**0.5, abs=1e-5)


def test_rows_a_batch_does_not_use_are_left_alone_until_read():
    embedding = nn.Embedding(4, 2, sparse=True)
    optimizer = LazyMomentumSGD(embedding.parameters(), lr=0.1, momentum=0.9, fused=True)
    with optimizer.track_rows(embedding):
        for _ in range(2):
            optimizer.zero_grad()
            embedding(torch.tensor([1])).sum().backward()
            optimizer.step()
        row_one = embedding.weight[1].detach().clone()
        for _ in range(3):
            optimizer.zero_grad()
            embedding(torch.tensor([2])).sum().backward()
            optimizer.step()
        assert torch.equal(embedding.weight[1], row_one)  # not read: not rewritten
    # dense SGD would have moved row 1 by lr * (0.9 + 0.9**2 + 0.9**3) * its buffer (0.9 + 1)
    expected = row_one - 0.1 * (0.9 + 0.9**2 + 0.9**3) * 1.9
    assert torch.allclose(embedding.weight[1], expected)


def test_schedules_inverse_time_per_epoch_and_linear_warmup_then_decay():
    from seqtransfer.config import TrainConfig
    from seqtransfer.learning_rate_schedules import Position, inverse_time, linear_warmup

    config = TrainConfig(learning_rate_decay=0.05, max_epochs=2, warmup=0.25)
    assert [inverse_time(0.015, Position(epoch, 3, 10), config) for epoch in (1, 2, 3)] == [0.015 / 1.0, 0.015 / 1.05, 0.015 / 1.1]
    rates = [linear_warmup(1.0, Position(epoch, step, 4), config) for epoch in (1, 2) for step in range(4)]
    assert rates == [0.5, 1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6, 0.0]  # 8 steps: 2 warming up, then down to 0 at the last


def test_slanted_triangular_rises_for_cut_frac_then_falls_from_lr_to_lr_over_32():
    from seqtransfer.config import TrainConfig
    from seqtransfer.learning_rate_schedules import Position, slanted_triangular

    config = TrainConfig(max_epochs=1, warmup=0.1)
    rates = [slanted_triangular(3.2, Position(1, step, 100), config) for step in range(100)]
    assert rates[0] == pytest.approx(0.1) and rates[10] == pytest.approx(3.2) and max(rates) == rates[10]
    assert all(a < b for a, b in zip(rates[:10], rates[1:11])) and all(a > b for a, b in zip(rates[10:-1], rates[11:]))
    assert rates[-1] == pytest.approx(0.1 + 3.1 / 90, rel=1e-6)  # one step before the end of the decay to lr/32
    no_warmup = [slanted_triangular(3.2, Position(1, step, 100), TrainConfig(max_epochs=1, warmup=0.0)) for step in range(100)]
    assert no_warmup[0] == pytest.approx(3.2) and no_warmup[-1] == pytest.approx(0.1)  # train.warmup=0 divided by zero
    assert all(a > b for a, b in zip(no_warmup[:-1], no_warmup[1:]))


def test_cosine_annealing_goes_from_the_rate_to_zero_over_every_step():
    from seqtransfer.config import TrainConfig
    from seqtransfer.learning_rate_schedules import Position, cosine

    config = TrainConfig(max_epochs=2)
    rates = [cosine(1.0, Position(epoch, step, 10), config) for epoch in (1, 2) for step in range(10)]
    assert rates[0] == 1.0 and rates[10] == pytest.approx(0.5) and rates[-1] == pytest.approx(0.0062, abs=1e-3)
    assert all(later < earlier for earlier, later in zip(rates, rates[1:]))


def test_the_gpu_path_without_a_host_check_gives_bit_identical_weights(monkeypatch):
    """On a GPU the catch-up runs without asking the host whether a row missed a step (a sync per
    table); run on the CPU that way, it must give exactly the weights the checked path gives."""
    checked = train_pair(25, [0.05, 0.02])
    monkeypatch.setattr(LazyMomentumSGD, "check_on_host", False)
    unchecked = train_pair(25, [0.05, 0.02])
    assert torch.equal(checked[1].weight, unchecked[1].weight)
    assert torch.equal(checked[3].state[checked[1].weight]["momentum_buffer"], unchecked[3].state[unchecked[1].weight]["momentum_buffer"])


def test_sparse_embeddings_get_dense_gradients_off_the_cpu_only():
    """A GPU trains the embedding tables with dense gradients (sparse ones cost host waits there);
    the CPU keeps them sparse for the lazy optimizer."""
    from seqtransfer.training.optimizer import dense_gradients_off_the_cpu

    model = nn.Sequential(nn.Embedding(30, 4, sparse=True), nn.Embedding(9, 2), nn.Linear(2, 1))
    assert dense_gradients_off_the_cpu(model, torch.device("cpu")) == 0 and model[0].sparse
    assert dense_gradients_off_the_cpu(model, torch.device("meta")) == 1 and not model[0].sparse  # any device but the CPU
    model[0](torch.tensor([[1, 2, 2]])).sum().backward()
    assert model[0].weight.grad is not None and not model[0].weight.grad.is_sparse
