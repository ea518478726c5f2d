"""Deep biaffine dependency parser (Dozat & Manning 2017) with Stanza's sizes (Qi et al. 2018).

    x        = Upsilon(w)                     WRE: words + character BiLSTM, as the tagger     (B, T, D)
    h        = BiLSTM^L([root; x])            a learned ROOT input before the first token       (B, T+1, H)
    a_d, a_h = MLP_arc-dep(h[:, 1:]), MLP_arc-head(h)                                          (B, T, A), (B, T+1, A)
    r_d, r_h = MLP_rel-dep(h[:, 1:]), MLP_rel-head(h)                                          (B, T, R), (B, T+1, R)
    S_arc[b, i, j] = [a_d;1]^T U [a_h;1]      score of head j (0 = ROOT) for token i+1          (B, T, T+1)
    S_rel[b, i, l] = [r_d;1]^T W_l [r_h[head of i];1]                                          (B, T, L)

Loss: summed over tokens, cross-entropy over the heads plus cross-entropy over the relations of
the gold arcs (as the tagger, the loss is a sum over the batch's tokens). Decoding: maximum
spanning tree over the log-softmax arc scores (``spanning_tree.py``), then each token's best
relation for its decoded head. The MLPs use LeakyReLU(0.1) and the biaffine weights start at
zero, as in Dozat & Manning. The parser is the word encoder (its BiLSTM reading a learned ROOT
first) under the dependency head (``models/encoders.py``, ``models/heads.py``): module names follow
the tagger's (``word_representation``, ``feature_extractor``, ``classifier``) so that the transfer
schemes apply unchanged.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as functional
from torch import nn

from seqtransfer.models.bilstm import StackedBiLSTM
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.spanning_tree import maximum_spanning_tree

# Bytes per arc score of a batch: the scores, their masked copy and log-softmax in fp32 (training:
# the cross-entropy's and the backward pass's copies too)
ARC_SCORE_BYTES = {"training": 4 * 6, "decoding": 4 * 4}


def arc_score_bytes(sentences: int, length: int, training: bool) -> int:
    """About what the (B, T, T + 1) arc scores of ``sentences`` sentences of ``length`` tokens take."""
    return sentences * length * (length + 1) * ARC_SCORE_BYTES["training" if training else "decoding"]


def with_bias(inputs: torch.Tensor) -> torch.Tensor:
    """(..., D) -> (..., D + 1) with a trailing 1."""
    return torch.cat([inputs, inputs.new_ones(*inputs.shape[:-1], 1)], dim=-1)


class Biaffine(nn.Module):
    """s_o(x, y) = [x;1]^T W_o [y;1]: bilinear, linear in x and in y, and a bias, per output o."""

    def __init__(self, left_size: int, right_size: int, outputs: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(outputs, left_size + 1, right_size + 1))

    def pairwise(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """(B, N, X), (B, M, Y) -> (B, N, M) scores of every pair (one output)."""
        return with_bias(left) @ self.weight[0] @ with_bias(right).transpose(1, 2)

    def aligned(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """(B, N, X), (B, N, Y) -> (B, N, O) scores of each position's pair, every output."""
        # functional.bilinear: 1.6-1.8x faster than the equivalent einsum at Tweebank's shapes (measured)
        batch, count, _ = left.shape
        scores = functional.bilinear(with_bias(left).reshape(batch * count, -1), with_bias(right).reshape(batch * count, -1), self.weight)
        return scores.view(batch, count, -1)


class MLP(nn.Sequential):
    def __init__(self, input_size: int, hidden: int, dropout: float) -> None:
        super().__init__(nn.Linear(input_size, hidden), nn.LeakyReLU(0.1), Dropout(dropout))


class RootedBiLSTM(nn.Module):
    """A learned ROOT input vector before each sentence, then a stacked BiLSTM: (B, T, D) -> (B, T+1, H)."""

    def __init__(self, input_size: int, hidden: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.root = nn.Parameter(torch.randn(input_size) * 0.1)
        self.lstm = StackedBiLSTM(input_size, hidden, layers, Dropout(dropout))
        self.output_size = hidden

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        root = self.root.expand(inputs.size(0), 1, -1)
        return self.lstm(torch.cat([root, inputs], dim=1), lengths + 1)


class BiaffineClassifier(nn.Module):
    """The four MLPs and the arc and relation biaffine scorers."""

    def __init__(self, input_size: int, arc_hidden: int, relation_hidden: int, label_count: int, dropout: float) -> None:
        super().__init__()
        self.arc_dependent = MLP(input_size, arc_hidden, dropout)
        self.arc_head = MLP(input_size, arc_hidden, dropout)
        self.relation_dependent = MLP(input_size, relation_hidden, dropout)
        self.relation_head = MLP(input_size, relation_hidden, dropout)
        self.arc_scorer = Biaffine(arc_hidden, arc_hidden, 1)
        self.relation_scorer = Biaffine(relation_hidden, relation_hidden, label_count)

    def arc_scores(self, states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T+1, H) -> (B, T, T+1); heads past the sentence and self-loops are -inf."""
        scores = self.arc_scorer.pairwise(self.arc_dependent(states[:, 1:]), self.arc_head(states))
        heads = torch.arange(states.size(1), device=states.device)  # (T+1,)
        dependents = torch.arange(1, states.size(1), device=states.device).unsqueeze(1)  # (T, 1)
        invalid = (heads > lengths.view(-1, 1, 1)) | (heads == dependents)  # (B, T, T+1)
        return scores.masked_fill(invalid, float("-inf"))

    def relation_scores(self, states: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """(B, T+1, H), (B, T) head of each token -> (B, T, L)."""
        head_states = self.relation_head(states)  # (B, T+1, R)
        index = heads.clamp(min=0).unsqueeze(-1).expand(-1, -1, head_states.size(-1))
        return self.relation_scorer.aligned(self.relation_dependent(states[:, 1:]), head_states.gather(1, index))

    def loss(self, states: torch.Tensor, heads: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T+1, H) states, (B, T) gold heads and relations (-1: unseen), mask [, (B,) sentence weights] -> summed cross-entropies."""
        arc_scores = self.arc_scores(states, lengths)[mask]  # before the relation MLPs: their dropout draws come second
        relation_scores = self.relation_scores(states, heads)[mask]
        if weights is None:
            return functional.cross_entropy(arc_scores, heads[mask], reduction="sum") + functional.cross_entropy(relation_scores, labels[mask], ignore_index=-1, reduction="sum")
        token_weights = weights[:, None].expand_as(mask)[mask]
        arc_losses = functional.cross_entropy(arc_scores, heads[mask], reduction="none")
        relation_losses = functional.cross_entropy(relation_scores, labels[mask], ignore_index=-1, reduction="none")
        return ((arc_losses + relation_losses) * token_weights).sum()

    def decode(self, states: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor, single_root: bool) -> dict[str, torch.Tensor]:
        """(B, T+1, H) -> {"heads": (B, T) maximum spanning trees, "labels": (B, T) relation indices}."""
        log_probabilities = self.arc_scores(states, lengths).log_softmax(-1).float().cpu().numpy()
        heads = np.zeros(mask.shape, dtype=np.int64)
        for row, length in enumerate(lengths.tolist()):
            heads[row, :length] = maximum_spanning_tree(log_probabilities[row, :length, : length + 1], single_root)
        heads = torch.from_numpy(heads).to(states.device)
        labels = self.relation_scores(states, heads).argmax(-1)
        return {"heads": heads, "labels": labels * mask.long()}
