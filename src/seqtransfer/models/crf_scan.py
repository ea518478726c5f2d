"""The linear-chain CRF's recursions over time steps as trees of semiring matrix products, for
devices where a step is bound by operator launches (a GPU; issue 51): ceil(log2 T) levels of a
dozen operators instead of a few operators per time step.

Step t's matrix is M_t[i, j] = transitions[i, j] + emission[t, j] (from label i at t - 1 to label j
at t); past a sentence's end it is the semiring's identity (0 on the diagonal, -inf elsewhere),
which carries the last label. The log partition multiplies them in the log semiring (logsumexp
of sums), Viterbi in the max-plus semiring (max of sums), recording at each product the best
label at the boundary between its two spans; those labels are read back top-down, one gather
per level. Shapes: B sentences, T positions, L labels.
"""

from __future__ import annotations

import torch


def semiring_identity(label_count: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(L, L): 0 on the diagonal, -inf elsewhere (the identity of both semirings)."""
    return torch.full((label_count, label_count), float("-inf"), dtype=dtype, device=device).fill_diagonal_(0.0)


def step_matrices(emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor, identity: torch.Tensor) -> torch.Tensor:
    """(B, T, L), (B, T), (L, L), (L, L) -> (B, T-1, L, L) in the identity's dtype: M_t for t = 1 .. T-1, the identity past each end."""
    steps = transitions.to(identity.dtype) + emissions[:, 1:].to(identity.dtype).unsqueeze(2)  # [from, to]
    return torch.where(mask[:, 1:, None, None], steps, identity)


def padded_to_even(steps: torch.Tensor, identity: torch.Tensor) -> torch.Tensor:
    """(B, n, L, L) -> (B, n or n + 1, L, L): the (L, L) identity appended where n is odd."""
    if steps.size(1) % 2 == 0:
        return steps
    return torch.cat([steps, identity.expand(steps.size(0), 1, -1, -1)], dim=1)


def log_matrix_product(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """(..., L, L) twice -> (..., L, L): log(exp(first) @ exp(second)) (the log semiring's product),
    as one matrix product of exponentials shifted by each row's and column's maximum. The shifts
    are constants to autograd (the result does not depend on them), and an entry whose every term
    underflows is clamped to the smallest normal float64 rather than becoming log 0."""
    row_maximum = first.detach().amax(-1, keepdim=True)  # (..., L, 1): finite, every row has a finite entry
    column_maximum = second.detach().amax(-2, keepdim=True)  # (..., 1, L)
    product = torch.exp(first - row_maximum) @ torch.exp(second - column_maximum)
    return product.clamp(min=torch.finfo(product.dtype).tiny).log() + row_maximum + column_maximum


def log_partition_scan(emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """(B,) log Z as a tree of log-semiring matrix products (with autograd): about 12 operators per
    level and ceil(log2 T) levels, where the loop over time steps runs about 17 per step in a
    training step (``benchmarks/launches.py``). In float64, as ``ForwardBackward``. Memory:
    (B, T, L, L) float64."""
    first = start.double() + emissions[:, 0].double()  # (B, L)
    if emissions.size(1) > 1:
        identity = semiring_identity(emissions.size(2), torch.float64, emissions.device)
        steps = step_matrices(emissions, mask, transitions, identity)
        while steps.size(1) > 1:
            steps = padded_to_even(steps, identity)
            steps = log_matrix_product(steps[:, 0::2], steps[:, 1::2])
        first = log_matrix_product(first.unsqueeze(1), steps[:, 0]).squeeze(1)  # (B, L)
    return torch.logsumexp(first + end.double(), dim=1).to(emissions.dtype)


def max_plus_product(first: torch.Tensor, second: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., L, L) twice -> (..., L, L) max_k first[i, k] + second[k, j], and (..., L, L) that best k."""
    return (first.unsqueeze(-1) + second.unsqueeze(-3)).max(dim=-2)


def viterbi_scan(emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """(B, T) best label paths (0 past each end), as the loop over time steps finds them up to ties
    between equally good paths. Up: pairs of spans are joined by max-plus products, each keeping
    the best boundary label for every pair of end labels (B, n, L, L). Down: from the best first
    and last labels, each level's boundary labels are read by one gather. Memory: the largest
    product is (B, T/2, L, L, L)."""
    batch_size, width, label_count = emissions.shape
    scores = start + emissions[:, 0]  # (B, L)
    if width == 1:
        return (scores + end).argmax(dim=1, keepdim=True) * mask.long()
    identity = semiring_identity(label_count, emissions.dtype, emissions.device)
    steps, boundaries, counts = step_matrices(emissions, mask, transitions, identity), [], []
    while steps.size(1) > 1:
        counts.append(steps.size(1))
        steps = padded_to_even(steps, identity)
        steps, best = max_plus_product(steps[:, 0::2], steps[:, 1::2])  # (B, n/2, L, L) twice
        boundaries.append(best)
    ends = (scores.unsqueeze(2) + steps[:, 0] + end.unsqueeze(0)).flatten(1).argmax(dim=1)  # (B,) over (first, last) pairs
    labels = torch.stack([ends // label_count, ends % label_count], dim=1)  # (B, 2): the root span's end labels
    for best, count in zip(reversed(boundaries), reversed(counts)):
        pairs = labels[:, :-1] * label_count + labels[:, 1:]  # (B, n): each span's (first, last) pair
        middle = best.flatten(2).gather(2, pairs.unsqueeze(-1)).squeeze(-1)  # (B, n): its boundary label
        interleaved = torch.stack([labels[:, :-1], middle], dim=2).flatten(1)  # first, middle, first, middle, ...
        labels = torch.cat([interleaved, labels[:, -1:]], dim=1)[:, : count + 1]  # the padded identity's boundary dropped
    return labels * mask.long()
