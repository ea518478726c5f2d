"""How far apart two corpora are: term distributions, out-of-vocabulary rate, language models.

Words are compared after :func:`normalize` (lower-cased, every digit → ``0``). For corpora P and Q:

- **Jensen–Shannon divergence** (base 2, in [0, 1]) of their word unigram distributions over the
  union of their vocabularies, unsmoothed (M = (P + Q) / 2 is positive wherever P or Q is), as in
  Ruder & Plank (2017) and the To-tune paper's Table 6;
- **Kullback–Leibler divergence** KL(P ‖ Q) (bits) with Lidstone smoothing, α = 0.01 per word of
  the union vocabulary (KL is infinite where Q misses a word of P; α is an option);
- **out-of-vocabulary rate**: the share of P's tokens whose word type Q never has;
- **cross-entropy** (bits per token, ``</s>`` included) of P under a word trigram language model
  of Q with interpolated Kneser–Ney smoothing (:class:`TrigramLM`). The difference of two such
  cross-entropies per sentence is Moore & Lewis's (2010) selection score.

The word normalisation, the counts and the trigram model are data/trigram_lm.py's (training-data
selection, corpora/selection.py, scores sentences with them too).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from seqtransfer.analysis.figures import new_figure
from seqtransfer.analysis.wasserstein import wasserstein_table
from seqtransfer.data.corpus import read_lines
from seqtransfer.data.trigram_lm import Sentences, TrigramLM, unigram_counts
from seqtransfer.errors import SeqTransferError

LIDSTONE_ALPHA = 0.01


def js_divergence(first: Counter, second: Counter) -> float:
    """Jensen–Shannon divergence (bits) of two word-count distributions."""
    first_total, second_total = sum(first.values()), sum(second.values())
    total = 0.0
    for word in first.keys() | second.keys():
        p, q = first[word] / first_total, second[word] / second_total
        mean = (p + q) / 2
        total += (p * math.log2(p / mean) if p else 0.0) + (q * math.log2(q / mean) if q else 0.0)
    return total / 2


def kl_divergence(first: Counter, second: Counter, alpha: float = LIDSTONE_ALPHA) -> float:
    """KL(first ‖ second) in bits, both Lidstone-smoothed (``alpha``) over the union vocabulary."""
    vocabulary = first.keys() | second.keys()
    first_total = sum(first.values()) + alpha * len(vocabulary)
    second_total = sum(second.values()) + alpha * len(vocabulary)
    total = 0.0
    for word in vocabulary:
        p, q = (first[word] + alpha) / first_total, (second[word] + alpha) / second_total
        total += p * math.log2(p / q)
    return total


def oov_rate(first: Counter, second: Counter) -> float:
    """Share (%) of ``first``'s tokens whose word type ``second`` lacks."""
    return 100.0 * sum(count for word, count in first.items() if word not in second) / sum(first.values())


def compare(corpora: dict[str, Sentences], alpha: float = LIDSTONE_ALPHA, language_models: bool = True, wasserstein_vectors: str | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """measure -> first -> second -> value for every ordered pair of corpora (first = P, second = Q);
    with ``wasserstein_vectors`` the Wasserstein distance too (``analysis/wasserstein.py``)."""
    counts = {name: unigram_counts(sentences) for name, sentences in corpora.items()}
    models = {name: TrigramLM(sentences) for name, sentences in corpora.items()} if language_models else {}
    table: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for first in corpora:
        for second in corpora:
            table["js"][first][second] = js_divergence(counts[first], counts[second])
            table["kl"][first][second] = kl_divergence(counts[first], counts[second], alpha)
            table["oov"][first][second] = oov_rate(counts[first], counts[second])
            if language_models:
                table["cross_entropy"][first][second] = models[second].cross_entropy(corpora[first])
    result = {measure: {first: dict(row) for first, row in rows.items()} for measure, rows in table.items()}
    if wasserstein_vectors:
        result["wasserstein"] = wasserstein_table(counts, wasserstein_vectors)
    return result


MEASURES = {  # measure -> (title, unit); every one: lower = closer
    "js": ("Jensen–Shannon divergence", "bits"),
    "kl": ("KL(target ‖ source), Lidstone-smoothed", "bits"),
    "oov": ("out-of-vocabulary rate of the target's tokens", "%"),
    "cross_entropy": ("cross-entropy of the target under the source's trigram LM (Kneser–Ney)", "bits/token"),
    "wasserstein": ("Wasserstein distance of the top-500 word distributions", "cosine distance of word vectors"),
}


def rank_sources(table: dict[str, dict[str, dict[str, float]]], target: str, measure: str = "js") -> list[tuple[str, float]]:
    """The other corpora, closest to ``target`` first by ``measure`` (target = P, source = Q)."""
    row = table[measure][target]
    return sorted(((name, value) for name, value in row.items() if name != target), key=lambda item: item[1])


def relative_gain(scratch: float, transferred: float) -> float:
    """NRG (PretRand paper, eq. 12): the share (%) of From-scratch's errors that transfer removed;
    NaN where From-scratch scores 100 (no error to remove: the reports leave such a target out too)."""
    if scratch >= 100.0:
        return float("nan")
    return 100.0 * (transferred - scratch) / (100.0 - scratch)


def read_gains(path) -> list[dict]:
    """Rows ``source,target,scratch,transferred[,note]`` of a CSV file: measured scores of one
    source→target pair each (source and target are corpus entries, see ``read_unlabeled``)."""
    import csv
    from pathlib import Path

    reader = csv.DictReader(read_lines(path))
    needed = {"source", "target", "scratch", "transferred"}
    if not needed <= set(reader.fieldnames or []):
        raise SeqTransferError(f"needs the columns {', '.join(sorted(needed))}", path=path, line=1, hint="one row per source→target pair")
    rows = list(reader)
    for number, row in enumerate(rows, start=2):
        try:
            row["scratch"], row["transferred"] = float(row["scratch"]), float(row["transferred"])
        except ValueError:
            raise SeqTransferError("scratch and transferred must be numbers", path=Path(path), line=number) from None
        row["gain"] = relative_gain(row["scratch"], row["transferred"])
    return rows


def ranks(values: Sequence[float]):
    """Ranks 1..n, ties sharing their mean rank (as Spearman's ρ needs)."""
    values = np.asarray(values, dtype=float)
    order = values.argsort(kind="stable")
    result = np.empty(len(values))
    result[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        result[tied] = result[tied].mean()
    return result


def correlations(distances: Sequence[float], gains: Sequence[float]) -> dict[str, float | int | None]:
    """Pearson r and Spearman ρ of distance and gain over n pairs (None under 3 pairs or for a constant)."""
    count = len(distances)
    if count < 3 or np.ptp(distances) == 0 or np.ptp(gains) == 0:
        return {"pairs": count, "pearson": None, "spearman": None}
    pearson = float(np.corrcoef(distances, gains)[0, 1])
    spearman = float(np.corrcoef(ranks(distances), ranks(gains))[0, 1])
    return {"pairs": count, "pearson": pearson, "spearman": spearman}


def label(entry: str) -> str:
    """A corpus's short name on figures: a file's name, a dataset's as given."""
    from pathlib import Path

    return Path(entry).name if "/" in entry else entry


def heatmap_figure(table: dict[str, dict[str, dict[str, float]]], measure: str = "js"):
    """Rows: P (target), columns: Q (source); darker = farther."""
    names = list(table[measure])
    values = np.array([[table[measure][first][second] for second in names] for first in names])
    figure = new_figure(1.6 + 0.75 * len(names), 1.2 + 0.6 * len(names))
    axis = figure.subplots()
    image = axis.imshow(values, cmap="magma_r", interpolation="nearest")
    figure.colorbar(image, ax=axis, label=f"{MEASURES[measure][0]} ({MEASURES[measure][1]})")
    axis.set_xticks(range(len(names)), [label(name) for name in names], rotation=40, ha="right")
    axis.set_yticks(range(len(names)), [label(name) for name in names])
    for row in range(len(names)):
        for column in range(len(names)):
            axis.text(column, row, f"{values[row, column]:.2f}", ha="center", va="center", fontsize=7, color="white" if values[row, column] > values.max() / 2 else "black")
    axis.set_xlabel("Q (source)")
    axis.set_ylabel("P (target)")
    figure.tight_layout()
    return figure


def gains_figure(pairs: list[dict], measure: str, summary: dict):
    """Each source→target pair's distance against the relative gain of transfer over From-scratch."""
    figure = new_figure(5.6, 4.2)
    axis = figure.subplots()
    axis.scatter([pair["distance"] for pair in pairs], [pair["gain"] for pair in pairs], color="#1f77b4")
    for pair in pairs:
        axis.annotate(f"{label(pair['source'])}→{label(pair['target'])}", (pair["distance"], pair["gain"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    axis.set_xlabel(f"{MEASURES[measure][0]} ({MEASURES[measure][1]})")
    axis.set_ylabel("relative gain of transfer over From-scratch (NRG, %)")
    pearson = "n/a" if summary["pearson"] is None else f"{summary['pearson']:+.2f}"
    spearman = "n/a" if summary["spearman"] is None else f"{summary['spearman']:+.2f}"
    axis.set_title(f"{summary['pairs']} pairs: Pearson r {pearson}, Spearman ρ {spearman}", fontsize=9)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def few_pairs_note(count: int) -> str:
    return f"{count} pairs: a description of these pairs, too few to test a correlation's significance." if count < 20 else f"{count} pairs."


def markdown(table: dict[str, dict[str, dict[str, float]]], target: str | None = None, pairs: list[dict] | None = None, summary: dict | None = None) -> str:
    """Tables of every measure (rows P, columns Q), the ranking of sources for ``target`` and the gains."""
    names = list(table["js"])
    lines = []
    for measure, rows in table.items():
        title, unit = MEASURES[measure]
        lines += [f"## {title} ({unit})", "", "Rows: P (target); columns: Q (source).", "", "| P \\ Q | " + " | ".join(names) + " |", "|:---|" + "---:|" * len(names)]
        lines += [f"| {first} | " + " | ".join(f"{rows[first][second]:.3f}" for second in names) + " |" for first in names]
        lines.append("")
    if target:
        lines += [f"## Sources ranked for {target} (closest first)", "", "| rank | source | " + " | ".join(MEASURES[m][0] for m in table) + " |", "|---:|:---|" + "---:|" * len(table)]
        for rank, (name, _) in enumerate(rank_sources(table, target), start=1):
            lines.append(f"| {rank} | {name} | " + " | ".join(f"{table[m][target][name]:.3f}" for m in table) + " |")
        lines.append("")
    if pairs:
        lines += [
            "## Distance and transfer gain",
            "",
            few_pairs_note(len(pairs)),
            "",
            "| source | target | distance | From-scratch | transferred | NRG (%) | note |",
            "|:---|:---|---:|---:|---:|---:|:---|",
        ]
        lines += [f"| {p['source']} | {p['target']} | {p['distance']:.3f} | {p['scratch']:.2f} | {p['transferred']:.2f} | {p['gain']:+.1f} | {p.get('note') or ''} |" for p in pairs]
        pearson = "n/a" if summary["pearson"] is None else f"{summary['pearson']:+.2f}"
        spearman = "n/a" if summary["spearman"] is None else f"{summary['spearman']:+.2f}"
        lines += ["", f"Pearson r = {pearson}, Spearman ρ = {spearman} over {summary['pairs']} pairs.", ""]
    return "\n".join(lines)
