"""Decoding well-formed trees from arc scores: maximum spanning arborescence (Chu-Liu/Edmonds).

The algorithm itself is ``ufal.chu_liu_edmonds`` (UDPipe's C++ implementation). A single root
is obtained exactly: when the unconstrained tree attaches several tokens to the root, each
token is tried as the only child of the root and the best tree is kept (n spanning-tree calls,
only for those sentences).
"""

from __future__ import annotations

import numpy as np
from ufal.chu_liu_edmonds import chu_liu_edmonds


def _spanning_tree(matrix: np.ndarray) -> tuple[np.ndarray, float]:
    heads, score = chu_liu_edmonds(matrix)
    return np.asarray(heads[1:], dtype=np.int64), score


def maximum_spanning_tree(scores: np.ndarray, single_root: bool = True) -> np.ndarray:
    """(n, n+1) scores, ``scores[i, j]`` = score of head j (0 = root) for token i+1 -> (n,) heads.

    Scores should be log-probabilities (or any additive arc scores); self-loops are ignored.
    """
    count = scores.shape[0]
    matrix = np.full((count + 1, count + 1), np.nan)
    matrix[1:] = scores.astype(np.float64)
    np.fill_diagonal(matrix, np.nan)  # no token heads itself; row 0 (the root) has no head
    heads, _ = _spanning_tree(matrix)
    if not single_root or int((heads == 0).sum()) == 1:
        return heads
    best_heads, best_score = heads, -np.inf
    root_scores = matrix[1:, 0].copy()
    for child in range(count):
        matrix[1:, 0] = np.nan
        matrix[child + 1, 0] = root_scores[child]
        candidate, score = _spanning_tree(matrix)
        if score > best_score:
            best_heads, best_score = candidate, score
    return best_heads
