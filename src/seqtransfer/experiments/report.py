"""Reports of an experiment: our scores next to the paper's, aNRG / mNRG, and significance.

An experiment is a grid methods × targets × seeds; its finished runs are records of the
:class:`~seqtransfer.experiments.store.ResultsStore`. :func:`render_markdown` and
:func:`render_csv` turn those records and a :class:`ReportSpec` (what the experiment file
says: methods, targets, reference method, paper numbers) into a document. A cell whose runs
have not finished is shown as ``–`` (an empty field in CSV); nothing else depends on it.

Normalised relative gain (PretRand paper, eq. 12, with s_max = 100 the best possible score):
NRG_ij = 100 × (s_ij − s_ref,j) / (100 − s_ref,j); aNRG is its mean over targets (PretRand
paper), mNRG its median (MuTSPad paper).
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.significance import paired_randomization_correlation_seeds, paired_randomization_seeds
from seqtransfer.data.metrics import METRICS, get_metric

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
        significance_pairs=[tuple(pair) for pair in experiment.significance],
        split=experiment.paper_split,
        trials=trials,
        published=list(experiment.published),
        method_targets={name: experiment.targets_of(name) for name in experiment.methods},
        paper_metrics={name: target.paper_metric for name, target in experiment.targets.items() if target.paper_metric},
    )


def aggregate(records: Iterable[dict], split: str = "test") -> dict[tuple[str, str], Summary]:
    """One :class:`Summary` of the ``split`` score per (method, target), seeds in ascending order."""
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for record in records:
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


def normalised_relative_gains(means: Means, reference: str) -> dict[str, list[float]]:
    """NRG of every method against ``reference`` on each target both have (eq. 12, s_max = 100)."""
    reference_scores = means.get(reference, {})
    gains = {}
    for method, scores in means.items():
        # A reference at the maximum score leaves no room to gain: NRG is undefined there.
        common = [target for target in scores if target in reference_scores and reference_scores[target] < MAXIMUM_SCORE]
        gains[method] = [
            100.0 * (scores[target] - reference_scores[target]) / (MAXIMUM_SCORE - reference_scores[target])
            for target in common
        ]
    return gains


def anrg(means: Means, reference: str) -> dict[str, float]:
    """Average NRG per method (PretRand paper); methods sharing no target with the reference are left out."""
    return {method: statistics.fmean(gains) for method, gains in normalised_relative_gains(means, reference).items() if gains}


def mnrg(means: Means, reference: str) -> dict[str, float]:
    """Median NRG per method (MuTSPad paper); methods sharing no target with the reference are left out."""
    return {method: statistics.median(gains) for method, gains in normalised_relative_gains(means, reference).items() if gains}


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


def _target_metrics(records: Sequence[dict]) -> dict[str, str]:
    """Metric of each target as recorded (``accuracy``, ``span_f1``, ``attachment``)."""
    return {record["target"]: record["metric"] for record in records}


def _target_header(spec: ReportSpec, records: Sequence[dict]) -> list[str]:
    """Target column titles, with the metric: ``TPoS (acc.)``, ``WNUT (F1)``."""
    metrics = _target_metrics(records)
    return [target + (f" ({METRICS[metrics[target]].title})" if metrics.get(target) in METRICS else "") for target in spec.targets]


def _parameter_ratio(spec: ReportSpec, summaries: Mapping[tuple[str, str], Summary], method: str) -> str:
    """Mean over shared targets of the method's parameter count / the reference's; a multi-task
    method's one model against the reference's models of those targets together."""
    targets = [target for target in spec.targets if (method, target) in summaries and (spec.reference_method, target) in summaries]
    if targets and summaries[method, targets[0]].shared_model:
        together = sum(summaries[spec.reference_method, target].parameters for target in targets)
        return _ratio(summaries[method, targets[0]].parameters / together) if together else MISSING
    ratios = [
        summaries[method, target].parameters / summaries[spec.reference_method, target].parameters
        for target in spec.targets
        if (method, target) in summaries and (spec.reference_method, target) in summaries
        and summaries[spec.reference_method, target].parameters
    ]
    return _ratio(statistics.fmean(ratios)) if ratios else MISSING


def _gain_cell(gains: Mapping[str, float], method: str, covered: int, expected: int) -> str:
    """An aNRG/mNRG cell; ``†`` marks a value over fewer targets than the table has."""
    if method not in gains:
        return MISSING
    return _signed(gains[method], 1) + ("†" if covered < expected else "")


def _ours_table(spec: ReportSpec, records: Sequence[dict], summaries: Mapping[tuple[str, str], Summary]) -> list[str]:
    """Our test scores: ``mean ± std (n)`` per target, #params, aNRG, mNRG, time per run."""
    means = _spec_means(spec, means_by_method(summaries))
    average, median = anrg(means, spec.reference_method), mnrg(means, spec.reference_method)
    rows = []
    for method in spec.methods:
        cells = [summaries.get((method, target)) for target in spec.targets]
        mark = "°" if mixed_labels(summaries) else ""
        scores = [f"{cell.mean:.2f} ± {cell.std:.2f} ({len(cell.seeds)}){mark if cell.target_dev_labels else ''}" if cell else MISSING if spec.applies(method, target) else ""
                  for cell, target in zip(cells, spec.targets)]
        covered = len(means.get(method, {}))
        seconds = [cell.seconds_mean for cell in cells if cell]
        time = _duration(statistics.fmean(seconds)) if seconds else MISSING
        gains = [_gain_cell(average, method, covered, len(spec.targets)), _gain_cell(median, method, covered, len(spec.targets))]
        rows.append([method, *scores, _parameter_ratio(spec, summaries, method), *gains, time])
    header = ["Method", *_target_header(spec, records), "#params", "aNRG", "mNRG", "time / run"]
    return _table(header, rows)


def mixed_labels(summaries: Mapping[tuple[str, str], Summary]) -> bool:
    """Some cells used the test data's dev labels and some did not (then the table marks the first with °)."""
    return len({summary.target_dev_labels for summary in summaries.values()}) > 1


def _spec_means(spec: ReportSpec, means: Means) -> dict[str, dict[str, float]]:
    """Only the spec's methods and targets (a store may hold more)."""
    return {
        method: {target: means[method][target] for target in spec.targets if target in means.get(method, {})}
        for method in spec.methods
        if any(target in means.get(method, {}) for target in spec.targets)
    }


def _difference_cell(paper: float | None, ours: float | None, digits: int = 2, signed: bool = False) -> str:
    """``91.27 (−2.17)``: the paper's number and ours minus it (``+28.8 (−3.1)`` for a gain)."""
    if paper is None:
        return MISSING
    shown = _signed(paper, digits) if signed else f"{paper:.{digits}f}"
    return shown + (f" ({_signed(ours - paper, digits)})" if ours is not None else "")


def other_metric_means(spec: ReportSpec, records: Sequence[dict], metric: str, target: str) -> dict[str, float]:
    """method -> mean over its seeds of ``target``'s ``metric`` score (a target's ``also``)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for record in records:
        value = ((record.get("other_scores") or {}).get(metric) or {}).get(spec.split)
        if record.get("target") == target and value is not None:
            scores[record["method"]].append(value)
    return {method: statistics.fmean(values) for method, values in scores.items()}


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


def _other_metrics_section(spec: ReportSpec, records: Sequence[dict]) -> list[str]:
    """Scores by the metrics a target also asks for (``also``), read from each run's predictions:
    ``mean ± std (n)`` per method; a kept cell whose run predates this shows –."""
    cells: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for record in records:
        for metric, splits in (record.get("other_scores") or {}).items():
            if splits.get(spec.split) is not None:
                cells[metric, record["method"], record["target"]].append(splits[spec.split])
    columns = sorted({(metric, target) for metric, _, target in cells}, key=lambda item: (spec.targets.index(item[1]) if item[1] in spec.targets else 99, item[0]))
    if not columns:
        return []
    rows = []
    for method in spec.methods:
        values = [cells.get((metric, method, target)) for metric, target in columns]
        rows.append([method, *(f"{statistics.fmean(v):.2f} ± {statistics.stdev(v) if len(v) > 1 else 0.0:.2f} ({len(v)})" if v else MISSING for v in values)])
    header = ["Method", *(f"{target} ({METRICS[metric].title})" for metric, target in columns)]
    return [f"## Other metrics ({spec.split})", "", "The same runs scored by other metrics from their predictions (a target's `also`).", "", *_table(header, rows)]


def _differences_table(spec: ReportSpec, summaries: Mapping[tuple[str, str], Summary],
                       tests: Mapping[tuple[str, str, str], PairTests]) -> list[str]:
    """Mean A − mean B per target for each compared pair (the file's significance pairs): FT − FE,
    a scheme against FT, ...; each mean over that method's seeds, with ``*`` where the pair's test
    (over the seeds, else at one seed) gives p < 0.05."""
    means = means_by_method(summaries)
    rows = []
    for first, second in spec.significance_pairs:
        cells = [_signed(means[first][target] - means[second][target]) + _significant_mark(tests, target, first, second)
                 if target in means.get(first, {}) and target in means.get(second, {})
                 else MISSING if target in spec.pair_targets((first, second)) else "" for target in spec.targets]
        rows.append([f"{first} − {second}", *cells])
    return _table(["Difference", *spec.targets], rows)


def _significant_mark(tests: Mapping[tuple[str, str, str], PairTests], target: str, first: str, second: str) -> str:
    """``*`` where the pair's test on ``target`` (over the seeds where it has that row, else at its one seed) says p < 0.05."""
    test = tests.get((target, first, second))
    if test is None:
        return ""
    row = test.over_seeds or test.first_seed
    return "*" if row[-1] == "yes" else ""


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
    from seqtransfer.experiments.spec import PUBLISHED_FLAGS

    rows = []
    for row in spec.published:
        cells = ["n/a" if row.scores.get(target) is None else f"{row.scores[target]:.2f}" for target in spec.targets]
        rows.append([row.name, row.source + (f" ({row.note})" if row.note else ""), ", ".join(row.flags) or "none", *cells])
    means = paper_metric_means(spec, summaries, records)
    rows.append(["**Ours: best mean per column**", f"this report ({spec.split})", "", *[_best_cell(spec, means, target) for target in spec.targets]])
    legend = "; ".join(f"{flag}: {meaning}" for flag, meaning in PUBLISHED_FLAGS.items())
    intro = (f"Published numbers, not ours: copied from the source named on each row (n/a: not reported there); "
             f"they come from other set-ups (data versions, pretrained resources, tuning). Flags: {legend}.")
    return ["## Published results (not ours) and our best", "", intro, "", *_table(["Method", "Source", "Flags", *spec.targets], rows)]


def test_evidence(record: dict) -> dict | None:
    """What the significance test reads of a cell's test predictions: from its run's predictions
    folder where the store has it, else the kept record's ``evidence`` (experiments/evidence.py)."""
    from seqtransfer.experiments.evidence import evidence_of

    folder = Path(record.get("predictions") or Path(record["run_directory"]) / "predictions")  # a multi-task run: predictions/TASK
    try:
        evidence = evidence_of(folder, record["metric"])
    except SeqTransferError:  # unreadable predictions: as if there were none
        evidence = None
    return evidence or record.get("evidence")


def _significance_row(spec: ReportSpec, by_seed: Mapping[tuple[str, str, int], dict], target: str, pair: tuple[str, str]) -> list[str]:
    """One row: the paired test on the first seed both methods share, or ``–`` cells."""
    from seqtransfer.experiments.evidence import decode_array

    first, second = pair
    seeds = sorted({seed for method, name, seed in by_seed if (method, name) == (first, target)}
                   & {seed for method, name, seed in by_seed if (method, name) == (second, target)})
    if not seeds:
        return [target, first, second, MISSING, MISSING, MISSING, MISSING, MISSING]
    # the first shared seed whose two runs both have their test predictions (or a kept record's evidence of them)
    tested, evidence_a, evidence_b = seeds[0], None, None
    for seed in seeds:
        pair_evidence = test_evidence(by_seed[first, target, seed]), test_evidence(by_seed[second, target, seed])
        if all(pair_evidence):
            tested, (evidence_a, evidence_b) = seed, pair_evidence
            break
    record_a, record_b = by_seed[first, target, tested], by_seed[second, target, tested]
    scores = [f"{float(record_a['test']):.2f}", f"{float(record_b['test']):.2f}"]
    if evidence_a is None or evidence_b is None:  # kept records from before records carried evidence, or runs without predictions
        return [target, first, second, str(tested), *scores, "no predictions", MISSING]
    if evidence_a["gold"] != evidence_b["gold"]:
        return [target, first, second, str(tested), *scores, "gold differs", MISSING]
    p_value = pair_p_value(record_a["metric"], [(decode_array(evidence_a), decode_array(evidence_b))], spec.trials)
    shown = f"{p_value:.4f}{two_sources_mark([record_a, record_b])}"
    return [target, first, second, str(tested), *scores, shown, "yes" if p_value < SIGNIFICANCE_LEVEL else "no"]


def pair_p_value(metric: str, pairs: Sequence[tuple], trials: int) -> float:
    """p of the paired randomisation test of A against B over one or more seeds: per seed, the two
    runs' decoded evidence (per-sentence counts, or a correlation's [gold, predicted] columns)."""
    if metric == "correlation":
        return paired_randomization_correlation_seeds([(a[:, 0], a[:, 1], b[:, 1]) for a, b in pairs], trials=trials)
    return paired_randomization_seeds(pairs, metric, trials=trials)


def two_sources_mark(records: Sequence[dict]) -> str:
    """" (two sources)" where the tested runs read more than one instance of their source (not the
    methods' difference alone), else ""."""
    return " (two sources)" if len({record.get("source_weights") for record in records} - {None}) > 1 else ""


@dataclass(frozen=True)
class PairTests:
    """The tests of one (target, A, B) pair: the significance table's row (the first seed both have
    evidence of) and the "Over the seeds" row (None where fewer than two seeds have evidence)."""

    first_seed: list[str]
    over_seeds: list[str] | None
    first_seed_difference: float | None = None  # A − B at the first seed's row, from the records (its cells are rounded)


def significance_tests(spec: ReportSpec, records: Sequence[dict]) -> dict[tuple[str, str, str], PairTests]:
    """(target, A, B) -> its :class:`PairTests`, for every significance pair of every target both
    methods run on, in the spec's order (computed once: the significance and by-target sections share them)."""
    by_seed = {(record["method"], record["target"], record["seed"]): record for record in records}
    tests = {}
    for target, pair in ((target, pair) for target in spec.targets for pair in spec.significance_pairs if target in spec.pair_targets(pair)):
        row = _significance_row(spec, by_seed, target, pair)
        tests[target, *pair] = PairTests(row, _seeds_row(spec, by_seed, target, pair), _first_seed_difference(by_seed, target, pair, row))
    return tests


def _first_seed_difference(by_seed: Mapping[tuple[str, str, int], dict], target: str, pair: tuple[str, str], row: list[str]) -> float | None:
    """A − B at the seed a significance row tested (its column 3), from the records' unrounded scores; None without one."""
    if row[3] == MISSING:
        return None
    first, second = (by_seed[method, target, int(row[3])] for method in pair)
    return float(first["test"]) - float(second["test"])


def _significance_section(spec: ReportSpec, tests: Mapping[tuple[str, str, str], PairTests]) -> list[str]:
    """Heading, explanation and one table row per (target, pair); then the same pairs over every
    seed they share, where that is more than one."""
    rows = [test.first_seed for test in tests.values()]
    intro = (
        f"Paired approximate randomisation test at the sentence level ({spec.trials:,} trials, two-sided, "
        f"p = (r + 1) / (N + 1)) on the test predictions of the first seed both methods share whose runs both have them "
        f"(their run directories, or the evidence kept records carry)."
    )
    header = ["Target", "A", "B", "seed", "A score", "B score", "p", f"p < {SIGNIFICANCE_LEVEL}"]
    lines = ["## Significance", "", intro, "", *_table(header, rows)]
    seed_rows = [test.over_seeds for test in tests.values() if test.over_seeds]
    if seed_rows:
        seeds_intro = (
            "Over every seed both methods share (with test predictions or their evidence): the mean of A − B, the test at each "
            "seed, and one test of the mean difference over those seeds together (each trial swaps the two methods' predictions "
            "of each sentence of each seed with probability 0.5). The pooled test sees a small difference that every seed shares; "
            "it does not model how much a method's score varies from seed to seed: compare the difference with the seeds' spread "
            "in the first table.")
        seeds_header = ["Target", "A", "B", "seeds", "mean A − B", "p at each seed", "p over the seeds", f"p < {SIGNIFICANCE_LEVEL}"]
        lines += ["", "### Over the seeds", "", seeds_intro, "", *_table(seeds_header, seed_rows)]
    return lines


def _seeds_row(spec: ReportSpec, by_seed: Mapping[tuple[str, str, int], dict], target: str, pair: tuple[str, str]) -> list[str] | None:
    """The pair's tests over every shared seed whose runs have their test evidence (one gold), or
    None where fewer than two seeds do."""
    from seqtransfer.experiments.evidence import decode_array

    first, second = pair
    tested = []
    for method, name, seed in sorted(by_seed, key=lambda key: key[2]):
        if (method, name) != (first, target) or (second, target, seed) not in by_seed:
            continue
        record_a, record_b = by_seed[first, target, seed], by_seed[second, target, seed]
        evidence_a, evidence_b = test_evidence(record_a), test_evidence(record_b)
        if evidence_a and evidence_b and evidence_a["gold"] == evidence_b["gold"]:
            tested.append((seed, record_a, decode_array(evidence_a), decode_array(evidence_b)))
    if len(tested) < 2:
        return None
    metric = tested[0][1]["metric"]
    each = [pair_p_value(metric, [(a, b)], spec.trials) for _, _, a, b in tested]
    pooled = pair_p_value(metric, [(a, b) for _, _, a, b in tested], spec.trials)
    difference = statistics.mean(float(by_seed[first, target, seed]["test"]) - float(by_seed[second, target, seed]["test"]) for seed, *_ in tested)
    seeds = ", ".join(str(seed) for seed, *_ in tested)
    shown = f"{pooled:.4f}{two_sources_mark([by_seed[method, target, seed] for seed, *_ in tested for method in pair])}"
    return [target, first, second, seeds, f"{difference:+.2f}".replace("-", "−"), ", ".join(f"{p:.4f}" for p in each), shown,
            "yes" if pooled < SIGNIFICANCE_LEVEL else "no"]


def render_markdown(spec: ReportSpec, records: Sequence[dict]) -> str:
    """The experiment's report: our table, the paper's with Δ, and the significance tests."""
    records = [record for record in records if record["experiment"] == spec.experiment]
    summaries = aggregate(records, spec.split)
    source = f"Reproduces {spec.paper_table}. " if spec.paper_table else ""
    lines = [f"# {spec.title}", "", f"{source}Experiment `{spec.experiment}`, {len(records)} finished runs."]
    if spec.published:
        lines += ["", *_published_section(spec, summaries, records)]
    lines += ["", f"## Our results ({spec.split})", ""]
    lines += [f"Mean ± sample std (number of seeds). #params, aNRG and mNRG are relative to {spec.reference_method}; "
              f"{MISSING} marks a cell with no finished run (an empty cell: the method does not run on that target), † a gain over fewer targets than the table has. "
              "#params leaves out the word and character embedding tables (a transferred model's tables also hold the source's words) and counts the frozen encoder a feature-extraction run reads (runs recorded from 2026-11-24 on); "
              "a multi-task method's one model is compared with the reference's models of all targets together. "
              "Time / run is the cell's own training: not its source run's (trained once for every target), nor that of a run it starts from or reads labels of "
              "(an ensemble's is its members' together).", ""]
    lines += _ours_table(spec, records, summaries)
    if mixed_labels(summaries):
        lines += ["", "° early stopping read the labels of the test data's dev split; unmarked cells used none of the test data's labels "
                  "(a source model as it is, or a dev set of other data)."]
    lines += source_instances_note(spec, records)
    other = _other_metrics_section(spec, records)
    if other:
        lines += ["", *other]
    tests = significance_tests(spec, records) if spec.significance_pairs else {}
    if spec.significance_pairs:
        lines += ["", f"## Differences between methods ({spec.split}, ours)", "", "Mean of the first method minus mean of the second (each over its own seeds); "
                  "the significance tests below pair their runs' test predictions: * marks p < 0.05 (over the seeds both share where two or more have test "
                  "predictions, else at the first seed they share).", "", *_differences_table(spec, summaries, tests)]
    if spec.paper_results:
        lines += ["", "## Paper (Δ = ours − paper)", "", *_paper_table(spec, summaries, records)]
    if spec.significance_pairs:
        lines += ["", *_significance_section(spec, tests), "", *_by_target_section(spec, records, summaries, tests)]
    return "\n".join(lines) + "\n"


def _by_target_section(spec: ReportSpec, records: Sequence[dict], summaries: Mapping[tuple[str, str], Summary],
                       tests: Mapping[tuple[str, str, str], PairTests]) -> list[str]:
    """One table per target, its methods best first: score over the seeds, the difference from the
    method each is tested against and that test's p, and the cost of its runs."""
    costs = {(point["method"], point["target"]): point for point in cost_points(spec, records)}
    intro = (f"Each target's methods, best mean first: the {spec.split} score over the seeds; the difference from the method it is "
             f"tested against ({spec.reference_method} unless named), a mean over the seeds both have, and that test's p, over those seeds together where two or more have "
             "test predictions (\"Over the seeds\" above), else at the one seed named; trainable parameters, time and peak memory as in "
             "the cost section (– where its runs recorded none).")
    lines = ["## By target", "", intro]
    for target, header in zip(spec.targets, _target_header(spec, records)):
        cells = sorted(((method, summaries[method, target]) for method in spec.methods if (method, target) in summaries),
                       key=lambda item: -item[1].mean)
        if not cells:
            continue
        rows = [[method, f"{summary.mean:.2f} ± {summary.std:.2f} ({len(summary.seeds)})", *_compared_cells(spec, tests, method, target),
                 *_cost_cells(costs.get((method, target)), summary)] for method, summary in cells]
        tested = "" if spec.split == "test" else "test "  # the tests read test predictions, whatever split the scores are
        lines += ["", f"### {header}", "", *_table(["Method", f"{spec.split} score", f"{tested}difference", f"{tested}p", "trainable params", "time / run", "peak MB"], rows)]
    return lines


def _compared_cells(spec: ReportSpec, tests: Mapping[tuple[str, str, str], PairTests], method: str, target: str) -> list[str]:
    """[difference, p] of ``method`` against the reference where that pair is tested, else against
    the first method a pair tests it against; blank where no pair tests it."""
    tested = [key for key in tests if key[0] == target and key[1] == method]
    key = next((key for key in tested if key[2] == spec.reference_method), tested[0] if tested else None)
    if key is None:
        return ["", ""]
    against = "" if key[2] == spec.reference_method else f" vs {key[2]}"
    test = tests[key]
    if test.over_seeds:
        return [test.over_seeds[4] + against, test.over_seeds[6]]
    row = test.first_seed
    if test.first_seed_difference is None:
        return [MISSING, MISSING]
    difference = _signed(test.first_seed_difference) + against
    return [difference, row[6] if row[6] in ("no predictions", "gold differs") else f"{row[6]} (seed {row[3]})"]


def _cost_cells(point: dict | None, summary: Summary) -> list[str]:
    """[trainable parameters, time / run, peak MB] of a cell: its cost records' means, else its time alone."""
    if point is None:
        return [MISSING, _duration(summary.seconds_mean), MISSING]
    return [f"{point['trainable']:,.0f}", _duration(point["seconds"]), MISSING if point["memory"] is None else f"{point['memory']:,.0f}"]


def source_instances_note(spec: ReportSpec, records: Sequence[dict]) -> list[str]:
    """A note on the targets whose transfer runs read more than one instance of a source (a source
    trained again, in another session, to other weights: ``source_weights`` of the records), or []."""
    mixed = []
    for target in spec.targets:
        instances = {record["source_weights"] for record in records if record.get("target") == target and record.get("source_weights")}
        if len(instances) > 1:
            mixed.append(f"{target} ({len(instances)})")
    if not mixed:
        return []
    return ["", f"Runs of these targets read more than one instance of their source (the source was trained again, to other weights): {', '.join(mixed)}. "
            "Their means mix the instances; a significance test between runs of two instances is marked \"two sources\"."]


def cost_points(spec: ReportSpec, records: Sequence[dict]) -> list[dict]:
    """Per (method, target) with cost records: mean test score, trainable parameters, seconds and peak memory."""
    points = []
    for method in spec.methods:
        for target in spec.targets:
            runs = [record for record in records if record.get("method") == method and record.get("target") == target
                    and record.get("trainable_parameters") is not None and record.get(spec.split) is not None]
            if runs:
                memory = [record["peak_rss_megabytes"] for record in runs if record.get("peak_rss_megabytes") is not None]
                points.append({"method": method, "target": target, "score": statistics.fmean(float(record[spec.split]) for record in runs),
                               "trainable": max(statistics.fmean(record["trainable_parameters"] for record in runs), 1.0),
                               "parameters": statistics.fmean(record["parameters"] for record in runs),
                               "seconds": max(statistics.fmean(float(record["seconds"]) for record in runs), 0.1),
                               "memory": statistics.fmean(memory) if memory else None, "runs": len(runs)})
    return points


def render_cost(spec: ReportSpec, records: Sequence[dict], figure_name: str | None = None) -> str:
    """Trainable and total parameters, time and peak memory per method and target ("" without cost records)."""
    points = cost_points(spec, [record for record in records if record["experiment"] == spec.experiment])
    if not points:
        return ""
    rows = [[point["method"], point["target"], f"{point['score']:.2f}", f"{point['trainable']:,.0f}", f"{point['parameters']:,.0f}",
             _duration(point["seconds"]), MISSING if point["memory"] is None else f"{point['memory']:,.0f}", str(point["runs"])] for point in points]
    lines = ["## Cost", "", f"Means over seeds of the runs that recorded their cost ({spec.split} score). Time and memory are this machine's, "
             "with whatever else ran beside them (see the notes); peak memory is the process's resident set.", ""]
    lines += _table(["Method", "Target", "score", "trainable params", "all params", "time / run", "peak MB", "runs"], rows)
    if figure_name:
        lines += ["", f"![score against trainable parameters and time]({figure_name})"]
    return "\n".join(lines) + "\n"


def render_sources(records: Sequence[dict]) -> str:
    """The source runs the experiment's transfer methods start from: data, scores, training time."""
    rows = [[record["source"], f"{record['dataset']}/{record['task']}", f"{float(record['dev']):.2f}",
             MISSING if record.get("test") is None else f"{float(record['test']):.2f}", _duration(float(record["seconds"]))]
            for record in sorted(records, key=lambda record: record["source"])]
    intro = "Trained once (seed 1) and shared by every method and seed that transfers from them."
    return "\n".join(["## Source runs", "", intro, "", *_table(["Source", "Data", "dev", "test", "time"], rows)]) + "\n"


def render_csv(spec: ReportSpec, records: Sequence[dict]) -> str:
    """One row per (method, target) of the spec: mean, std, n, paper, delta (empty when missing)."""
    summaries = aggregate(record for record in records if record["experiment"] == spec.experiment)
    metrics = _target_metrics(records)
    output = io.StringIO()
    writer = csv.writer(output, lineterminator="\n")
    writer.writerow(["method", "target", "metric", "mean", "std", "n", "paper", "delta"])
    for method in spec.methods:
        for target in spec.targets:
            summary = summaries.get((method, target))
            paper = spec.paper_results.get(method, {}).get(target)
            ours = [f"{summary.mean:.4f}", f"{summary.std:.4f}", len(summary.seeds)] if summary else ["", "", 0]
            delta = f"{summary.mean - paper:.4f}" if summary and paper is not None else ""
            writer.writerow([method, target, metrics.get(target, ""), *ours, "" if paper is None else paper, delta])
    return output.getvalue()
