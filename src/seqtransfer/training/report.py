"""Human-readable summaries of a run's scores."""

from __future__ import annotations

SCORE_NAMES = ("accuracy", "precision", "recall", "f1", "surface_f1", "uas", "las", "pearson", "spearman")


def format_split_scores(split: str, scores: dict) -> str:
    """One line, e.g. ``test: accuracy 93.10  precision 45.00  recall 30.00  f1 36.00``."""
    parts = [f"{name} {scores[name]:.2f}" for name in SCORE_NAMES if name in scores]
    return f"{split}: " + "  ".join(parts)


def format_scores(metrics: dict) -> str:
    """Dev and test lines of a run's metrics."""
    lines = [f"{metrics['dataset']}/{metrics['task']} (best epoch {metrics.get('best_epoch', '?')})"]
    lines += [format_split_scores(split, metrics[split]) for split in ("dev", "test") if split in metrics]
    for task, scores in metrics.get("tasks", {}).items():  # a multi-task run: one block per task
        lines.append(f"  {task} ({scores['dataset']}/{scores['task']}, best dev epoch {scores.get('best_epoch', '?')})")
        lines += [f"    {format_split_scores(split, scores[split])}" for split in ("dev", "test") if split in scores]
    return "\n".join(lines)
