"""The significance part of a report: paired randomisation tests between the experiment's method
pairs, over the seeds both share (or at the first seed they share), and their table."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from seqtransfer.data.metrics import evaluate, is_correlation, main_score
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.evidence import decode_array, evidence_of
from seqtransfer.experiments.kept import is_score
from seqtransfer.experiments.report_base import MISSING, SIGNIFICANCE_LEVEL, ReportSpec, _mean_cell, _signed, _table
from seqtransfer.experiments.significance import paired_randomization_correlation_seeds, paired_randomization_seeds, score_from_counts, welch_p_value

# Metrics whose test score follows from the per-sentence counts of their evidence.
COUNTED_METRICS = ("accuracy", "attachment", "span_f1", "positive_f1")
CORRELATION_TOLERANCE = 0.01  # points: a correlation of predictions rounded to 4 decimals moves by about 1e-3


def test_evidence(record: dict) -> dict | None:
    """What the significance test reads of a cell's test predictions: the record's own ``evidence``
    (experiments/evidence.py), made from its run's predictions when it was recorded; for a record
    kept before records carried it, its run's predictions folder where the store has it and they
    score what the record says. A run directory can hold another run than the record's: another
    experiment's cell of the same settings trained again there, with an LM rebuilt since."""
    if record.get("evidence"):
        return record["evidence"]
    folder = Path(record.get("predictions") or Path(record["run_directory"]) / "predictions")  # a multi-task run: predictions/TASK
    try:
        found = evidence_of(folder, record["metric"])
    except SeqTransferError:  # unreadable predictions: as if there were none
        return None
    return found if found is not None and scores_as_recorded(found, record) else None


def scores_as_recorded(evidence: dict, record: dict) -> bool | None:
    """Whether ``evidence`` gives the record's test score: counts to 1e-6 of a point, a
    correlation's [gold, predicted] columns to :data:`CORRELATION_TOLERANCE` (their predictions are
    written to 4 decimals); None where the record has no test score or its metric is not one of these."""
    metric = record["metric"]
    if record.get("test") is None:
        return None
    if is_correlation(metric):
        columns = decode_array(evidence)
        score = main_score(metric, evaluate([[gold] for gold in columns[:, 0]], [[predicted] for predicted in columns[:, 1]], metric))
        return abs(score - float(record["test"])) < CORRELATION_TOLERANCE
    if metric not in COUNTED_METRICS:
        return None
    score = float(score_from_counts(decode_array(evidence).sum(axis=0), metric))
    return abs(score - float(record["test"])) < 1e-6


def _significance_row(spec: ReportSpec, by_seed: Mapping[tuple[str, str, int], dict], target: str, pair: tuple[str, str], evidence: Mapping[int, tuple]) -> list[str]:
    """One row: the paired test on the first seed both methods share, or ``–`` cells. ``evidence``:
    per shared seed in order, the two runs' test evidence (None where a run kept none)."""
    first, second = pair
    if not evidence:
        return [target, first, second, MISSING, MISSING, MISSING, MISSING, MISSING]
    # the first shared seed whose two runs both have their test predictions (or a kept record's evidence of them)
    tested = next((seed for seed, both in evidence.items() if all(both)), next(iter(evidence)))
    evidence_a, evidence_b = evidence[tested]
    record_a, record_b = by_seed[first, target, tested], by_seed[second, target, tested]
    scores = [f"{float(record_a['test']):.2f}", f"{float(record_b['test']):.2f}"]
    if evidence_a is None or evidence_b is None:  # kept records from before records carried evidence, or runs without predictions
        return [target, first, second, str(tested), *scores, "no predictions", MISSING]
    if evidence_a["gold"] != evidence_b["gold"]:
        return [target, first, second, str(tested), *scores, "gold differs", MISSING]
    p_value = pair_p_value(record_a["metric"], [(decode_array(evidence_a), decode_array(evidence_b))], spec.trials)
    shown = f"{p_value:.4f}{two_sources_mark(spec, [record_a, record_b])}"
    return [target, first, second, str(tested), *scores, shown, "yes" if p_value < SIGNIFICANCE_LEVEL else "no"]


def pair_p_value(metric: str, pairs: Sequence[tuple], trials: int) -> float:
    """p of the paired randomisation test of A against B over one or more seeds: per seed, the two
    runs' decoded evidence (per-sentence counts, or a correlation's [gold, predicted] columns)."""
    if is_correlation(metric):
        return paired_randomization_correlation_seeds([(a[:, 0], a[:, 1], b[:, 1]) for a, b in pairs], trials=trials, spearman=metric == "spearman")
    return paired_randomization_seeds(pairs, metric, trials=trials)


def two_sources_mark(spec: ReportSpec, records: Sequence[dict]) -> str:
    """ " (two sources)" where the tested runs read more than one instance of one source (not the
    methods' difference alone), else "". Two methods that read two named sources are what is tested."""
    return " (two sources)" if any(len(instances) > 1 for instances in spec.source_instances(records).values()) else ""


@dataclass(frozen=True)
class PairTests:
    """The tests of one (target, A, B) pair: the significance table's row (the first seed both have
    evidence of) and the "Over the seeds" row (None where fewer than two seeds have evidence)."""

    first_seed: list[str]
    over_seeds: list[str] | None
    difference: float | None = None  # A − B, a mean over every seed both have, from the records' unrounded scores
    shared_seeds: tuple[int, ...] = ()  # the seeds both methods have
    across_seeds: list[str] | None = None  # Welch's t-test on the two methods' per-seed scores (None: fewer than two seeds a side)


def significance_tests(spec: ReportSpec, records: Sequence[dict]) -> dict[tuple[str, str, str], PairTests]:
    """(target, A, B) -> its :class:`PairTests`, for every significance pair of every target both
    methods run on, in the spec's order (computed once: the significance and by-target sections share them)."""
    by_seed = {(record["method"], record["target"], record["seed"]): record for record in records}
    tests = {}
    for target, pair in ((target, pair) for target in spec.targets for pair in spec.significance_pairs if target in spec.pair_targets(pair)):
        first, second = pair
        seeds = tuple(sorted(seed for method, name, seed in by_seed if (method, name) == (first, target) and (second, target, seed) in by_seed))
        evidence = {seed: (test_evidence(by_seed[first, target, seed]), test_evidence(by_seed[second, target, seed])) for seed in seeds}  # read once a seed
        difference = _mean_difference(by_seed, target, pair, seeds) if seeds else None
        rows = (_significance_row(spec, by_seed, target, pair, evidence), _seeds_row(spec, by_seed, target, pair, evidence))
        tests[target, *pair] = PairTests(*rows, difference, seeds, _welch_row(by_seed, target, pair))
    return tests


def _welch_row(by_seed: Mapping[tuple[str, str, int], dict], target: str, pair: tuple[str, str]) -> list[str] | None:
    """Welch's t-test between the two methods' test scores on ``target``, a score per seed each has
    (no predictions needed: kept records from before records carried evidence are tested too)."""
    scores = [[float(record["test"]) for (method, name, _), record in by_seed.items() if (method, name) == (which, target) and is_score(record.get("test"))] for which in pair]
    p_value = welch_p_value(*scores)
    if p_value is None:
        return None
    shown = [_mean_cell(statistics.mean(values), statistics.stdev(values), len(values)) for values in scores]
    difference = _signed(statistics.mean(scores[0]) - statistics.mean(scores[1]))
    written = f"{p_value:.4f}" if p_value >= 0.0001 else "< 0.0001"  # Welch's p is exact: it can be smaller than 4 decimals show
    return [target, *pair, *shown, difference, written, "yes" if p_value < SIGNIFICANCE_LEVEL else "no"]


def _mean_difference(by_seed: Mapping[tuple[str, str, int], dict], target: str, pair: tuple[str, str], seeds: Sequence[int]) -> float:
    """A − B on ``target``, a mean over ``seeds`` of the records' unrounded test scores."""
    first, second = pair
    return statistics.mean(float(by_seed[first, target, seed]["test"]) - float(by_seed[second, target, seed]["test"]) for seed in seeds)


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
            "in the first table."
        )
        seeds_header = ["Target", "A", "B", "seeds", "mean A − B", "p at each seed", "p over the seeds", f"p < {SIGNIFICANCE_LEVEL}"]
        lines += _subsection("Over the seeds", seeds_intro, seeds_header, seed_rows)
    welch_rows = [test.across_seeds for test in tests.values() if test.across_seeds]
    if welch_rows:
        welch_intro = (
            "Welch's t-test on each method's test scores, one per seed (all the seeds each method has; no predictions needed): "
            "it weighs the difference of the means against how much each method moves from seed to seed, which the tests "
            "above, over the sentences, do not. With three seeds a side it finds only differences that are large against that spread."
        )
        welch_header = ["Target", "A", "B", "A: mean ± std (seeds)", "B: mean ± std (seeds)", "A − B", "p (Welch)", f"p < {SIGNIFICANCE_LEVEL}"]
        lines += _subsection("Across seeds (Welch's t-test)", welch_intro, welch_header, welch_rows)
    return lines


def _subsection(heading: str, intro: str, header: list[str], rows: list[list[str]]) -> list[str]:
    """A ``###`` heading, its explanation and its table, after a blank line."""
    return ["", f"### {heading}", "", intro, "", *_table(header, rows)]


def _seeds_row(spec: ReportSpec, by_seed: Mapping[tuple[str, str, int], dict], target: str, pair: tuple[str, str], evidence: Mapping[int, tuple]) -> list[str] | None:
    """The pair's tests over every shared seed whose runs have their test evidence (one gold), or
    None where fewer than two seeds do (``evidence`` as for ``_significance_row``)."""
    first, second = pair
    tested = [(seed, decode_array(a), decode_array(b)) for seed, (a, b) in evidence.items() if a and b and a["gold"] == b["gold"]]
    if len(tested) < 2:
        return None
    metric = by_seed[first, target, tested[0][0]]["metric"]
    each = [pair_p_value(metric, [(a, b)], spec.trials) for _, a, b in tested]
    pooled = pair_p_value(metric, [(a, b) for _, a, b in tested], spec.trials)
    difference = _mean_difference(by_seed, target, pair, [seed for seed, *_ in tested])
    seeds = ", ".join(str(seed) for seed, *_ in tested)
    shown = f"{pooled:.4f}{two_sources_mark(spec, [by_seed[method, target, seed] for seed, *_ in tested for method in pair])}"
    return [target, first, second, seeds, _signed(difference), ", ".join(f"{p:.4f}" for p in each), shown, "yes" if pooled < SIGNIFICANCE_LEVEL else "no"]
