"""The Wasserstein distance between two corpora's word distributions (the blog's third measure of
distribution similarity, beside KL and JS; ``analyze similarity --wasserstein VECTORS``).

Each corpus is its ``TOP_WORDS`` most frequent words that have a vector, weighted by their counts
(normalised to sum to 1). Moving mass from word u to word v costs their cosine distance, 1 - cos(u, v),
in a static embedding (GloVe 6B 50d, or a vector file); the distance is the least total cost of turning
one distribution into the other (earth mover's distance, solved exactly by POT's ``ot.emd2``). Unlike
KL and JS, words that differ but mean alike ("gonna" and "going") are near: the measure sees
paraphrase, not only shared vocabulary. 0 for one corpus with itself; at most 2.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from seqtransfer.embeddings.static import load_vectors
from seqtransfer.errors import SeqTransferError

TOP_WORDS = 500  # words per corpus: the exact solver is cubic in them (500: about 0.1 s a pair)


def top_words(counts: Counter, known: dict[str, int]) -> tuple[list[int], np.ndarray]:
    """(rows of the corpus's most frequent words that have a vector, their normalised weights)."""
    chosen = [(known[word], count) for word, count in counts.most_common() if word in known][:TOP_WORDS]
    if not chosen:
        raise SeqTransferError("a corpus has no word with a vector: no Wasserstein distance", hint="use vectors of the corpora's language")
    weights = np.array([count for _, count in chosen], dtype=np.float64)
    return [row for row, _ in chosen], weights / weights.sum()


def wasserstein_table(counts: dict[str, Counter], vectors: str) -> dict[str, dict[str, float]]:
    """first -> second -> Wasserstein distance of their top-word distributions (symmetric)."""
    try:
        import ot
    except ImportError:
        raise SeqTransferError("the Wasserstein distance needs POT, which is not installed", hint="pip install 'seqtransfer[similarity]' (POT)") from None
    wanted = {word for table in counts.values() for word, _ in table.most_common(TOP_WORDS * 4)}
    loaded = load_vectors(vectors, wanted, lowercase=True)
    unit = loaded.matrix / np.maximum(np.linalg.norm(loaded.matrix, axis=1, keepdims=True), 1e-12)
    known = loaded.row_index()
    chosen = {name: top_words(table, known) for name, table in counts.items()}
    result: dict[str, dict[str, float]] = {name: {} for name in counts}
    for first in counts:
        for second in counts:
            if second in result[first]:
                continue
            (rows_a, weights_a), (rows_b, weights_b) = chosen[first], chosen[second]
            cost = np.clip(1.0 - unit[rows_a] @ unit[rows_b].T, 0.0, 2.0).astype(np.float64)
            distance = float(ot.emd2(weights_a, weights_b, cost))
            result[first][second] = result[second][first] = max(distance, 0.0)
    return result
