"""SGD with momentum that updates a word-embedding table only where a batch used it.

A batch of 16 sentences uses a few hundred of the table's tens of thousands of rows, but plain
momentum SGD rewrites every row at every step: the momentum buffer of an unused row decays and
the row keeps moving. Reading and writing the whole table (and its dense gradient) was about a
tenth of a CoNLL-2003 training step.

``LazyMomentumSGD`` gives the same result, row by row, without touching unused rows. A row last
updated at step s with momentum buffer b, and unused for the k steps after it, would have moved
by ``-lr * (mu + mu**2 + ... + mu**k) * b`` and its buffer would be ``mu**k * b``. The row is
brought up to date with that closed form just before a batch reads it (a forward pre-hook on
the embedding, see ``track_rows``), and every row is when ``synchronize()`` is called. The
training loop tracks rows during an epoch and synchronizes at its end, before the table is
evaluated or saved, so the weights and buffers equal dense SGD's (up to float rounding).

Parameters whose gradient is sparse (``nn.Embedding(sparse=True)``) take this path; all others
take torch's fused SGD. Weight decay, dampening and Nesterov momentum make every row's update
depend on more than its buffer, so with any of them sparse gradients are made dense.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn


class LazyMomentumSGD(torch.optim.SGD):
    """``torch.optim.SGD`` (fused) plus exact lazy updates for parameters with sparse gradients.

    A batch must see its rows up to date, so ``track_rows(model)`` registers a hook that catches
    up the rows an embedding is about to read; ``synchronize()`` catches up every row.
    """

    # On a CPU, reading on the host whether any row missed a step skips the catch-up's arithmetic
    # when none did (the common case). On a GPU that read makes the host wait for the queue to
    # drain, once per table at each catch-up (two or more a step), so there the catch-up always
    # runs: with no step missed it is an exact no-op (decay 1, shift 0). None: check on a CPU
    # only; benchmarks/launches.py sets False to count what a GPU runs.
    check_on_host: bool | None = None

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001 - torch's signature
        self._start_late_buffers()
        # A GradScaler (fp16) hands a fused optimizer its overflow flag instead of skipping the
        # step: the fused step then leaves the dense weights alone, and so must the lazy rows.
        overflow = getattr(self, "found_inf", None) is not None and bool(self.found_inf)
        hidden = []
        for group in self.param_groups:
            for parameter in group["params"]:
                if parameter.grad is None:
                    continue
                if parameter.grad.is_sparse and (group["weight_decay"] or group["dampening"] or group["nesterov"] or group["maximize"]):
                    parameter.grad = parameter.grad.to_dense()
                if not parameter.grad.is_sparse:
                    if "last_step" in self.state[parameter]:  # a dense step needs every row up to date
                        self._catch_up(parameter, self.state[parameter])
                    continue
                if not overflow:
                    self._lazy_update(group, parameter)
                hidden.append((parameter, parameter.grad))
                parameter.grad = None  # the fused step skips parameters without a gradient
        try:
            return super().step(closure)
        finally:
            for parameter, gradient in hidden:
                parameter.grad = gradient

    def _start_late_buffers(self) -> None:
        """Give a zero momentum buffer to a parameter whose first gradient comes after other
        parameters' first steps (a multi-task branch first trained at a later batch).

        The fused step takes every buffer or none; with a zero buffer, b = mu * 0 + g = g is
        exactly torch's first step (b = g).
        """
        if not any("momentum_buffer" in state for state in self.state.values()):
            return  # the first step: torch starts every buffer itself
        for group in self.param_groups:
            if not group["momentum"]:
                continue
            for parameter in group["params"]:
                if parameter.grad is not None and not parameter.grad.is_sparse and "momentum_buffer" not in self.state[parameter]:
                    self.state[parameter]["momentum_buffer"] = torch.zeros_like(parameter)

    def _lazy_update(self, group: dict, parameter: torch.Tensor) -> None:
        """One momentum SGD step on the rows of the sparse gradient: b = mu * b + g, w -= lr * b."""
        state = self._lazy_state(group, parameter)
        if state["lr"] != group["lr"]:  # a catch-up assumes one learning rate since the last sync
            self._catch_up(parameter, state)
            state["lr"] = group["lr"]
        gradient = parameter.grad.coalesce()
        rows, values = gradient.indices()[0], gradient.values()  # (R,), (R, D)
        self._catch_up(parameter, state, rows)  # nothing to do when track_rows already did it
        buffer = state["momentum_buffer"]
        updated = buffer.index_select(0, rows).mul_(group["momentum"]).add_(values)
        buffer.index_copy_(0, rows, updated)
        parameter.index_add_(0, rows, updated, alpha=-group["lr"])
        state["step"] += 1
        state["last_step"].index_fill_(0, rows, state["step"])

    def _lazy_state(self, group: dict, parameter: torch.Tensor) -> dict:
        state = self.state[parameter]
        if "last_step" not in state:
            if state.get("momentum_buffer") is None:  # a buffer resumed from a checkpoint is kept
                state["momentum_buffer"] = torch.zeros_like(parameter)
            state["last_step"] = torch.zeros(parameter.size(0), dtype=torch.long, device=parameter.device)
            state["step"] = 0  # steps taken; row r is up to date through step last_step[r]
            state["lr"] = group["lr"]
            state["momentum"] = group["momentum"]
        return state

    @staticmethod
    def _catch_up(parameter: torch.Tensor, state: dict, rows: torch.Tensor | None = None) -> None:
        """Apply to ``rows`` (None: every row) the steps they missed since their last update."""
        momentum, buffer, last_step = state["momentum"], state["momentum_buffer"], state["last_step"]
        missed = state["step"] - (last_step if rows is None else last_step.index_select(0, rows))
        check = buffer.device.type == "cpu" if LazyMomentumSGD.check_on_host is None else LazyMomentumSGD.check_on_host
        if momentum and (not check or bool((missed > 0).any())):
            decay = torch.pow(momentum, missed.to(buffer.dtype)).unsqueeze(1)  # mu**k
            shift = (momentum * (1 - decay) / (1 - momentum)) * -state["lr"]  # -lr * (mu + ... + mu**k)
            if rows is None:
                parameter.addcmul_(shift, buffer)
                buffer.mul_(decay)
            else:
                selected = buffer.index_select(0, rows)
                parameter.index_add_(0, rows, selected * shift)
                buffer.index_copy_(0, rows, selected * decay)
        if rows is None:
            last_step.fill_(state["step"])
        else:
            last_step.index_fill_(0, rows, state["step"])

    @torch.no_grad()
    def synchronize(self) -> None:
        """Bring every row of every lazily updated parameter up to date (before using the weights)."""
        for parameter, state in self.state.items():
            if "last_step" in state:
                self._catch_up(parameter, state)

    @contextmanager
    def track_rows(self, model: nn.Module) -> Iterator[None]:
        """While active, each sparse embedding of ``model`` catches up the rows it reads; then synchronize."""

        def catch_up_rows(module: nn.Embedding, inputs: tuple[torch.Tensor, ...]) -> None:
            state = self.state.get(module.weight, {})
            if "last_step" in state and module.training:
                with torch.no_grad():
                    self._catch_up(module.weight, state, torch.unique(inputs[0]))

        handles = [module.register_forward_pre_hook(catch_up_rows) for module in model.modules() if isinstance(module, nn.Embedding) and module.sparse]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()
            self.synchronize()


def dense_gradients_off_the_cpu(model: nn.Module, device: torch.device) -> int:
    """Off the CPU, every sparse embedding of ``model`` gets dense gradients; returns how many.

    Sparse gradients pay off on a CPU: the lazy optimizer reads and writes only the batch's rows of
    a table of tens of thousands. On a GPU they cost host synchronisations: their coalescing and
    the rows' ``unique`` have data-dependent sizes, so the host waits for the device at each, several
    times a step; a dense update of the table there is a few kernels. Dense gradients take torch's
    fused SGD (and the Transformer's optimizer its plain path); the weights agree with the lazy
    path's to float rounding (``tests/test_optimizer.py``)."""
    if device.type == "cpu":
        return 0
    tables = [module for module in model.modules() if isinstance(module, nn.Embedding) and module.sparse]
    for table in tables:
        table.sparse = False
    return len(tables)


def clip_gradient_norm(parameters: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
    """``nn.utils.clip_grad_norm_`` that also accepts sparse gradients; returns the total norm.

    A sparse gradient may list a row several times (a word used twice in a batch); it is
    coalesced first, so that its norm is that of the dense gradient it stands for.
    """
    dense, values = [], []
    for parameter in parameters:
        if parameter.grad is None:
            continue
        if parameter.grad.is_sparse:
            parameter.grad = parameter.grad.coalesce()
            values.append(parameter.grad._values())  # a view: scaling it scales the gradient
        else:
            dense.append(parameter.grad)
    total = nn.utils.get_total_norm(dense + values, foreach=True)
    coefficient = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # the formula of clip_grad_norm_
    if dense:
        torch._foreach_mul_(dense, coefficient)
    for tensor in values:
        tensor.mul_(coefficient)
    return total
