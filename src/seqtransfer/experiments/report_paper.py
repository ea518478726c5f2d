"""The report's comparisons with published numbers: the paper's table with Δ = ours − paper, and
the published results of others above our best mean per target.

A target whose published numbers use another metric than its main one (``paper_metric``) is
compared by that metric, read from each run's ``also`` scores.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence

from seqtransfer.data.metrics import METRICS, get_metric
from seqtransfer.experiments.experiment_file import PUBLISHED_FLAGS
from seqtransfer.experiments.report_base import MISSING, Means, ReportSpec, Summary, _signed, _spec_means, _table, anrg, means_by_method, mnrg


def _difference_cell(paper: float | None, ours: float | None, digits: int = 2, signed: bool = False) -> str:
    """``91.27 (−2.17)``: the paper's number and ours minus it (``+28.8 (−3.1)`` for a gain)."""
    if paper is None:
        return MISSING
    shown = _signed(paper, digits) if signed else f"{paper:.{digits}f}"
    return shown + (f" ({_signed(ours - paper, digits)})" if ours is not None else "")


def other_metric_scores(spec: ReportSpec, records: Sequence[dict], metric: str, target: str) -> dict[str, list[float]]:
    """method -> its seeds' ``target`` scores by ``metric`` (a target's ``also``), on the report's split."""
    scores: dict[str, list[float]] = defaultdict(list)
    for record in records:
        value = ((record.get("other_scores") or {}).get(metric) or {}).get(spec.split)
        if record.get("target") == target and value is not None:
            scores[record["method"]].append(value)
    return scores


def other_metric_means(spec: ReportSpec, records: Sequence[dict], metric: str, target: str) -> dict[str, float]:
    """method -> mean over its seeds of ``target``'s ``metric`` score (a target's ``also``)."""
    return {method: statistics.fmean(values) for method, values in other_metric_scores(spec, records, metric, target).items()}


def paper_metric_means(spec: ReportSpec, summaries: Mapping[tuple[str, str], Summary], records: Sequence[dict]) -> Means:
    """Our means by the metric the published numbers use: a target's ``paper_metric`` (from each
    run's ``also`` scores) where it names one, its main metric elsewhere."""
    means = means_by_method(summaries)
    for target, metric in spec.paper_metrics.items():
        for method in means:
            means[method].pop(target, None)
        for method, mean in other_metric_means(spec, records, metric, target).items():
            means.setdefault(method, {})[target] = mean
    return means


def _paper_table(spec: ReportSpec, summaries: Mapping[tuple[str, str], Summary], records: Sequence[dict] = ()) -> list[str]:
    """The paper's numbers with Δ = ours − paper, per target and for aNRG / mNRG; a target whose
    paper numbers are of another metric (``paper_metric``) compares our scores by that metric."""
    ours = _spec_means(spec, paper_metric_means(spec, summaries, records))
    paper = _spec_means(spec, spec.paper_results)
    gains = [(anrg(ours, spec.reference_method), anrg(paper, spec.reference_method))]
    gains.append((mnrg(ours, spec.reference_method), mnrg(paper, spec.reference_method)))
    rows = []
    for method in spec.methods:
        scores = [_difference_cell(paper.get(method, {}).get(target), ours.get(method, {}).get(target)) for target in spec.targets]
        gain_cells = [_difference_cell(theirs.get(method), mine.get(method), 1, signed=True) for mine, theirs in gains]
        if gain_targets(ours, method, spec.reference_method) < gain_targets(paper, method, spec.reference_method):
            gain_cells = [cell if cell == MISSING else cell + "†" for cell in gain_cells]
        rows.append([method, *scores, *gain_cells])
    header = [f"{target} ({METRICS[spec.paper_metrics[target]].title})" if target in spec.paper_metrics else target for target in spec.targets]
    return ["† our NRG over fewer targets than the paper's.", "", *_table(["Method", *header, "aNRG", "mNRG"], rows)]


def gain_targets(means: Means, method: str, reference: str) -> int:
    """How many targets an NRG of ``method`` against ``reference`` averages over."""
    return len(set(means.get(method, {})) & set(means.get(reference, {})))


def _best_cell(spec: ReportSpec, means: Means, target: str) -> str:
    """Our best mean on a target and the method that reached it: ``95.22 (PretRand)``, with the
    metric where the column's published numbers use another than ours (``82.89 (MuTSPad, F1)``)."""
    scored = [(means[method][target], method) for method in spec.methods if target in means.get(method, {})]
    if not scored:
        return MISSING
    score, method = max(scored, key=lambda item: item[0])
    metric = spec.paper_metrics.get(target)
    return f"**{score:.2f}** ({method}{', ' + get_metric(metric).title if metric else ''})"


def _published_section(spec: ReportSpec, summaries: Mapping[tuple[str, str], Summary], records: Sequence[dict] = ()) -> list[str]:
    """Published results that are not ours, above our best mean per column (by the published
    numbers' metric: a target's ``paper_metric``)."""
    rows = []
    for row in spec.published:
        cells = ["n/a" if row.scores.get(target) is None else f"{row.scores[target]:.2f}" for target in spec.targets]
        rows.append([row.name, row.source + (f" ({row.note})" if row.note else ""), ", ".join(row.flags) or "none", *cells])
    means = paper_metric_means(spec, summaries, records)
    rows.append(["**Ours: best mean per column**", f"this report ({spec.split})", "", *[_best_cell(spec, means, target) for target in spec.targets]])
    legend = "; ".join(f"{flag}: {meaning}" for flag, meaning in PUBLISHED_FLAGS.items())
    intro = (
        f"Published numbers, not ours: copied from the source named on each row (n/a: not reported there); they come from other set-ups (data versions, pretrained resources, tuning). Flags: {legend}."
    )
    return ["## Published results (not ours) and our best", "", intro, "", *_table(["Method", "Source", "Flags", *spec.targets], rows)]
