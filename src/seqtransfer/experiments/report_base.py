"""What every report section reads: the experiment's report settings, the records aggregated per
cell, normalised relative gains, and the table and number formats.

Normalised relative gain (PretRand paper, eq. 12, with s_max = 100 the best possible score):
NRG_ij = 100 × (s_ij − s_ref,j) / (100 − s_ref,j); aNRG is its mean over targets (PretRand
paper), mNRG its median (MuTSPad paper).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MISSING = "–"
SIGNIFICANCE_LEVEL = 0.05
MAXIMUM_SCORE = 100.0

Means = Mapping[str, Mapping[str, float]]  # method -> target -> score


@dataclass(frozen=True)
class Summary:
    """Scores of one (method, target) cell over its seeds; ``std`` is the sample std (0 for one seed)."""

    mean: float
    std: float
    seeds: list[int]
    scores: list[float]
    seconds_mean: float
    parameters: int
    shared_model: bool = False  # one multi-task model scores every target of its method
    target_dev_labels: bool = True  # its runs stopped early on the labels of the test data's dev split


@dataclass(frozen=True)
class ReportSpec:
    """What a report needs from an experiment file, in the experiment's order."""

    experiment: str
    title: str
    methods: Sequence[str]
    targets: Sequence[str]
    reference_method: str
    paper_results: Means
    significance_pairs: Sequence[tuple[str, str]] = ()
    paper_table: str = ""  # the table reproduced, e.g. "PretRand paper, Table 4 (test)"
    trials: int = 10000
    split: str = "test"  # which score of the records the tables show
    published: Sequence = ()  # PublishedSpec rows: published results that are not ours
    method_targets: Mapping[str, Sequence[str]] = dataclasses.field(default_factory=dict)  # a method limited to some targets -> them
    paper_metrics: Mapping[str, str] = dataclasses.field(default_factory=dict)  # target -> the metric of the paper's numbers, where not the main one
    notes: str = ""  # the experiment file's notes: what reproduces and what does not, opening the report
    paper_dev_results: Means = dataclasses.field(default_factory=dict)  # the paper's dev numbers, for the dev tables (`paper_dev`)
    method_sources: Mapping[tuple[str, str], str] = dataclasses.field(default_factory=dict)  # (method, target) -> the source it reads, by name

    def source_instances(self, records: Iterable[dict]) -> dict[tuple[str, str | None], set[str]]:
        """(target, source name) -> the instances (``source_weights``) of that source the records'
        runs read. Methods that read different sources by design fall in different groups."""
        instances: dict[tuple[str, str | None], set[str]] = defaultdict(set)
        for record in records:
            if record.get("source_weights"):
                instances[record["target"], self.method_sources.get((record["method"], record["target"]))].add(record["source_weights"])
        return instances

    def applies(self, method: str, target: str) -> bool:
        """Whether the grid has cells of ``method`` on ``target``."""
        return target in self.method_targets.get(method, (target,))

    def pair_targets(self, pair: tuple[str, str]) -> list[str]:
        """The targets both methods of a compared pair run on."""
        return [target for target in self.targets if all(self.applies(method, target) for method in pair)]


def report_spec(experiment, trials: int = 10000) -> ReportSpec:
    """The :class:`ReportSpec` of an :class:`~seqtransfer.experiments.spec.ExperimentSpec` (its title names the table)."""
    methods = list(experiment.methods)
    return ReportSpec(
        experiment=experiment.name,
        title=experiment.title,
        methods=methods,
        targets=list(experiment.targets),
        reference_method=experiment.reference or methods[0],
        paper_results=experiment.paper,
        paper_dev_results=experiment.paper_dev,
        significance_pairs=[tuple(pair) for pair in experiment.significance],
        split=experiment.paper_split,
        trials=trials,
        published=list(experiment.published),
        method_targets={name: experiment.targets_of(name) for name in experiment.methods},
        paper_metrics={name: target.paper_metric for name, target in experiment.targets.items() if target.paper_metric},
        notes=experiment.notes or "",
        method_sources={(method, target): name for method in methods for target in experiment.targets if (name := experiment.source_of(method, target))},
    )


def aggregate(records: Iterable[dict], split: str = "test") -> dict[tuple[str, str], Summary]:
    """One :class:`Summary` of the ``split`` score per (method, target), seeds in ascending order; a record
    without that score (a dataset with no test split) is left out."""
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for record in records:
        if record.get(split) is not None:
            cells[record["method"], record["target"]].append(record)
    summaries = {}
    for key, cell in cells.items():
        cell.sort(key=lambda record: record["seed"])
        scores = [float(record[split]) for record in cell]
        summaries[key] = Summary(
            mean=statistics.fmean(scores),
            std=statistics.stdev(scores) if len(scores) > 1 else 0.0,
            seeds=[record["seed"] for record in cell],
            scores=scores,
            seconds_mean=statistics.fmean(float(record["seconds"]) for record in cell),
            parameters=int(cell[0].get("network_parameters", cell[0]["parameters"])),
            shared_model=bool(cell[0].get("multitask")),
            target_dev_labels=any(record.get("target_dev_labels", True) for record in cell),
        )
    return summaries


def means_by_method(summaries: Mapping[tuple[str, str], Summary]) -> dict[str, dict[str, float]]:
    """``{method: {target: mean}}`` from :func:`aggregate`'s output."""
    means: dict[str, dict[str, float]] = defaultdict(dict)
    for (method, target), summary in summaries.items():
        means[method][target] = summary.mean
    return dict(means)


def _spec_means(spec: ReportSpec, means: Means) -> dict[str, dict[str, float]]:
    """Only the spec's methods and targets (a store may hold more)."""
    return {
        method: {target: means[method][target] for target in spec.targets if target in means.get(method, {})}
        for method in spec.methods
        if any(target in means.get(method, {}) for target in spec.targets)
    }


def normalised_relative_gains(means: Means, reference: str) -> dict[str, list[float]]:
    """NRG of every method against ``reference`` on each target both have (eq. 12, s_max = 100)."""
    reference_scores = means.get(reference, {})
    gains = {}
    for method, scores in means.items():
        # A reference at the maximum score leaves no room to gain: NRG is undefined there.
        common = [target for target in scores if target in reference_scores and reference_scores[target] < MAXIMUM_SCORE]
        gains[method] = [100.0 * (scores[target] - reference_scores[target]) / (MAXIMUM_SCORE - reference_scores[target]) for target in common]
    return gains


def anrg(means: Means, reference: str) -> dict[str, float]:
    """Average NRG per method (PretRand paper); methods sharing no target with the reference are left out."""
    return {method: statistics.fmean(gains) for method, gains in normalised_relative_gains(means, reference).items() if gains}


def mnrg(means: Means, reference: str) -> dict[str, float]:
    """Median NRG per method (MuTSPad paper); methods sharing no target with the reference are left out."""
    return {method: statistics.median(gains) for method, gains in normalised_relative_gains(means, reference).items() if gains}


def _mean_cell(mean: float, std: float, count: int) -> str:
    """``mean ± std (n)``, a cell of scores over ``count`` seeds."""
    return f"{mean:.2f} ± {std:.2f} ({count})"


def _signed(value: float, digits: int = 2) -> str:
    """``+1.20`` / ``−2.17`` (a true minus sign, as in the papers)."""
    return f"{value:+.{digits}f}".replace("-", "−")


def _duration(seconds: float) -> str:
    """``45s``, ``3m 12s``, ``2h 05m``."""
    minutes, whole_seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {whole_seconds:02d}s" if minutes else f"{whole_seconds}s"


def _ratio(value: float) -> str:
    """``1×``, ``1.03×``: parameters relative to the reference method, as in the papers."""
    return f"{value:.2f}".rstrip("0").rstrip(".") + "×"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Markdown table lines; the first column is left-aligned, the others right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]
