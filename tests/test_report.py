"""Experiment reports: NRG against the paper's numbers, aggregation, significance, Markdown/CSV."""

import dataclasses
import json
import random
import statistics

import pytest

from seqtransfer.data.metrics import evaluate
from seqtransfer.experiments.report import render_csv, render_markdown
from seqtransfer.experiments.report_base import ReportSpec, aggregate, anrg, mnrg, normalised_relative_gains, report_spec
from seqtransfer.experiments.significance import bootstrap_confidence_interval, paired_randomization_test, score_from_counts, sentence_counts
from seqtransfer.experiments.spec import ExperimentSpec, MethodSpec, TargetSpec

TARGETS = ["TPoS", "ArK", "TweeBank", "TChunk", "WNUT"]
# PretRand paper, Table 4 (test): accuracy, and entity F1 for WNUT.
TABLE_4 = {
    "From-scratch200": [86.82, 91.10, 91.66, 85.96, 36.75],
    "From-scratch400": [86.61, 91.31, 91.81, 87.11, 38.64],
    "Feature extraction": [86.08, 85.25, 87.93, 81.49, 27.83],
    "Fine-tuning": [89.57, 92.09, 93.23, 88.86, 41.25],
    "Ensemble (2 rand)": [88.98, 91.45, 92.26, 86.72, 39.54],
    "Ensemble (1p+1r)": [88.74, 91.67, 93.06, 88.78, 42.66],
    "PretRand": [91.27, 93.81, 95.11, 89.95, 43.12],
}
PAPER = {method: dict(zip(TARGETS, scores)) for method, scores in TABLE_4.items()}


def test_anrg_reproduces_table_4():
    average = anrg(PAPER, "From-scratch200")
    expected = {"Feature extraction": -32.4, "Fine-tuning": 15.7, "Ensemble (2 rand)": 7.5, "Ensemble (1p+1r)": 13.4, "PretRand": 28.8}
    assert {method: round(average[method], 1) for method in expected} == expected
    assert average["From-scratch200"] == 0.0


def test_mnrg_is_the_median_over_shared_targets():
    gains = normalised_relative_gains(PAPER, "From-scratch200")
    assert gains["PretRand"][0] == pytest.approx(100 * (91.27 - 86.82) / (100 - 86.82))
    assert round(mnrg(PAPER, "From-scratch200")["PretRand"], 1) == 30.4
    partial = {"reference": {"a": 50.0, "b": 50.0}, "method": {"a": 75.0, "c": 10.0}, "alone": {"c": 1.0}}
    assert mnrg(partial, "reference") == {"reference": 0.0, "method": 50.0}


def _record(method, target, seed, test, run_directory="", metric="accuracy"):
    return {
        "experiment": "table4",
        "method": method,
        "target": target,
        "seed": seed,
        "dataset": target.lower(),
        "task": "pos",
        "metric": metric,
        "run_directory": str(run_directory),
        "dev": test + 1.0,
        "test": test,
        "parameters": 1000 if method == "Scratch" else 1030,
        "seconds": 60.0 * seed,
    }


def test_aggregate_summarises_each_cell():
    records = [_record("Scratch", "TPoS", 2, 90.0), _record("Scratch", "TPoS", 1, 88.0), _record("Scratch", "ArK", 1, 70.0)]
    summaries = aggregate(records)
    cell = summaries["Scratch", "TPoS"]
    assert (cell.mean, cell.seeds, cell.scores, cell.parameters) == (89.0, [1, 2], [88.0, 90.0], 1000)
    assert cell.std == pytest.approx(2**0.5) and cell.seconds_mean == 90.0
    assert summaries["Scratch", "ArK"].std == 0.0
    assert aggregate(records, split="dev")["Scratch", "ArK"].mean == 71.0


def _noisy(tags, rate, labels, generator):
    return [[generator.choice(labels) if generator.random() < rate else tag for tag in sentence] for sentence in tags]


def test_randomization_identical_and_clearly_better_systems():
    generator = random.Random(0)
    labels = ["NN", "VB", "JJ", "DT"]
    gold = [[generator.choice(labels) for _ in range(10)] for _ in range(200)]
    worse = [[tag if generator.random() > 0.3 else "X" for tag in sentence] for sentence in gold]
    assert paired_randomization_test(gold, worse, worse, "accuracy", trials=500) == 1.0
    assert paired_randomization_test(gold, gold, worse, "accuracy", trials=500) == pytest.approx(1 / 501)
    assert paired_randomization_test(gold, worse, gold, "accuracy", trials=500) < 0.05


def test_f1_counts_agree_with_evaluate_and_test_is_symmetric():
    generator = random.Random(1)
    labels = ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    gold = [[generator.choice(labels) for _ in range(generator.randint(1, 12))] for _ in range(60)]
    first, second = _noisy(gold, 0.2, labels, generator), _noisy(gold, 0.25, labels, generator)
    for predicted in (first, second):
        counts = sentence_counts(gold, predicted, "span_f1").sum(axis=0)
        assert float(score_from_counts(counts, "span_f1")) == pytest.approx(evaluate(gold, predicted, "span_f1")["f1"])
    p_value = paired_randomization_test(gold, first, second, "span_f1", trials=300, seed=3)
    assert 0 < p_value <= 1
    assert paired_randomization_test(gold, second, first, "span_f1", trials=300, seed=3) == p_value


def test_bootstrap_interval_surrounds_the_score():
    generator = random.Random(2)
    gold = [[generator.choice("AB") for _ in range(8)] for _ in range(100)]
    predicted = _noisy(gold, 0.3, ["A", "B"], generator)
    low, high = bootstrap_confidence_interval(gold, predicted, "accuracy", samples=300)
    assert low < evaluate(gold, predicted, "accuracy")["accuracy"] < high


def _write_run(directory, gold, predicted):
    lines = []
    for gold_tags, predicted_tags in zip(gold, predicted):
        lines += [f"w{index} {g} {p}" for index, (g, p) in enumerate(zip(gold_tags, predicted_tags))] + [""]
    (directory / "predictions").mkdir(parents=True)
    (directory / "predictions" / "test.conll").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def test_read_predictions(tmp_path):
    run = _write_run(tmp_path / "run", [["B-PER", "O"], ["O"]], [["B-PER", "B-LOC"], ["O"]])
    from seqtransfer.analysis.predictions import read_predictions

    predictions = read_predictions(run / "predictions" / "test.conll")
    assert (predictions.gold, predictions.predicted) == ([["B-PER", "O"], ["O"]], [["B-PER", "B-LOC"], ["O"]])


def test_a_run_directory_holding_another_run_than_the_record_gives_way_to_the_records_evidence(tmp_path):
    """Another experiment's cell of the same settings can train again in the same run directory (an LM
    rebuilt since): a record's own evidence is tested, and a record without any is tested on its
    folder's predictions only where they give its score."""
    from seqtransfer.experiments.evidence import evidence_of
    from seqtransfer.experiments.report_significance import test_evidence

    gold = [["B-PER", "O"], ["B-LOC"], ["O", "B-ORG"]]
    recorded, retrained = [["B-PER", "O"], ["B-LOC"], ["O", "O"]], [["O", "O"], ["B-LOC"], ["O", "O"]]
    kept = evidence_of(_write_run(tmp_path / "recorded", gold, recorded) / "predictions", "span_f1")
    directory = _write_run(tmp_path / "store", gold, retrained)
    record = {"metric": "span_f1", "test": evaluate(gold, recorded, "span_f1")["f1"], "run_directory": str(directory), "evidence": kept}
    assert test_evidence(record) == kept != evidence_of(directory / "predictions", "span_f1")
    assert test_evidence({**record, "evidence": None}) is None  # predictions of another run are not this record's
    matching = {**record, "test": evaluate(gold, retrained, "span_f1")["f1"], "evidence": None}
    assert test_evidence(matching) == evidence_of(directory / "predictions", "span_f1")  # a record from before evidence
    assert test_evidence({**matching, "evidence": kept}) == kept  # its own evidence first, whatever the folder holds


def test_evidence_gives_the_p_values_of_the_predictions_it_was_made_from(tmp_path):
    """Span F1 counts and correlation scores survive encoding exactly: the test on the evidence is
    the test on the predictions files."""
    import numpy as np

    from seqtransfer.experiments.evidence import decode_array, evidence_of
    from seqtransfer.experiments.significance import paired_randomization_correlation, paired_randomization_counts

    generator = random.Random(0)
    gold = [[generator.choice(["B-PER", "I-PER", "O", "B-LOC"]) for _ in range(generator.randint(1, 9))] for _ in range(60)]
    noisy = [[[tag if generator.random() < 0.8 else "O" for tag in tags] for tags in gold] for _ in range(2)]
    runs = [_write_run(tmp_path / f"run{index}", gold, predicted) for index, predicted in enumerate(noisy)]
    evidence = [evidence_of(run / "predictions", "span_f1") for run in runs]
    assert evidence[0]["gold"] == evidence[1]["gold"] and evidence[0]["dtype"] == "uint16"
    expected = paired_randomization_test(gold, noisy[0], noisy[1], "span_f1", trials=300)
    assert paired_randomization_counts(decode_array(evidence[0]), decode_array(evidence[1]), "span_f1", trials=300) == expected
    scores = np.round(np.random.default_rng(0).uniform(0, 5, (2, 40)), 4)
    for index in range(2):
        (runs[index] / "predictions" / "test.tsv").write_text("".join(f"{g:g}\t{p:.4f}\ttext\n" for g, p in zip(scores[0], scores[index] + scores[0] / 2)), encoding="utf-8")
    first, second = (decode_array(evidence_of(run / "predictions", "correlation")) for run in runs)
    assert paired_randomization_correlation(first[:, 0], first[:, 1], second[:, 1], trials=300) == paired_randomization_correlation(
        scores[0], np.round(scores[0] + scores[0] / 2, 4), np.round(scores[1] + scores[0] / 2, 4), trials=300
    )


def _spec(methods, targets, pairs=()):
    paper = {"Scratch": {"TPoS": 86.82, "ArK": 91.10}, "Tuned": {"TPoS": 89.57, "ArK": 92.09}}
    return ReportSpec("table4", "PretRand Table 4", methods, targets, "Scratch", paper, pairs, "PretRand paper, Table 4", trials=200)


def test_render_markdown_and_csv_with_a_missing_cell(tmp_path):
    gold = [["NN", "VB", "DT"]] * 40
    wrong = [["NN", "NN", "NN"]] * 40
    records = [
        _record("Scratch", "TPoS", 1, 100 / 3, _write_run(tmp_path / "a", gold, wrong)),
        _record("Tuned", "TPoS", 1, 100.0, _write_run(tmp_path / "b", gold, gold)),
        _record("Tuned", "TPoS", 2, 98.0, tmp_path / "c"),
        _record("Scratch", "ArK", 1, 90.0, tmp_path / "d"),
    ]
    spec = _spec(["Scratch", "Tuned"], ["TPoS", "ArK"], [("Tuned", "Scratch")])
    markdown = render_markdown(spec, records)
    for name in ["Scratch", "Tuned", "TPoS (acc.)", "ArK (acc.)", "PretRand paper, Table 4"]:
        assert name in markdown
    tuned_row = next(line for line in markdown.splitlines() if line.startswith("| Tuned |"))
    assert "99.00 ± 1.41 (2)" in tuned_row and "| – |" in tuned_row and "1.03×" in tuned_row
    assert "89.57 (+9.43)" in markdown and "| +16.0 (+82.5)† |" in markdown  # our NRG over one target, the paper's over two
    significance = next(line for line in markdown.splitlines() if line.startswith("| TPoS | Tuned | Scratch |"))
    assert significance.endswith("| 0.0050 | yes |")
    assert "| ArK | Tuned | Scratch | – |" in markdown
    assert "| Tuned − Scratch | +65.67* | – |" in markdown  # 99.00 − 33.33 on TPoS (p = 0.005 at seed 1); ArK has no Tuned run
    rows = render_csv(spec, records).splitlines()
    assert rows[0] == "method,target,metric,split,mean,std,n,paper,delta" and len(rows) == 5
    assert rows[4] == "Tuned,ArK,accuracy,test,,,0,92.09,"
    dev_rows = render_csv(dataclasses.replace(spec, split="dev"), records).splitlines()  # a paper that reports dev: our dev means beside it
    tuned_tpos = next(row for row in dev_rows if row.startswith("Tuned,TPoS,"))
    assert tuned_tpos.split(",")[3:5] == ["dev", f"{statistics.fmean(float(record['dev']) for record in records if record['method'] == 'Tuned' and record['target'] == 'TPoS'):.4f}"]


def test_report_spec_from_an_experiment_file_spec():
    experiment = ExperimentSpec(
        name="table4",
        title="PretRand paper, Table 4",
        command="seqtransfer experiment run ...",
        targets={"TPoS": TargetSpec("tpos"), "ArK": TargetSpec("ark")},
        methods={"Scratch": MethodSpec("scratch"), "Tuned": MethodSpec("finetune")},
        significance=[["Tuned", "Scratch"]],
        paper={"Tuned": {"TPoS": 89.57}},
    )
    spec = report_spec(experiment, trials=100)
    assert (spec.methods, spec.targets, spec.reference_method) == (["Scratch", "Tuned"], ["TPoS", "ArK"], "Scratch")
    assert spec.significance_pairs == [("Tuned", "Scratch")] and spec.trials == 100
    assert "| Tuned | – | – |" in render_markdown(spec, [])
    experiment.methods["Tuned"] = MethodSpec("finetune", targets=["ArK"])  # a method limited to some targets: blank elsewhere, no test there
    markdown = render_markdown(report_spec(experiment, trials=100), [])
    assert "| Tuned |  | – |" in markdown and "| Tuned − Scratch |  | – |" in markdown
    assert "| ArK | Tuned | Scratch |" in markdown and "| TPoS | Tuned | Scratch |" not in markdown


def test_notes_open_the_report_as_a_paragraph_or_as_a_list(tmp_path):
    from seqtransfer.errors import SeqTransferError
    from seqtransfer.experiments.spec import load_experiment

    head = "name: table4\ntitle: PretRand paper, Table 4\ncommand: seqtransfer experiment run x.yaml\ntargets: {TPoS: {dataset: tpos}}\nmethods: {Scratch: {scheme: scratch}}\n"
    path = tmp_path / "table4.yaml"
    path.write_text(head + "notes:\n  - Fine-tuning beats scratch on TPoS (89.57 vs 86.82).\n  - 'Ensembles: not run.'\n", encoding="utf-8")
    lines = render_markdown(report_spec(load_experiment(path), trials=10), []).splitlines()
    start = lines.index("**What reproduces and what does not.**")
    assert lines[start + 1 : start + 5] == ["", "- Fine-tuning beats scratch on TPoS (89.57 vs 86.82).", "- Ensembles: not run.", ""]
    path.write_text(head + "notes: One paragraph, as before.\n", encoding="utf-8")
    assert "**What reproduces and what does not.** One paragraph, as before." in render_markdown(report_spec(load_experiment(path), trials=10), [])
    path.write_text(head + "notes: [{a: 1}]\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="list of strings"):
        load_experiment(path)


def test_notes_only_replaces_a_pages_opening_notes_and_keeps_its_tables(tmp_path, capsys):
    from seqtransfer.cli import main

    head = "name: table4\ntitle: PretRand paper, Table 4\ncommand: seqtransfer experiment run x.yaml\ntargets: {TPoS: {dataset: tpos}}\nmethods: {Scratch: {scheme: scratch}}\n"
    experiment = tmp_path / "table4.yaml"
    experiment.write_text(head + "notes: [Old finding.]\n", encoding="utf-8")
    page = tmp_path / "table4.md"
    kept = "## Our results (test)\n\n| Method | TPoS |\n| Scratch | 86.82* (a p-value only the runs could give) |\n"
    page.write_text(f"# PretRand paper, Table 4\n\nExperiment `table4`, 3 finished runs.\n\n**What reproduces and what does not.**\n\n- Old finding.\n\n{kept}", encoding="utf-8")
    experiment.write_text(head + "notes: [New finding (89.57 vs 86.82)., Second line.]\n", encoding="utf-8")
    assert main(["report", str(experiment), "--notes-only", "--output", str(page), "--results", str(tmp_path / "none")]) == 0
    text = page.read_text(encoding="utf-8")
    assert "- New finding (89.57 vs 86.82).\n- Second line.\n" in text and "Old finding" not in text and text.endswith(kept)
    assert text.count("**What reproduces and what does not.**") == 1 and text.startswith("# PretRand paper, Table 4\n\nExperiment `table4`, 3 finished runs.\n\n**")
    two_splits = tmp_path / "two.md"  # a page rendered before its dev split dropped the notes: they go from there
    block = "Experiment `table4`, 3 finished runs.\n\n**What reproduces and what does not.**\n\n- Old finding.\n\n"
    two_splits.write_text(f"# T\n\n{block}{kept}\n# T, dev split\n\n{block}## Our results (dev)\n", encoding="utf-8")
    assert main(["report", str(experiment), "--notes-only", "--output", str(two_splits)]) == 0
    text = two_splits.read_text(encoding="utf-8")
    assert "Old finding" not in text and text.count("- Second line.") == 1 and kept in text
    assert text.endswith("# T, dev split\n\nExperiment `table4`, 3 finished runs.\n\n## Our results (dev)\n")  # the notes read the test split
    capsys.readouterr()
    for name, broken in (("other.md", "# Another page\n"), ("cut.md", f"# T\n\n{block}")):  # not its report; a page cut before its tables
        (tmp_path / name).write_text(broken, encoding="utf-8")
        assert main(["report", str(experiment), "--notes-only", "--output", str(tmp_path / name)]) != 0
        assert ("not experiment table4's report" if name == "other.md" else "no table heading") in capsys.readouterr().err
        assert (tmp_path / name).read_text(encoding="utf-8") == broken


def test_randomization_of_pearson_scores_tells_a_better_regressor_from_noise():
    import numpy as np

    from seqtransfer.experiments.significance import paired_randomization_correlation

    generator = np.random.default_rng(0)
    gold = generator.normal(size=300)
    good, noisy = gold + 0.3 * generator.normal(size=300), gold + 1.5 * generator.normal(size=300)
    assert paired_randomization_correlation(gold, good, good, trials=200) == 1.0  # the same predictions: every shuffle ties
    assert paired_randomization_correlation(gold, good, noisy, trials=200) < 0.01
    other = gold + 0.3 * generator.normal(size=300)  # as good, other noise
    assert paired_randomization_correlation(gold, good, other, trials=200) > 0.05


def test_runs_of_two_instances_of_a_source_are_noted_and_their_test_marked(tmp_path):
    gold = [["NN", "VB", "DT"]] * 40
    wrong = [["NN", "NN", "NN"]] * 40
    records = [
        {**_record("Scratch", "TPoS", 1, 100 / 3, _write_run(tmp_path / "a", gold, wrong)), "source_weights": "aaaa"},
        {**_record("Tuned", "TPoS", 1, 100.0, _write_run(tmp_path / "b", gold, gold)), "source_weights": "bbbb"},
        {**_record("Scratch", "ArK", 1, 100 / 3, _write_run(tmp_path / "c", gold, wrong)), "source_weights": "cccc"},
        {**_record("Tuned", "ArK", 1, 100.0, _write_run(tmp_path / "d", gold, gold)), "source_weights": "cccc"},
    ]
    markdown = render_markdown(_spec(["Scratch", "Tuned"], ["TPoS", "ArK"], [("Tuned", "Scratch")]), records)
    assert "read more than one instance of their source (the source was trained again, to other weights): TPoS (2)." in markdown
    assert next(line for line in markdown.splitlines() if line.startswith("| TPoS | Tuned | Scratch |")).endswith("| 0.0050 (two sources) | yes |")
    assert next(line for line in markdown.splitlines() if line.startswith("| ArK | Tuned | Scratch |")).endswith("| 0.0050 | yes |")
    for record in records:
        record["source_weights"] = "cccc"
    assert "instance of their source" not in render_markdown(_spec(["Scratch", "Tuned"], ["TPoS", "ArK"], [("Tuned", "Scratch")]), records)
    # two methods that read two named sources by design (experiments/two_sources.yaml) are not two instances of one
    records[0]["source_weights"], records[1]["source_weights"] = "aaaa", "bbbb"
    by_design = dataclasses.replace(_spec(["Scratch", "Tuned"], ["TPoS", "ArK"], [("Tuned", "Scratch")]), method_sources={("Scratch", "TPoS"): "ewt", ("Tuned", "TPoS"): "ptb"})
    markdown = render_markdown(by_design, records)
    assert "instance of their source" not in markdown
    assert next(line for line in markdown.splitlines() if line.startswith("| TPoS | Tuned | Scratch |")).endswith("| 0.0050 | yes |")
    records.append({**records[1], "seed": 2, "source_weights": "dddd"})  # the ptb source trained again: its two instances are noted
    assert "to other weights): TPoS, source ptb (2)." in render_markdown(by_design, records)


def test_a_pair_tested_over_every_seed_it_shares_and_over_the_seeds_together(tmp_path):
    """Each seed's p, and one test of the mean difference: three sentences in 60 worse at each seed
    are not significant at any seed alone (p = 2 / 2^3) but are over three seeds together (2 / 2^9)."""
    gold = [["NN", "VB", "DT"]] * 60
    worse = [["NN", "VB", "DT"]] * 57 + [["NN", "NN", "DT"]] * 3
    records = []
    for seed in (1, 2, 3):
        records += [
            _record("Scratch", "TPoS", seed, 100 * 177 / 180, _write_run(tmp_path / f"a{seed}", gold, worse)),
            _record("Tuned", "TPoS", seed, 100.0, _write_run(tmp_path / f"b{seed}", gold, gold)),
        ]
    records.append(_record("Tuned", "ArK", 1, 100.0, _write_run(tmp_path / "c", gold, gold)))  # one seed only: no row
    records.append(_record("Scratch", "ArK", 1, 100 * 177 / 180, _write_run(tmp_path / "d", gold, worse)))
    markdown = render_markdown(_spec(["Scratch", "Tuned"], ["TPoS", "ArK"], [("Tuned", "Scratch")]), records)
    assert "### Over the seeds" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| TPoS | Tuned | Scratch | 1, 2, 3 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[4] == "+1.67" and all(0.2 < float(p) < 0.3 for p in cells[5].split(", "))
    assert float(cells[6]) < 0.01 and not any(line.startswith("| ArK | Tuned | Scratch | 1, ") for line in markdown.splitlines())
    records[0]["source_weights"], records[3]["source_weights"] = "aaaa", "bbbb"  # seed 2's run read another instance of the source
    row = next(line for line in render_markdown(_spec(["Scratch", "Tuned"], ["TPoS", "ArK"], [("Tuned", "Scratch")]), records).splitlines() if line.startswith("| TPoS | Tuned | Scratch | 1, 2, 3 |"))
    assert "(two sources) | yes |" in row


def test_each_target_lists_its_methods_best_first_with_their_test_and_cost(tmp_path):
    gold = [["NN", "VB", "DT"]] * 60
    worse = [["NN", "VB", "DT"]] * 57 + [["NN", "NN", "DT"]] * 3
    records = []
    for seed in (1, 2, 3):  # Tuned beats Scratch at three seeds; Adapted is tested against Tuned alone, at one seed
        records += [
            _record("Scratch", "TPoS", seed, 100 * 177 / 180, _write_run(tmp_path / f"a{seed}", gold, worse)),
            {**_record("Tuned", "TPoS", seed, 100.0, _write_run(tmp_path / f"b{seed}", gold, gold)), "trainable_parameters": 500, "peak_rss_megabytes": 1200.0},
        ]
    # a source model applied as it is trains nothing: 0 trainable parameters, shown as 0
    records.append({**_record("Adapted", "TPoS", 1, 100 * 177 / 180, _write_run(tmp_path / "c", gold, worse)), "trainable_parameters": 0})
    spec = _spec(["Scratch", "Tuned", "Adapted"], ["TPoS", "ArK"], [("Tuned", "Scratch"), ("Adapted", "Tuned")])
    section = render_markdown(spec, records).split("## By target", 1)[1]
    assert "### ArK" not in section  # no finished run
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ") and "Method" not in line]
    assert [row[0] for row in rows] == ["Tuned", "Scratch", "Adapted"]  # best mean first (ties keep the spec's order)
    tuned, scratch, adapted = rows
    assert tuned[1:3] == ["100.00 ± 0.00 (3)", "+1.67"] and float(tuned[3]) < 0.01 and tuned[4:] == ["500", "2m 00s", "1,200"]  # p over the three seeds; its cost records' means
    assert scratch[2:4] == ["", ""] and scratch[4] == "–"  # the reference; runs without cost records
    assert adapted[2] == "−1.67 vs Tuned" and adapted[3].endswith("(seed 1)") and 0.2 < float(adapted[3].split()[0]) < 0.3 and adapted[4] == "0"
    differences = render_markdown(spec, records).split("## Differences between methods", 1)[1]
    assert "| Tuned − Scratch | +1.67* | – |" in differences  # p < 0.05 over the three seeds
    assert "| Adapted − Tuned | −1.67 | – |" in differences  # p > 0.2 at its one seed


def test_the_pooled_test_of_several_seeds():
    import numpy as np

    from seqtransfer.experiments.significance import paired_randomization_correlation_seeds, paired_randomization_seeds

    generator = np.random.default_rng(0)
    right = np.stack([generator.integers(8, 11, 100), np.full(100, 10)], axis=1).astype(np.float64)
    slightly_worse = right.copy()
    slightly_worse[::10, 0] -= 1  # one token in 100 per seed
    assert paired_randomization_seeds([(right, right)] * 3, "accuracy", trials=200) == 1.0
    one = paired_randomization_seeds([(right, slightly_worse)], "accuracy", trials=2000)
    five = paired_randomization_seeds([(right, slightly_worse)] * 5, "accuracy", trials=2000)
    assert five < one and five < 0.05
    gold = generator.normal(size=200)
    good, noisy = gold + 0.3 * generator.normal(size=200), gold + 1.5 * generator.normal(size=200)
    assert paired_randomization_correlation_seeds([(gold, good, good)] * 2, trials=200) == 1.0
    assert paired_randomization_correlation_seeds([(gold, good, noisy)] * 2, trials=200) < 0.01


def test_positive_class_f1_counts_give_the_metrics_score():
    """MRPC's F1 of class "1" from per-sentence counts (its evidence) is the metric's own score, so its
    paired test compares the score the table shows (chunk counts found no chunks in "0"/"1" labels)."""
    generator = random.Random(3)
    gold = [[generator.choice("01")] for _ in range(80)]
    predicted = [[label if generator.random() < 0.7 else generator.choice("01")] for (label,) in gold]
    expected = evaluate(gold, predicted, "positive_f1")["f1"]
    assert 0 < expected < 100
    assert abs(float(score_from_counts(sentence_counts(gold, predicted, "positive_f1").sum(axis=0), "positive_f1")) - expected) < 1e-9


def test_spearman_runs_are_tested_on_their_scores_by_ranks(tmp_path):
    """A run scored by Spearman's rho (``data.metric=spearman``) keeps the evidence of its scores
    (``test.tsv``), and its test compares ranks: a monotone transform of a regressor's scores is the
    same regressor to rho (every shuffle ties), not to Pearson's r."""
    import numpy as np

    from seqtransfer.experiments.evidence import decode_array, evidence_of
    from seqtransfer.experiments.report_significance import pair_p_value, scores_as_recorded

    generator = np.random.default_rng(1)
    gold = np.round(generator.uniform(0, 5, 80), 2)
    predicted = np.round(gold + generator.normal(size=80), 4)
    stretched = np.round(np.exp(predicted), 4)
    evidence = []
    for name, scores in (("plain", predicted), ("stretched", stretched)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "test.tsv").write_text("".join(f"{g:g}\t{p:.4f}\ttext\n" for g, p in zip(gold, scores)), encoding="utf-8")
        evidence.append(evidence_of(tmp_path / name, "spearman"))
    assert evidence[0] is not None and evidence[0]["gold"] == evidence[1]["gold"]
    pair = [(decode_array(evidence[0]), decode_array(evidence[1]))]
    assert pair_p_value("spearman", pair, trials=200) == 1.0
    assert pair_p_value("correlation", pair, trials=200) < 1.0
    rho = evaluate([[value] for value in gold], [[value] for value in predicted], "spearman")["spearman"]
    assert scores_as_recorded(evidence[0], {"metric": "spearman", "test": rho})
    assert not scores_as_recorded(evidence[0], {"metric": "spearman", "test": rho - 0.5})  # another run's score
    assert not scores_as_recorded(evidence[0], {"metric": "correlation", "test": rho})  # Pearson's r differs


def test_sections_replaces_only_the_named_sections_of_a_page(tmp_path, capsys):
    """The paper's table re-rendered from the records (it needs no predictions) while the page's other
    sections, significance tests and all, stay as they were."""
    from seqtransfer.cli import main

    head = "name: table4\ntitle: T\ntargets: {TPoS: {dataset: tpos}}\nmethods: {Scratch: {scheme: scratch}}\nreference: Scratch\n"
    experiment = tmp_path / "table4.yaml"
    experiment.write_text(head + "paper: {Scratch: {TPoS: 86.00}}\n", encoding="utf-8")
    records = tmp_path / "table4.records.jsonl"
    records.write_text(json.dumps(_record("Scratch", "TPoS", 1, 87.50, tmp_path / "gone")) + "\n", encoding="utf-8")
    kept = "## Significance\n\n| a p-value only the runs could give | 0.0012 |\n"
    page = tmp_path / "table4.md"
    page.write_text(f"# T\n\nExperiment `table4`, 1 finished run.\n\n## Paper (Δ = ours − paper)\n\n| old | 99.99 |\n\n{kept}", encoding="utf-8")
    arguments = ["report", str(experiment), "--records", str(records), "--sections", "Paper", "--output", str(page), "--results", str(tmp_path / "none")]
    assert main(arguments) == 0
    text = page.read_text(encoding="utf-8")
    assert "| Scratch | 86.00 (+1.50) |" in text and "99.99" not in text and text.endswith(kept) and text.count("## Paper") == 1
    assert "Scratch,TPoS,accuracy,test,87.5" in page.with_suffix(".csv").read_text(encoding="utf-8")  # the CSV needs no predictions either
    other = tmp_path / "other.md"
    other.write_text("# Another experiment\n\n## Paper (Δ = ours − paper)\n\n| old |\n", encoding="utf-8")
    assert main([*arguments[:-4], "--sections", "Paper", "--output", str(other)]) == 2
    assert "the page is titled '# Another experiment', the render '# T'" in capsys.readouterr().err and "| old |" in other.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main([*arguments[:-4], "--sections", "Nothing", "--output", str(page)]) == 2
    assert "no matching '## Nothing' sections (0 on the page, 0 in the render)" in capsys.readouterr().err


def test_our_gains_mark_a_method_whose_reference_lacks_some_of_its_targets():
    """Our aNRG/mNRG average over the targets the reference shares: fewer than the table's get a †."""
    records = [_record("Scratch", "TPoS", 1, 80.0), _record("Tuned", "TPoS", 1, 90.0), _record("Tuned", "ArK", 1, 95.0)]
    tuned_row = next(line for line in render_markdown(_spec(["Scratch", "Tuned"], ["TPoS", "ArK"]), records).splitlines() if line.startswith("| Tuned |"))
    assert "| +50.0† | +50.0† |" in tuned_row  # (90 − 80) / (100 − 80) on TPoS alone: Scratch has no ArK


def test_the_csv_compares_the_papers_numbers_by_their_metric():
    """A target whose published numbers are of another metric (paper_metric): the CSV's mean, std and delta by it."""
    records = [{**_record("Tuned", "TPoS", seed, 90.0 + seed), "other_scores": {"span_f1": {"test": 80.0 + seed}}} for seed in (1, 2)]
    spec = dataclasses.replace(_spec(["Scratch", "Tuned"], ["TPoS"]), paper_metrics={"TPoS": "span_f1"})
    rows = render_csv(spec, records).splitlines()
    assert "Tuned,TPoS,span_f1,test,81.5000,0.7071,2,89.57,-8.0700" in rows and "Scratch,TPoS,span_f1,test,,,0,86.82," in rows


def test_curves_and_transfer_by_size_show_the_sample_std_over_seeds():
    from seqtransfer.analysis.curves import CurvePoint, mean_curves

    points = [CurvePoint("SFT", 100, score, "", "tweebank", seed) for seed, score in ((1, 80.0), (2, 82.0), (3, 87.0))]
    sizes, means, stds = mean_curves(points)["SFT"]
    assert sizes.tolist() == [100] and means[0] == pytest.approx(83.0) and stds[0] == pytest.approx(statistics.stdev([80.0, 82.0, 87.0]))
    assert mean_curves(points[:1])["SFT"][2][0] == 0.0


def test_a_targets_difference_is_the_mean_over_every_seed_both_have_though_one_seed_was_tested(tmp_path):
    """Test predictions at seed 1 only (older records): the p is that seed's, the difference the
    mean over the three seeds both methods ran, as the differences table has it."""
    gold = [["NN", "VB", "DT"]] * 60
    worse = [["NN", "VB", "DT"]] * 57 + [["NN", "NN", "DT"]] * 3
    records = [_record("Scratch", "TPoS", 1, 100 * 177 / 180, _write_run(tmp_path / "a", gold, worse)), _record("Tuned", "TPoS", 1, 100.0, _write_run(tmp_path / "b", gold, gold))]
    for seed, scratch in ((2, 94.0), (3, 97.0)):  # no test predictions kept
        records += [_record("Scratch", "TPoS", seed, scratch), _record("Tuned", "TPoS", seed, 100.0)]
    records.append(_record("Scratch", "TPoS", 4, 80.0))  # Scratch alone: in Scratch's mean, in no difference of a pair
    spec = _spec(["Scratch", "Tuned"], ["TPoS"], [("Tuned", "Scratch")])
    markdown = render_markdown(spec, records)
    tuned = next(line for line in markdown.split("## By target", 1)[1].splitlines() if line.startswith("| Tuned |"))
    cells = [cell.strip() for cell in tuned.strip("|").split("|")]
    assert cells[2] == "+3.56" and cells[3].endswith("(seed 1)")  # (1.67 + 6 + 3) / 3, not seed 1's +1.67
    assert "| Tuned − Scratch | +7.67" in markdown.split("## Differences between methods", 1)[1]  # means over each method's own seeds


def test_welchs_test_over_the_seeds_reads_the_scores_alone_and_each_methods_own_seeds():
    """Records without test predictions (kept before records carried them) are tested too: Welch's
    t-test on each method's per-seed scores, as scipy computes it; fewer than two seeds a side, no row."""
    from scipy import stats

    scratch, tuned = [90.0, 91.0, 92.5, 89.0], [93.0, 93.4, 94.1]
    records = [_record("Scratch", "TPoS", seed, score) for seed, score in enumerate(scratch, 1)] + [_record("Tuned", "TPoS", seed, score) for seed, score in enumerate(tuned, 1)]
    records += [_record("Scratch", "ArK", 1, 90.0), _record("Tuned", "ArK", 1, 91.0), _record("Tuned", "ArK", 2, 92.0)]
    markdown = render_markdown(_spec(["Scratch", "Tuned"], ["TPoS", "ArK"], [("Tuned", "Scratch")]), records)
    section = markdown.split("### Across seeds (Welch's t-test)", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith("| TPoS |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    expected = stats.ttest_ind(tuned, scratch, equal_var=False).pvalue
    assert cells[3:] == ["93.50 ± 0.56 (3)", "90.62 ± 1.49 (4)", "+2.88", f"{expected:.4f}", "yes" if expected < 0.05 else "no"]
    assert "| ArK |" not in section.split("\n## ", 1)[0]  # Scratch has one seed on ArK
    apart = [_record(method, "TChunk", seed, score + seed / 100) for seed in (1, 2, 3) for method, score in (("Scratch", 80.0), ("Tuned", 95.0))]
    markdown = render_markdown(_spec(["Scratch", "Tuned"], ["TChunk"], [("Tuned", "Scratch")]), apart)
    assert "| +15.00 | < 0.0001 | yes |" in markdown.split("### Across seeds (Welch's t-test)", 1)[1]  # not "0.0000"
    broken = [*apart, {**_record("Scratch", "TChunk", 4, 80.0), "test": None}]  # a run without a test score is left out
    assert "| 80.02 ± 0.01 (3) | +15.00 | < 0.0001 | yes |" in render_markdown(_spec(["Scratch", "Tuned"], ["TChunk"], [("Tuned", "Scratch")]), broken)


def test_the_runs_count_says_how_many_are_an_ensembles_extra_members():
    records = [_record("Scratch", "TPoS", 1, 90.0), _record("Scratch+1000", "TPoS", 1001, 91.0)]  # a member of "Ensemble (2 rand)"
    counted = "Experiment `table4`, 2 finished runs (1 of them a method's runs at other seeds that an ensemble or a student reads, in no table)."
    assert counted in render_markdown(_spec(["Scratch"], ["TPoS"]), records)
    assert "Experiment `table4`, 1 finished run.\n" in render_markdown(_spec(["Scratch"], ["TPoS"]), records[:1])
    dropped = [*records[:1], _record("Removed", "TPoS", 1, 91.0)]  # a method the file no longer has is no other seeds' run
    assert "Experiment `table4`, 2 finished runs.\n" in render_markdown(_spec(["Scratch"], ["TPoS"]), dropped)
