"""The analysis figures, drawn with matplotlib's object API (no pyplot state) and saved as PNG + SVG.

transfer_bars          PT (blue) / NT (red) per dataset, one panel per method   Figures 6, 11
correlation_heatmap    C[j, t] after (rows) x before (columns)                  Figure 7
top_words_table        top-k words of one unit over the recorded epochs         Figures 8, 9
class_improvement      sorted per-class gain of one run over another            Figure 12
learning_curves        score vs training-set size, the gap between two methods  Figure 13
cost_tradeoff          score vs trainable parameters and time, per method and target (reports)
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from seqtransfer.analysis.curves import CurvePoint, mean_curves
from seqtransfer.analysis.negative_transfer import TransferComparison
from seqtransfer.analysis.neurons import NeuronAnalysis
from seqtransfer.files import atomic_write

if TYPE_CHECKING:  # annotations only: matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure

POSITIVE_COLOUR, NEGATIVE_COLOUR, GAP_COLOUR = "#1f77b4", "#d62728", "#2ca02c"


def new_figure(width: float, height: float) -> Figure:
    """A figure on its own Agg canvas: no pyplot, no global backend switch, never a window
    (matplotlib, an optional library, is imported here: modules that draw import this one freely)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    FigureCanvasAgg(figure)
    return figure


def figure_bytes(figure: Figure, file_format: str) -> bytes:
    """The figure encoded as ``png`` or ``svg``, the same bytes for the same figure: no date in the
    SVG's metadata and a fixed salt for its element ids (random by default), so that a figure drawn
    again from the same results leaves its committed file unchanged."""
    import matplotlib

    buffer = io.BytesIO()
    metadata = {"Date": None} if file_format == "svg" else None
    with matplotlib.rc_context({"svg.hashsalt": "seqtransfer"}):
        figure.savefig(buffer, format=file_format, dpi=100, bbox_inches="tight", metadata=metadata)
    return buffer.getvalue()


def save_figure(figure: Figure, stem: str | Path) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg`` atomically; returns both paths."""
    paths = []
    for file_format in ("png", "svg"):
        path = Path(f"{stem}.{file_format}")
        with atomic_write(path, "wb") as handle:
            handle.write(figure_bytes(figure, file_format))
        paths.append(path)
    return paths


def transfer_bars(comparisons: list[TransferComparison]) -> Figure:
    """PT and NT (percent of tokens) per dataset, one panel per pair of methods (Figures 6, 11)."""
    pairs = list(dict.fromkeys((c.transferred_method, c.reference_method) for c in comparisons))
    widest = max(sum((c.transferred_method, c.reference_method) == pair for c in comparisons) for pair in pairs)
    figure = new_figure((2.2 + 1.2 * widest) * len(pairs), 3.8)
    axes = figure.subplots(1, len(pairs), squeeze=False, sharey=True)[0]
    for axis, pair in zip(axes, pairs):
        chosen = [c for c in comparisons if (c.transferred_method, c.reference_method) == pair]
        positions = np.arange(len(chosen))
        for offset, values, colour, name in (
            (-0.2, [c.overall.positive_transfer for c in chosen], POSITIVE_COLOUR, "positive transfer"),
            (0.2, [c.overall.negative_transfer for c in chosen], NEGATIVE_COLOUR, "negative transfer"),
        ):
            axis.bar_label(axis.bar(positions + offset, values, width=0.4, color=colour, label=name), fmt="%.2f", fontsize=7)
        axis.set_xticks(positions, [c.dataset for c in chosen], rotation=20)
        axis.set_xlim(-0.8, len(chosen) - 0.2)
        axis.set_title(f"{pair[0]} vs {pair[1]}")
        axis.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("% of tokens")
    axes[0].legend(fontsize=8)
    figure.tight_layout()
    return figure


def correlation_heatmap(correlation: np.ndarray, title: str) -> Figure:
    """Units after fine-tuning (rows) against units before (columns), Pearson r (Figure 7)."""
    figure = new_figure(5.6, 4.8)
    axis = figure.subplots()
    image = axis.imshow(correlation, cmap="viridis", vmin=-1, vmax=1, interpolation="nearest")
    figure.colorbar(image, ax=axis, label="Pearson correlation")
    axis.set_xlabel("unit before fine-tuning")
    axis.set_ylabel("unit after fine-tuning")
    axis.set_title(title)
    figure.tight_layout()
    return figure


def top_words_table(analysis: NeuronAnalysis, unit: int) -> Figure:
    """Top-k words firing ``unit`` positively (upper table) and negatively (lower) in each column."""
    columns = list(analysis.top_words)
    k = max(len(top.positive[unit]) for top in analysis.top_words.values())
    figure = new_figure(1.5 + 1.3 * len(columns), 1.0 + 0.3 * k)
    axes = figure.subplots(1, 2)
    for axis, sign in zip(axes, ("positive", "negative")):
        cells = [[(getattr(analysis.top_words[name], sign)[unit] + [""] * k)[row] for name in columns] for row in range(k)]
        axis.axis("off")
        table = axis.table(cellText=cells, colLabels=columns, loc="center", cellLoc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(8)
        table.scale(1, 1.25)
        table.auto_set_column_width(list(range(len(columns))))
        axis.set_title(f"top-{k} {sign}", fontsize=9)
    figure.suptitle(f"unit {unit} (charge {analysis.charges[unit]:.3f})", fontsize=10)
    return figure


FIGURE_CLASSES = 40  # with more classes (MSD tags: hundreds) the figure shows the 20 best and 20 worst of the classes with 10+ tokens


def class_improvement(comparison: TransferComparison) -> Figure:
    """Per-class accuracy gain of the transferred run over the reference, sorted (Figure 12)."""
    classes = sorted(comparison.per_class, key=lambda counts: counts.gain, reverse=True)
    title = comparison.title
    if len(classes) > FIGURE_CLASSES:
        frequent = [counts for counts in classes if counts.tokens >= 10] or classes
        half = FIGURE_CLASSES // 2
        classes = frequent[:half] + frequent[-half:] if len(frequent) > FIGURE_CLASSES else frequent
        title += f" ({len(classes)} of {len(comparison.per_class)} classes: the best and worst with 10+ tokens)"
    gains = np.array([counts.gain for counts in classes])
    figure = new_figure(max(5.0, 0.32 * len(classes) + 1.5), 3.8)
    axis = figure.subplots()
    axis.bar(np.arange(len(classes)), gains, color=np.where(gains >= 0, GAP_COLOUR, NEGATIVE_COLOUR))
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_xticks(np.arange(len(classes)), [counts.label for counts in classes], rotation=70, fontsize=7)
    axis.set_ylabel("class accuracy improvement (points)")
    axis.set_title(title, fontsize=9)
    axis.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return figure


def learning_curves(points: list[CurvePoint], methods: tuple[str, str] | None = None) -> Figure:
    """Score vs training sentences per method (mean, a band of ± one std over seeds), one panel per
    dataset; with two methods (or ``methods`` named), the gap between them hatched (Figure 13)."""
    datasets = list(dict.fromkeys(point.dataset for point in points)) or [""]
    figure = new_figure(5.6 * len(datasets), 3.8)
    for axis, dataset in zip(figure.subplots(1, len(datasets), squeeze=False)[0], datasets):
        draw_curves(axis, [point for point in points if point.dataset == dataset], methods)
        axis.set_title(dataset, fontsize=9)
    figure.tight_layout()
    return figure


def draw_curves(axis, points: list[CurvePoint], methods: tuple[str, str] | None) -> None:
    curves = mean_curves(points)
    for method, (sizes, means, deviations) in curves.items():
        line = axis.errorbar(sizes, means, yerr=deviations, marker="o", capsize=3, label=method)
        if (deviations > 0).any():
            axis.fill_between(sizes, means - deviations, means + deviations, color=line[0].get_color(), alpha=0.12)
    names = list(methods) if methods else list(curves) if len(curves) == 2 else []  # with more curves, bands only: a gap would hide them
    if len(names) == 2 and all(name in curves for name in names):
        first, second = curves[names[0]], curves[names[1]]
        shared = np.intersect1d(first[0], second[0])
        if len(shared) > 1:
            axis.fill_between(
                shared, first[1][np.isin(first[0], shared)], second[1][np.isin(second[0], shared)], facecolor="none", edgecolor="grey", hatch="//", linewidth=0, label=f"gap: {names[1]} − {names[0]}"
            )
    axis.set_xlabel("target training sentences")
    axis.set_ylabel("score (%)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)


def transfer_by_size_figure(rows: list[dict]) -> Figure:
    """PT (solid) and NT (dashed) of each method against the reference vs training sentences, one panel per dataset."""
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    figure = new_figure(5.0 * len(datasets), 3.6)
    for axis, dataset in zip(figure.subplots(1, len(datasets), squeeze=False)[0], datasets):
        for method in dict.fromkeys(row["method"] for row in rows if row["dataset"] == dataset):
            chosen = [row for row in rows if row["dataset"] == dataset and row["method"] == method]
            sizes = [row["size"] for row in chosen]
            (line,) = axis.plot(sizes, [row["positive_transfer"] for row in chosen], marker="o", label=f"{method} PT")
            axis.plot(sizes, [row["negative_transfer"] for row in chosen], marker="x", linestyle="--", color=line.get_color(), label=f"{method} NT")
        axis.set_title(f"{dataset}: vs {rows[0]['reference']}", fontsize=9)
        axis.set_xlabel("target training sentences")
        axis.set_ylabel("% of tokens")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def cost_tradeoff(points: list[dict]) -> Figure:
    """Test score against trainable parameters (left) and time per run (right), one marker per
    method, one colour per target; ``points``: {method, target, score, trainable, seconds} (means over seeds)."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import NullFormatter

    targets = list(dict.fromkeys(point["target"] for point in points))
    methods = list(dict.fromkeys(point["method"] for point in points))
    markers = "osD^v<>pPX*h"
    figure = new_figure(11, 4.2)
    axes = figure.subplots(1, 2, sharey=False)
    colours = {target: f"C{index % 10}" for index, target in enumerate(targets)}
    for axis, key, label in zip(axes, ("trainable", "seconds"), ("trainable parameters", "time per run, seconds")):
        # a log axis has no 0: a method that trains nothing (a source model applied as it is) sits at 1
        values = [max(point[key], 1.0) if key == "trainable" else point[key] for point in points]
        for point, value in zip(points, values):
            axis.scatter(value, point["score"], color=colours[point["target"]], marker=markers[methods.index(point["method"]) % len(markers)], s=40)
        logarithmic = max(values) >= 10 * min(values)  # a log axis only where the costs span a decade or more
        if logarithmic:
            axis.set_xscale("log")
            axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set_xlabel(label + (" (log)" if logarithmic else ""))
        axis.set_ylabel("test score")
        axis.grid(alpha=0.3)
    handles = [axes[0].scatter([], [], color="grey", marker=markers[index % len(markers)], label=method) for index, method in enumerate(methods)]
    handles += [Patch(color=colours[target], label=target) for target in targets]
    figure.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    figure.suptitle("Score against cost (mean over seeds)")
    return figure
