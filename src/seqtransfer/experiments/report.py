"""Reports of an experiment: our scores next to the paper's, aNRG / mNRG, and significance.

An experiment is a grid methods × targets × seeds; its finished runs are records of the
:class:`~seqtransfer.experiments.store.ResultsStore`. :func:`render_markdown` and
:func:`render_csv` turn those records and a :class:`ReportSpec` (what the experiment file
says: methods, targets, reference method, paper numbers) into a document. A cell whose runs
have not finished is shown as ``–`` (an empty field in CSV); nothing else depends on it.

The settings, aggregation and gains are in ``report_base.py``; the comparisons with published
numbers in ``report_paper.py``; the significance tests in ``report_significance.py``; the
opening notes in ``report_notes.py``.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence

from seqtransfer.data.metrics import METRICS
from seqtransfer.experiments.experiment_file import split_member
from seqtransfer.experiments.kept import selection_of
from seqtransfer.experiments.report_base import (
    MISSING,
    ReportSpec,
    Summary,
    _duration,
    _mean_cell,
    _ratio,
    _signed,
    _spec_means,
    _table,
    aggregate,
    anrg,
    means_by_method,
    mnrg,
    normalised_relative_gains,
)
from seqtransfer.experiments.report_notes import notes_lines
from seqtransfer.experiments.report_paper import _paper_table, _published_section, other_metric_scores
from seqtransfer.experiments.report_significance import PairTests, _significance_section, significance_tests
from seqtransfer.experiments.search_records import shown_setting


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
        if (method, target) in summaries and (spec.reference_method, target) in summaries and summaries[spec.reference_method, target].parameters
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
    gains = normalised_relative_gains(means, spec.reference_method)  # once: each method's count of the targets they average over
    rows = []
    for method in spec.methods:
        cells = [summaries.get((method, target)) for target in spec.targets]
        mark = "°" if mixed_labels(summaries) else ""
        scores = [
            f"{_mean_cell(cell.mean, cell.std, len(cell.seeds))}{mark if cell.target_dev_labels else ''}" if cell else MISSING if spec.applies(method, target) else ""
            for cell, target in zip(cells, spec.targets)
        ]
        covered = len(gains.get(method, ()))
        seconds = [cell.seconds_mean for cell in cells if cell]
        time = _duration(statistics.fmean(seconds)) if seconds else MISSING
        gain_cells = [_gain_cell(average, method, covered, len(spec.targets)), _gain_cell(median, method, covered, len(spec.targets))]
        rows.append([method, *scores, _parameter_ratio(spec, summaries, method), *gain_cells, time])
    header = ["Method", *_target_header(spec, records), "#params", "aNRG", "mNRG", "time / run"]
    return _table(header, rows)


def mixed_labels(summaries: Mapping[tuple[str, str], Summary]) -> bool:
    """Some cells used the test data's dev labels and some did not (then the table marks the first with °)."""
    return len({summary.target_dev_labels for summary in summaries.values()}) > 1


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
        rows.append([method, *(_mean_cell(statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else 0.0, len(v)) if v else MISSING for v in values)])
    header = ["Method", *(f"{target} ({METRICS[metric].title})" for metric, target in columns)]
    return [f"## Other metrics ({spec.split})", "", "The same runs scored by other metrics from their predictions (a target's `also`).", "", *_table(header, rows)]


def _differences_table(spec: ReportSpec, summaries: Mapping[tuple[str, str], Summary], tests: Mapping[tuple[str, str, str], PairTests]) -> list[str]:
    """Mean A − mean B per target for each compared pair (the file's significance pairs): FT − FE,
    a scheme against FT, ...; each mean over that method's seeds, with ``*`` where the pair's test
    (over the seeds, else at one seed) gives p < 0.05."""
    means = means_by_method(summaries)
    rows = []
    for first, second in spec.significance_pairs:
        cells = [
            _signed(means[first][target] - means[second][target]) + _significant_mark(tests, target, first, second)
            if target in means.get(first, {}) and target in means.get(second, {})
            else MISSING
            if target in spec.pair_targets((first, second))
            else ""
            for target in spec.targets
        ]
        rows.append([f"{first} − {second}", *cells])
    return _table(["Difference", *spec.targets], rows)


def _significant_mark(tests: Mapping[tuple[str, str, str], PairTests], target: str, first: str, second: str) -> str:
    """``*`` where the pair's test on ``target`` (over the seeds where it has that row, else at its one seed) says p < 0.05."""
    test = tests.get((target, first, second))
    if test is None:
        return ""
    row = test.over_seeds or test.first_seed
    return "*" if row[-1] == "yes" else ""


def _runs_count(spec: ReportSpec, records: Sequence[dict]) -> str:
    """ "N finished runs", and how many of them are a method's runs at other seeds ("Name+1000": an
    ensemble's members, a distilled student's teachers), which no table shows."""
    offset = sum(seed_offset > 0 and name in spec.methods for name, seed_offset in (split_member(record["method"]) for record in records))
    return f"{len(records)} finished run{'' if len(records) == 1 else 's'}" + (f" ({offset} of them a method's runs at other seeds that an ensemble or a student reads, in no table)" if offset else "")


def render_markdown(spec: ReportSpec, records: Sequence[dict]) -> str:
    """The experiment's report: our table, the paper's with Δ, and the significance tests."""
    records = [record for record in records if record["experiment"] == spec.experiment]
    summaries = aggregate(records, spec.split)
    source = f"Reproduces {spec.paper_table}. " if spec.paper_table else ""
    lines = [f"# {spec.title}", "", f"{source}Experiment `{spec.experiment}`, {_runs_count(spec, records)}."]
    lines += notes_lines(spec.notes)
    if spec.published:
        lines += ["", *_published_section(spec, summaries, records)]
    lines += ["", f"## Our results ({spec.split})", ""]
    lines += [
        f"Mean ± sample std (number of seeds). #params, aNRG and mNRG are relative to {spec.reference_method}; "
        f"{MISSING} marks a cell with no finished run (an empty cell: the method does not run on that target), † a gain over fewer targets than the table has. "
        "#params leaves out the word and character embedding tables (a transferred model's tables also hold the source's words) "
        "and counts the frozen encoder a feature-extraction run reads (runs recorded from 2026-11-24 on); "
        "a multi-task method's one model is compared with the reference's models of all targets together. "
        "Time / run is the cell's own training: not its source run's (trained once for every target), nor that of a run it starts from or reads labels of "
        "(an ensemble's is its members' together).",
        "",
    ]
    lines += _ours_table(spec, records, summaries)
    if mixed_labels(summaries):
        lines += ["", "° early stopping read the labels of the test data's dev split; unmarked cells used none of the test data's labels (a source model as it is, or a dev set of other data)."]
    lines += source_instances_note(spec, records)
    lines += selected_settings_note(records)
    other = _other_metrics_section(spec, records)
    if other:
        lines += ["", *other]
    tests = significance_tests(spec, records) if spec.significance_pairs else {}
    if spec.significance_pairs:
        lines += [
            "",
            f"## Differences between methods ({spec.split}, ours)",
            "",
            "Mean of the first method minus mean of the second (each over its own seeds); "
            "the significance tests below pair their runs' test predictions: * marks p < 0.05 (over the seeds both share where two or more have test "
            "predictions, else at the first seed they share)."
            + (
                f" The differences here are of {spec.split} means and the marks of the test predictions' tests: a * says the test difference is significant, whatever its sign."
                if spec.split != "test"
                else ""
            ),
            "",
            *_differences_table(spec, summaries, tests),
        ]
    if spec.paper_results:
        lines += ["", "## Paper (Δ = ours − paper)", "", *_paper_table(spec, summaries, records)]
    if spec.significance_pairs:
        lines += ["", *_significance_section(spec, tests), "", *_by_target_section(spec, records, summaries, tests)]
    return "\n".join(lines) + "\n"


def _by_target_section(spec: ReportSpec, records: Sequence[dict], summaries: Mapping[tuple[str, str], Summary], tests: Mapping[tuple[str, str, str], PairTests]) -> list[str]:
    """One table per target, its methods best first: score over the seeds, the difference from the
    method each is tested against and that test's p, and the cost of its runs."""
    costs = {(point["method"], point["target"]): point for point in cost_points(spec, records)}
    intro = (
        f"Each target's methods, best mean first: the {spec.split} score over the seeds; the difference from the method it is "
        f"tested against ({spec.reference_method} unless named), a mean over every seed both have; that test's p, over the seeds with "
        'test predictions together where two or more have them ("Over the seeds" above; the seeds named where they are fewer), '
        "else at the one seed named; trainable parameters, time and peak memory as in the cost section (– where its runs recorded none)."
    )
    lines = ["## By target", "", intro]
    for target, header in zip(spec.targets, _target_header(spec, records)):
        cells = sorted(((method, summaries[method, target]) for method in spec.methods if (method, target) in summaries), key=lambda item: -item[1].mean)
        if not cells:
            continue
        rows = [
            [method, _mean_cell(summary.mean, summary.std, len(summary.seeds)), *_compared_cells(spec, tests, method, target), *_cost_cells(costs.get((method, target)), summary)]
            for method, summary in cells
        ]
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
    if test.difference is None:
        return [MISSING, MISSING]
    difference = _signed(test.difference) + against
    if test.over_seeds:  # tested over the seeds that kept test predictions: named where the difference reads more
        tested_seeds = test.over_seeds[3]
        return [difference, test.over_seeds[6] + ("" if tested_seeds == ", ".join(map(str, test.shared_seeds)) else f" (seeds {tested_seeds})")]
    row = test.first_seed
    return [difference, row[6] if row[6] in ("no predictions", "gold differs") else f"{row[6]} (seed {row[3]})"]


def _cost_cells(point: dict | None, summary: Summary) -> list[str]:
    """[trainable parameters, time / run, peak MB] of a cell: its cost records' means, else its time alone."""
    if point is None:
        return [MISSING, _duration(summary.seconds_mean), MISSING]
    return [f"{point['trainable']:,.0f}", _duration(point["seconds"]), MISSING if point["memory"] is None else f"{point['memory']:,.0f}"]


def source_instances_note(spec: ReportSpec, records: Sequence[dict]) -> list[str]:
    """A note on the targets whose transfer runs read more than one instance of a source (a source
    trained again, in another session, to other weights: ``source_weights`` of the records), or []."""
    groups = spec.source_instances(records)
    mixed = []
    for target in spec.targets:
        for (name, source), instances in groups.items():
            if name == target and len(instances) > 1:
                mixed.append(f"{target} ({len(instances)})" if source is None else f"{target}, source {source} ({len(instances)})")
    if not mixed:
        return []
    return [
        "",
        f"Runs of these targets read more than one instance of their source (the source was trained again, to other weights): {', '.join(mixed)}. "
        'Their means mix the instances; a significance test between runs of two instances is marked "two sources".',
    ]


def selected_settings_note(records: Sequence[dict]) -> list[str]:
    """The cells run at the setting a search selected on dev (``experiment run --selected``), one line per method and target."""
    settings = selection_of(records)
    if not settings:
        return []
    lines = ["", "Cells at the setting their search selected on dev (`experiment run --selected`; the others at the experiment file's own):", ""]
    return lines + [selected_line(method, target, setting) for (method, target), setting in sorted(settings.items())]


def selected_line(method: str, target: str, setting: dict) -> str:
    """A cell's searched setting, or the cells at searched settings that it reads (an ensemble's members)."""
    if set(setting) == {"read"}:
        return f"- {method} / {target}: reads {', '.join(setting['read'])} at their searched settings"
    return f"- {method} / {target}: `{shown_setting(setting)}`"


def cost_points(spec: ReportSpec, records: Sequence[dict]) -> list[dict]:
    """Per (method, target) with cost records: mean test score, trainable parameters, seconds and peak memory."""
    points = []
    for method in spec.methods:
        for target in spec.targets:
            runs = [
                record
                for record in records
                if record.get("method") == method and record.get("target") == target and record.get("trainable_parameters") is not None and record.get(spec.split) is not None
            ]
            if runs:
                memory = [record["peak_rss_megabytes"] for record in runs if record.get("peak_rss_megabytes") is not None]
                points.append(
                    {
                        "method": method,
                        "target": target,
                        "score": statistics.fmean(float(record[spec.split]) for record in runs),
                        "trainable": statistics.fmean(record["trainable_parameters"] for record in runs),
                        "parameters": statistics.fmean(record["parameters"] for record in runs),
                        "seconds": max(statistics.fmean(float(record["seconds"]) for record in runs), 0.1),
                        "memory": statistics.fmean(memory) if memory else None,
                        "runs": len(runs),
                    }
                )
    return points


def render_cost(spec: ReportSpec, records: Sequence[dict], figure_name: str | None = None) -> str:
    """Trainable and total parameters, time and peak memory per method and target ("" without cost records)."""
    points = cost_points(spec, [record for record in records if record["experiment"] == spec.experiment])
    if not points:
        return ""
    rows = [
        [
            point["method"],
            point["target"],
            f"{point['score']:.2f}",
            f"{point['trainable']:,.0f}",
            f"{point['parameters']:,.0f}",
            _duration(point["seconds"]),
            MISSING if point["memory"] is None else f"{point['memory']:,.0f}",
            str(point["runs"]),
        ]
        for point in points
    ]
    lines = [
        "## Cost",
        "",
        f"Means over seeds of the runs that recorded their cost ({spec.split} score). Time and memory are this machine's, "
        "with whatever else ran beside them (see the notes); peak memory is the process's resident set.",
        "",
    ]
    lines += _table(["Method", "Target", "score", "trainable params", "all params", "time / run", "peak MB", "runs"], rows)
    if figure_name:
        lines += ["", f"![score against trainable parameters and time]({figure_name})"]
    return "\n".join(lines) + "\n"


def render_sources(records: Sequence[dict]) -> str:
    """The source runs the experiment's transfer methods start from: data, scores, training time."""
    rows = [
        [
            record["source"],
            f"{record['dataset']}/{record['task']}",
            f"{float(record['dev']):.2f}",
            MISSING if record.get("test") is None else f"{float(record['test']):.2f}",
            _duration(float(record["seconds"])),
        ]
        for record in sorted(records, key=lambda record: record["source"])
    ]
    intro = "Trained once (seed 1) and shared by every method and seed that transfers from them."
    return "\n".join(["## Source runs", "", intro, "", *_table(["Source", "Data", "dev", "test", "time"], rows)]) + "\n"


def _csv_scores(summary: Summary | None, paper_metric_scores: list[float] | None) -> tuple[float, float, int]:
    """(mean, sample std, seeds) of a cell: by the paper's metric where its target names one (its
    runs' scores by it), else its summary's; (0, 0, 0) where it has none."""
    if paper_metric_scores is not None:
        scores = paper_metric_scores
        return (statistics.fmean(scores), statistics.stdev(scores) if len(scores) > 1 else 0.0, len(scores)) if scores else (0.0, 0.0, 0)
    return (summary.mean, summary.std, len(summary.seeds)) if summary else (0.0, 0.0, 0)


def render_csv(spec: ReportSpec, records: Sequence[dict]) -> str:
    """One row per (method, target) of the spec: the split the paper's numbers are of (test unless the file's
    ``paper_split`` says dev), our mean, std and n on it, the paper's number and delta (empty when missing)."""
    summaries = aggregate((record for record in records if record["experiment"] == spec.experiment), spec.split)
    metrics = _target_metrics(records)
    output = io.StringIO()
    writer = csv.writer(output, lineterminator="\n")
    writer.writerow(["method", "target", "metric", "split", "mean", "std", "n", "paper", "delta"])
    for method in spec.methods:
        for target in spec.targets:
            metric = spec.paper_metrics.get(target)  # the paper's numbers are of another metric than ours: ours by theirs
            mean, std, count = _csv_scores(summaries.get((method, target)), other_metric_scores(spec, records, metric, target).get(method, []) if metric else None)
            paper = spec.paper_results.get(method, {}).get(target)
            ours = [f"{mean:.4f}", f"{std:.4f}", count] if count else ["", "", 0]
            delta = f"{mean - paper:.4f}" if count and paper is not None else ""
            writer.writerow([method, target, metric or metrics.get(target, ""), spec.split, *ours, "" if paper is None else paper, delta])
    return output.getvalue()
