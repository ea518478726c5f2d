"""A linear-chain CRF with batched forward algorithm and batched Viterbi decoding.

Written by hand rather than taken from pytorch-crf because we need both loops batched over
sentences (its Viterbi back-tracks one sentence at a time in Python) and exact handling of
right-padded batches of mixed lengths. The only Python loop is over time steps.

The log partition has a hand-written gradient (``ForwardBackward``): its gradient is the
marginal probability of each label and of each label pair, which the forward-backward
algorithm gives with one backward recursion. Both recursions run in probability space (one
small matrix product per step, renormalised, in float64) instead of log space, because
``logsumexp`` over a (B, L, L) tensor costs about 20 us per call on this CPU; and in numpy,
whose operations on arrays this small cost about a microsecond against torch's four to six.
Forward and backward of the log partition of a WNUT-17-sized batch: 1.25 ms with autograd
through the log-space recursion, about 0.9 ms with the torch recursions, 0.44 ms in numpy. So
CPU tensors take ``ForwardBackward`` (numpy), and tensors on a GPU, which needs no host copy,
torch: there a step is bound by operator launches, not arithmetic (issue 51), and the recursion
over time steps launches about 17 kernels per token position in a training step
(``log_partition_torch``), so the log partition runs instead as a tree of log-semiring matrix
products (``log_partition_scan``: about 12 per level, ceil(log2 T) levels; 1,855 -> 371 kernels
per training step at B = 16, T = 100, ``benchmarks/launches.py``), unless its (B, T, L, L) matrices would
exceed ``SCAN_ELEMENTS`` (a tag set of hundreds of labels). All three are tested against each other.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from seqtransfer.models.crf_scan import log_partition_scan, viterbi_scan

SCAN_ELEMENTS = 2**25  # the scans' largest tensor at most (256 MB in float64); else the loop over time steps


def scan_fits(emissions: torch.Tensor, power: int) -> bool:
    """Whether a scan's largest tensor, (B, T, L^power) entries (the log partition's matrices:
    power 2; Viterbi's max-plus product: about (B, T/2, L^3)), stays within ``SCAN_ELEMENTS``."""
    batch_size, width, label_count = emissions.shape
    return batch_size * max(width // (power - 1), 1) * label_count**power <= SCAN_ELEMENTS


def device_log_partition(emissions: torch.Tensor):
    """The log partition function a non-CPU tensor takes: the scan where its matrices fit, else the loop."""
    return log_partition_scan if scan_fits(emissions, 2) else log_partition_torch


class CRF(nn.Module):
    """Transition scores between L labels plus start and end scores."""

    def __init__(self, label_count: int) -> None:
        super().__init__()
        self.transitions = nn.Parameter(torch.zeros(label_count, label_count))  # [from, to]
        self.start = nn.Parameter(torch.zeros(label_count))
        self.end = nn.Parameter(torch.zeros(label_count))

    def negative_log_likelihood(self, emissions: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """Sum over the batch of -log p(labels | emissions), each sentence times its weight when (B,) ``weights`` are given.

        emissions (B, T, L), labels (B, T) (any value where masked), mask (B, T) bool with
        every row's valid positions first and at least one valid position.
        """
        losses = self.log_partition(emissions, mask) - self.path_score(emissions, labels, mask)
        return losses.sum() if weights is None else (losses * weights).sum()

    def path_score(self, emissions: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) score of the given label paths."""
        labels = labels.clamp(min=0)
        weights = mask.to(emissions.dtype)  # (B, T)
        emitted = emissions.gather(2, labels.unsqueeze(-1)).squeeze(-1)  # (B, T)
        moved = self.transitions[labels[:, :-1], labels[:, 1:]]  # (B, T-1)
        lengths = mask.sum(1)
        last_labels = labels.gather(1, (lengths - 1).unsqueeze(1)).squeeze(1)  # (B,)
        return self.start[labels[:, 0]] + (emitted * weights).sum(1) + (moved * weights[:, 1:]).sum(1) + self.end[last_labels]

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) log of the sum over all label paths (forward algorithm).

        CPU tensors take the numpy forward-backward (measured fastest here); other devices the
        log-semiring scan in torch (or the loop over time steps where the scan's matrices would
        not fit), batched over sentences, with autograd (no host copies).
        """
        if emissions.device.type == "cpu":
            return ForwardBackward.apply(emissions, mask, self.transitions, self.start, self.end)
        return device_log_partition(emissions)(emissions, mask, self.transitions, self.start, self.end)

    def marginals(self, emissions: torch.Tensor, mask: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """(B, T, L) label marginals p(y_t = l | sentence), 0 past each sentence's end, of the CRF
        whose every score (emissions, transitions, start, end) is divided by ``temperature``
        (distillation's soft targets): the gradient of log Z with respect to the emissions
        (forward-backward, by the same recursions as training), taken outside inference mode
        whatever the caller's."""
        with torch.inference_mode(False), torch.enable_grad():
            scores, valid = (emissions.detach() / temperature).requires_grad_(), mask.clone()
            transitions, start, end = (parameter.detach() / temperature for parameter in (self.transitions, self.start, self.end))
            partition = ForwardBackward.apply if scores.device.type == "cpu" else device_log_partition(scores)
            (marginals,) = torch.autograd.grad(partition(scores, valid, transitions, start, end).sum(), scores)
        return marginals * valid.unsqueeze(-1)

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T) best label paths (Viterbi); positions beyond each length are 0. A GPU's tensors
        take the max-plus scan where its products fit (``models/crf_scan.py``: about 10 operators
        per level of ceil(log2 T), no host copy); CPU tensors the loop over time steps."""
        if emissions.device.type != "cpu" and scan_fits(emissions, 3):
            return viterbi_scan(emissions, mask, self.transitions, self.start, self.end)
        return self.decode_loop(emissions, mask)

    def decode_loop(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T) best label paths by the loop over time steps. The forward pass runs on the model's device, five operators per time step
        (``benchmarks/launches.py``); the back-pointers then go to the host in one copy and are
        followed there in numpy: on a GPU that is one synchronisation per batch instead of a
        gather launched per time step, and the caller reads the labels on the host anyway."""
        batch_size, width, label_count = emissions.shape
        if not width:
            return emissions.new_zeros((batch_size, 0), dtype=torch.long)
        score = self.start + emissions[:, 0]  # (B, L)
        valid = mask.unsqueeze(2)  # (B, T, 1)
        # Past the end, point each label to itself so back-tracking carries the last label.
        identity = torch.arange(label_count, device=emissions.device).expand(batch_size, label_count)  # (B, L)
        backpointers = []
        for step in range(1, width):
            best_score, best_previous = (score.unsqueeze(2) + self.transitions).max(dim=1)  # (B, L)
            score = torch.where(valid[:, step], best_score + emissions[:, step], score)
            backpointers.append(torch.where(valid[:, step], best_previous, identity))
        best_last = (score + self.end).argmax(dim=1)  # (B,)
        pointers = torch.stack(backpointers, dim=1).cpu().numpy() if backpointers else np.zeros((batch_size, 0, label_count), dtype=np.int64)  # (B, T-1, L)
        path = np.empty((batch_size, width), dtype=np.int64)
        path[:, -1] = best_last.cpu().numpy()
        rows = np.arange(batch_size)
        for step in range(width - 2, -1, -1):
            path[:, step] = pointers[rows, step, path[:, step + 1]]
        return torch.from_numpy(path).to(emissions.device) * mask.long()


def log_partition_torch(emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """(B,) log Z by the forward algorithm in log space, on any device (one loop over time steps)."""
    score = start + emissions[:, 0]  # (B, L)
    for step in range(1, emissions.size(1)):
        candidate = torch.logsumexp(score.unsqueeze(2) + transitions, dim=1) + emissions[:, step]  # (B, L)
        score = torch.where(mask[:, step].unsqueeze(1), candidate, score)
    return torch.logsumexp(score + end, dim=1)


def _scaled_exponential(scores: np.ndarray, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """exp(scores - max) and the max (kept dimension): scores = log(result) + max."""
    largest = scores.max(axis=axis, keepdims=True)
    return np.exp(scores - largest), largest


def forward_recursion(emitted: np.ndarray, valid: np.ndarray, moved: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The forward algorithm in probability space, renormalised at every step.

    emitted (B, T, L) and moved (L, L) are exponentiated emission and transition scores,
    first (L,) the exponentiated start scores, valid (B, T) the mask. Returns alphas (B, T, L),
    each row summing to 1 (past a sentence's end it keeps its last value), and totals (B, T):
    what each step divided by (1 past the end), so that
    log alpha_t = log(alphas_t) + sum of log(totals) up to t (+ the maxima taken out).
    """
    batch_size, width, _ = emitted.shape
    alphas, totals = np.empty_like(emitted), np.ones((batch_size, width))
    everyone = valid.all(0)  # steps where no sentence has ended yet
    candidate = first * emitted[:, 0]
    for step in range(width):
        if step:
            candidate = (alphas[:, step - 1] @ moved) * emitted[:, step]  # (B, L)
        total = candidate.sum(1)
        if everyone[step]:
            np.divide(candidate, total[:, None], out=alphas[:, step])
            totals[:, step] = total
        else:
            alive = valid[:, step]
            alphas[:, step] = np.where(alive[:, None], candidate / np.where(alive, total, 1.0)[:, None], alphas[:, step - 1])
            totals[:, step] = np.where(alive, total, 1.0)
    return alphas, totals


def backward_recursion(emitted: np.ndarray, valid: np.ndarray, moved: np.ndarray, final: np.ndarray) -> np.ndarray:
    """(B, T, L) betas in probability space, each row summing to 1.

    beta_t is proportional to the summed score of every path suffix after position t, the
    exponentiated end scores ``final`` (L,) included. At and past a sentence's last position
    it is ``final``.
    """
    width = emitted.shape[1]
    betas = np.empty_like(emitted)
    betas[:, width - 1] = final
    everyone = valid.all(0)
    for step in range(width - 1, 0, -1):
        candidate = (emitted[:, step] * betas[:, step]) @ moved.T  # (B, L_from)
        candidate /= candidate.sum(1, keepdims=True)
        betas[:, step - 1] = candidate if everyone[step] else np.where(valid[:, step, None], candidate, final)
    return betas


class ForwardBackward(torch.autograd.Function):
    """log Z of each sentence; its gradient is the label and label-pair marginals.

    Inputs: emissions (B, T, L), mask (B, T) with valid positions first, transitions (L, L),
    start (L,), end (L,). Output (B,).

    Both recursions run in numpy, in float64 and probability space (see the module docstring).
    The marginals come out of the normalised alphas and betas without leaving probability
    space: a label marginal is alpha_t * beta_t renormalised, a label-pair marginal is
    alpha_t(i) * exp(transition(i, j) + emission_{t+1}(j)) * beta_{t+1}(j) renormalised.
    """

    @staticmethod
    def forward(context, emissions, mask, transitions, start, end):
        scores = emissions.detach().double().numpy()
        valid = mask.numpy()
        emitted, emission_max = _scaled_exponential(scores, 2)  # (B, T, L), (B, T, 1)
        moved, transition_max = _scaled_exponential(transitions.detach().double().numpy(), None)  # (L, L), (1, 1)
        first, start_max = _scaled_exponential(start.detach().double().numpy(), None)
        final, end_max = _scaled_exponential(end.detach().double().numpy(), None)
        alphas, totals = forward_recursion(emitted, valid, moved, first)
        lengths = valid.sum(1)
        last = np.arange(len(lengths)), lengths - 1
        log_partition = np.log(totals).sum(1) + (emission_max[..., 0] * valid).sum(1) + transition_max[0, 0] * (lengths - 1) + start_max[0] + np.log(alphas[last] @ final) + end_max[0]
        context.arrays = emitted, valid, moved, final, alphas, last
        return torch.from_numpy(log_partition).to(emissions.dtype)

    @staticmethod
    def backward(context, grad_output):
        emitted, valid, moved, final, alphas, last = context.arrays
        betas = backward_recursion(emitted, valid, moved, final)
        weights = grad_output.double().numpy()[:, None] * valid  # (B, T): dL/dlogZ where valid
        unary = alphas * betas  # (B, T, L), label marginals once renormalised
        unary *= (weights / np.where(valid, unary.sum(2), 1.0))[..., None]
        # Pairs (t, t + 1): alpha_t(i) moved(i, j) after(j), with after = emitted_{t+1} * beta_{t+1}.
        after = emitted[:, 1:] * betas[:, 1:]  # (B, T-1, L)
        normaliser = ((alphas[:, :-1] @ moved) * after).sum(2)  # (B, T-1)
        pair_weights = weights[:, 1:] / np.where(valid[:, 1:], normaliser, 1.0)
        label_count = moved.shape[0]
        weighted_alphas = (alphas[:, :-1] * pair_weights[..., None]).reshape(-1, label_count)
        pairwise = moved * (weighted_alphas.T @ after.reshape(-1, label_count))  # (L, L), summed over b, t
        dtype = grad_output.dtype
        return (torch.from_numpy(unary).to(dtype), None, torch.from_numpy(pairwise).to(dtype), torch.from_numpy(unary[:, 0].sum(0)).to(dtype), torch.from_numpy(unary[last].sum(0)).to(dtype))
