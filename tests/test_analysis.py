"""Analysis maths and outputs on hand-built data: PT / NT / G, mistake types, charge, top-k, figures, HTML."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import FIXTURES

from seqtransfer.analysis import figures
from seqtransfer.analysis.curves import CurvePoint, curve_point, curve_points
from seqtransfer.analysis.html import ReportContent, render_report
from seqtransfer.analysis.mistakes import WordLookup, mistake_type
from seqtransfer.analysis.negative_transfer import compare_predictions, compare_runs
from seqtransfer.analysis.neurons import charges, correlation_matrix, top_words
from seqtransfer.analysis.predictions import read_predictions
from seqtransfer.cli import run
from seqtransfer.errors import SeqTransferError

LOOKUP = WordLookup(frozenset(["award", "'s", "wont", "wth", "the", "i", "love", "nyc", "today"]), lowercase=True, twitter=False, path="test")


def hand_built():
    return read_predictions(FIXTURES / "analysis_reference.conll"), read_predictions(FIXTURES / "analysis_transferred.conll")


def test_positive_and_negative_transfer_by_hand():
    # 10 tokens; corrected: I, NYC (2); falsified: Award, 's, wont, wth, awsome, today (6).
    overall, per_class, falsified = compare_predictions(*hand_built(), LOOKUP)
    assert (overall.tokens, overall.corrected, overall.falsified) == (10, 2, 6)
    assert overall.positive_transfer == pytest.approx(20.0) and overall.negative_transfer == pytest.approx(60.0)
    assert overall.gain == pytest.approx(-40.0)  # = accuracy 40 % (transferred) - 80 % (reference)
    assert overall.percent(overall.correct_reference) == pytest.approx(80.0) and overall.percent(overall.correct_transferred) == pytest.approx(40.0)
    classes = {counts.label: counts for counts in per_class}
    assert (classes["NN"].tokens, classes["NN"].falsified, classes["NN"].negative_transfer) == (2, 2, 100.0)
    assert classes["NNP"].positive_transfer == 100.0 and classes["PRP"].gain == 100.0
    assert classes["DT"].gain == 0.0 and sum(counts.tokens for counts in per_class) == 10
    assert [token.token for token in falsified] == ["Award", "'s", "wont", "wth", "awsome", "today"]
    assert (falsified[5].left, falsified[5].right, falsified[5].sentence, falsified[5].position) == ("I love NYC", "", 1, 3)


def test_falsified_tokens_grouped_by_mistake_type():
    _, _, falsified = compare_predictions(*hand_built(), LOOKUP)
    assert {token.token: token.mistake for token in falsified} == {
        "Award": "capitalised",
        "'s": "contraction",
        "wont": "contraction",
        "wth": "abbreviation",
        "awsome": "out_of_vocabulary",
        "today": "other",
    }


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("I'M", "contraction"),
        ("can’t", "contraction"),
        ("id", "contraction"),
        ("its", "contraction"),
        ("IMO", "abbreviation"),
        ("UN", "abbreviation"),
        ("2pac", "abbreviation"),
        ("nvr", "abbreviation"),
        ("&", "abbreviation"),
        ("Father", "capitalised"),
        ("Hey", "capitalised"),
        ("ROCKSTAR", "capitalised"),
        ("amazin", "out_of_vocabulary"),
        ("#trump", "other"),
        ("@bob", "other"),
        ("the", "other"),
        ("I", "other"),
    ],
)
def test_mistake_type_rules(token, expected):
    assert mistake_type(token, LOOKUP) == expected


def test_different_data_is_a_clear_error(tmp_path):
    changed = tmp_path / "changed.conll"
    changed.write_text((FIXTURES / "analysis_transferred.conll").read_text().replace("today NN JJ", "tomorrow NN JJ"))
    with pytest.raises(SeqTransferError, match="sentence 2 has different tokens"):
        compare_predictions(read_predictions(FIXTURES / "analysis_reference.conll"), read_predictions(changed))
    regold = tmp_path / "regold.conll"
    regold.write_text((FIXTURES / "analysis_transferred.conll").read_text().replace("today NN JJ", "today JJ JJ"))
    with pytest.raises(SeqTransferError, match="different gold labels"):
        compare_predictions(read_predictions(FIXTURES / "analysis_reference.conll"), read_predictions(regold))
    with pytest.raises(SeqTransferError, match="prediction file not found"):
        compare_runs(tmp_path, tmp_path)


def fake_run(directory: Path, predictions: Path, scheme: str, source: Path | None = None) -> Path:
    """A run directory with just what the transfer analysis reads."""
    (directory / "predictions").mkdir(parents=True)
    shutil.copy(predictions, directory / "predictions" / "dev.conll")
    (directory / "metrics.json").write_text(json.dumps({"dataset": "tpos", "task": "pos", "metric": "accuracy", "scheme": scheme, "dev": {"accuracy": 50.0}}))
    (directory / "config.yaml").write_text(yaml.safe_dump({"transfer": {"source": str(source) if source else None}, "data": {"max_train_sentences": 100}}))
    words = sorted(LOOKUP.words) if source is None else ["<pad>", "<unk>"]
    (directory / "vocabulary.json").write_text(json.dumps({"words": words, "characters": [], "labels": [], "lowercase": True, "twitter": False}))
    return directory


def test_transfer_command_writes_json_tsv_and_figures(tmp_path):
    source = fake_run(tmp_path / "source", FIXTURES / "analysis_reference.conll", "scratch")
    reference = fake_run(tmp_path / "scratch", FIXTURES / "analysis_reference.conll", "scratch")
    transferred = fake_run(tmp_path / "finetune", FIXTURES / "analysis_transferred.conll", "finetune", source=source)
    comparison = run(["analyze", "transfer", str(reference), str(transferred), "--output", str(tmp_path / "out")])
    assert comparison.vocabulary == str(source / "vocabulary.json")  # the OOV rule reads the source's vocabulary
    saved = json.loads((tmp_path / "out" / "transfer.json").read_text())
    assert (saved["overall"]["pt"], saved["overall"]["nt"], saved["overall"]["gain"]) == (20.0, 60.0, -40.0)
    assert saved["mistake_counts"] == {"capitalised": 1, "contraction": 2, "abbreviation": 1, "out_of_vocabulary": 1, "other": 1}
    assert len((tmp_path / "out" / "falsified.tsv").read_text().splitlines()) == 7
    for stem in ("pt_nt", "class_improvement"):
        assert (tmp_path / "out" / f"{stem}.png").stat().st_size > 1000 and (tmp_path / "out" / f"{stem}.svg").is_file()


def test_pearson_matrix_matches_numpy_and_charge_is_its_diagonal():
    generator = np.random.default_rng(0)
    before = generator.standard_normal((500, 6))
    after = 0.8 * before + 0.3 * generator.standard_normal((500, 6))
    correlation = correlation_matrix(after, before)
    expected = np.corrcoef(after.T, before.T)[:6, 6:]  # rows: after units, columns: before units
    np.testing.assert_allclose(correlation, expected, atol=1e-10)
    np.testing.assert_allclose(charges(correlation), np.diag(expected), atol=1e-10)
    assert not np.allclose(correlation, correlation.T)  # asymmetric in general
    constant = correlation_matrix(np.ones((10, 2)), generator.standard_normal((10, 3)))
    assert np.all(constant == 0)  # no NaN in the matrix for a unit that never changes
    # a unit constant after (or before) fine-tuning has no charge: NaN, left out of the summary and of the units drawn
    after[:, 2] = 1.5
    dead = charges(correlation_matrix(after, before))
    assert np.isnan(dead[2]) and not np.isnan(dead[[0, 1, 3, 4, 5]]).any()
    from types import SimpleNamespace

    from seqtransfer.analysis.neurons import NeuronAnalysis

    recording = SimpleNamespace(name="epoch 0")
    analysis = NeuronAnalysis("run", recording, recording, correlation_matrix(after, before), 500)
    summary = analysis.summary()
    assert summary["constant_units"] == 1 and summary["mean_charge"] == pytest.approx(np.nanmean(dead)) and summary["min_charge"] == pytest.approx(np.nanmin(dead))
    assert 2 not in analysis.selected_units(6) and len(analysis.selected_units(6)) == 5


def test_top_k_words_per_unit_on_a_toy_matrix():
    words = ["a", "b", "c", "a", "d"]
    activations = np.array([[0.9, -0.1], [0.5, -0.8], [-0.7, 0.2], [0.1, 0.95], [0.0, -0.3]], dtype=np.float16)
    top = top_words(activations, words, k=2)
    assert top.positive == [["a", "b"], ["a", "c"]]  # "a" scores its maximum over both occurrences
    assert top.negative == [["c", "d"], ["b", "d"]]
    np.testing.assert_allclose(top.positive_values[1], [0.95, 0.2], atol=1e-3)
    np.testing.assert_allclose(top.negative_values[0], [-0.7, 0.0], atol=1e-3)
    assert top_words(activations, words, k=10).positive[0] == ["a", "b", "d", "c"]  # k larger than the vocabulary


def test_curve_point_reads_metrics_and_config(tmp_path):
    run_directory = fake_run(tmp_path / "run", FIXTURES / "analysis_reference.conll", "pretrand")
    assert curve_point(run_directory) == CurvePoint("pretrand", 100, 50.0, str(run_directory), "tpos", 0)
    (run_directory / "log.txt").write_text("training pretrand on tpos/pos: 80 sentences, 1000 tokens; 5 parameters\n")
    assert curve_point(run_directory).size == 80


def test_curve_reads_an_experiment_records_folder(tmp_path):
    run_directory = fake_run(tmp_path / "run", FIXTURES / "analysis_reference.conll", "pretrand")
    records = tmp_path / "records" / "figure13"
    records.mkdir(parents=True)
    (records / "cell.json").write_text(json.dumps({"method": "PretRand", "run_directory": str(run_directory)}))
    (records / "source-pos.json").write_text(json.dumps({"method": None, "source": "pos", "run_directory": str(tmp_path / "nowhere")}))
    assert curve_points([records]) == [curve_point(run_directory, method="PretRand")]  # named by the grid's method, not the scheme
    assert curve_point(run_directory).method == "pretrand"


def test_curve_keeps_only_the_methods_asked_for_across_records_folders(tmp_path):
    folders = []
    for experiment, methods in (("curve", ["Full", "Full + target LM"]), ("full_data", ["Full", "Freez"])):
        folder = tmp_path / "records" / experiment
        folder.mkdir(parents=True)
        for number, method in enumerate(methods):
            run_directory = fake_run(tmp_path / f"{experiment}-{number}", FIXTURES / "analysis_reference.conll", "scratch")
            (folder / f"{number}.json").write_text(json.dumps({"method": method, "run_directory": str(run_directory)}))
        folders.append(str(folder))
    points = run(["analyze", "curve", *folders, "--method", "Full", "--method", "Full + target LM", "--output", str(tmp_path / "out")])
    assert sorted(point.method for point in points) == ["Full", "Full", "Full + target LM"]  # Freez left out
    assert (tmp_path / "out" / "curve.png").is_file()
    with pytest.raises(SeqTransferError, match="no runs of method 'Last'.*methods: Freez, Full, Full \\+ target LM"):
        run(["analyze", "curve", *folders, "--method", "Last", "--output", str(tmp_path / "none")])


def sample_points() -> list[CurvePoint]:
    return [CurvePoint(method, size, score + bonus, "x") for method, bonus in (("finetune", 0.0), ("pretrand", 1.0)) for size, score in ((100, 80.0), (200, 85.0), (400, 88.0))]


def test_figures_are_written(tmp_path):
    comparisons = [compare_runs(*[fake_run(tmp_path / name, FIXTURES / f"analysis_{kind}.conll", name) for name, kind in (("scratch", "reference"), ("finetune", "transferred"))])]
    drawn = {
        "bars": figures.transfer_bars(comparisons),
        "heatmap": figures.correlation_heatmap(np.eye(8), "toy"),
        "classes": figures.class_improvement(comparisons[0]),
        "curve": figures.learning_curves(sample_points()),
    }
    for name, figure in drawn.items():
        png, svg = figures.save_figure(figure, tmp_path / "figures" / name)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 2000, name
        assert svg.read_text().lstrip().startswith("<?xml"), name
        again = figures.save_figure(figure, tmp_path / "again" / name)  # the same figure, the same bytes: committed figures redraw unchanged
        assert [path.read_bytes() for path in again] == [png.read_bytes(), svg.read_bytes()], name


REMOTE_RESOURCE = re.compile(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//|@import""", re.IGNORECASE)


def test_html_report_is_self_contained(tmp_path):
    reference = fake_run(tmp_path / "scratch", FIXTURES / "analysis_reference.conll", "scratch")
    transferred = fake_run(tmp_path / "finetune", FIXTURES / "analysis_transferred.conll", "finetune")
    page = render_report(ReportContent(comparisons=[compare_runs(reference, transferred)], curve_points=sample_points()))
    assert "http://" not in page and "https://" not in page and not REMOTE_RESOURCE.search(page)
    assert page.count('src="data:image/png;base64,') == 3  # PT/NT bars, class improvement, learning curve
    assert "<mark>awsome</mark>" in page and 'table class="sortable"' in page and "<script>" in page


def test_report_command_needs_something_to_show(tmp_path):
    with pytest.raises(SeqTransferError, match="nothing to report"):
        run(["analyze", "report", "--output", str(tmp_path / "report.html")])


def test_hundreds_of_classes_stay_readable(tmp_path):
    """MSD tag sets: the class figure keeps the 20 best and 20 worst frequent classes; the per-class table is folded."""
    from seqtransfer.analysis.figures import FIGURE_CLASSES, class_improvement
    from seqtransfer.analysis.html import class_table, collapsed
    from seqtransfer.analysis.negative_transfer import TransferComparison
    from seqtransfer.analysis.predictions import Predictions

    labels = [f"T{index:03d}" for index in range(300)]
    gold = [[label for label in labels for _ in range(12)]]
    tokens = [[f"w{position}" for position in range(len(gold[0]))]]
    reference = [[label if position % 3 else "T000" for position, label in enumerate(gold[0])]]
    transferred = [[label if position % 4 else "T000" for position, label in enumerate(gold[0])]]
    overall, per_class, falsified = compare_predictions(Predictions(Path("a"), tokens, gold, reference), Predictions(Path("b"), tokens, gold, transferred))
    comparison = TransferComparison("a", "b", "dev", "many", "scratch", "finetune", overall, per_class, falsified)
    figure = class_improvement(comparison)
    assert len(figure.axes[0].patches) == FIGURE_CLASSES and "40 of 300 classes" in figure.axes[0].get_title()
    folded = collapsed(f"Per gold class ({len(per_class)} classes)", class_table(comparison))
    assert folded.startswith("<details><summary>Per gold class (300 classes)") and folded.count("<tr>") == 301


def test_transfer_by_size_pairs_runs_of_one_seed(tmp_path):
    from seqtransfer.analysis.curves import transfer_by_size, transfer_markdown

    reference = fake_run(tmp_path / "scratch", FIXTURES / "analysis_reference.conll", "scratch")
    transferred = fake_run(tmp_path / "finetune", FIXTURES / "analysis_transferred.conll", "finetune", source=reference)
    points = [
        CurvePoint("scratch", 100, 80.0, str(reference), "tpos", 1),
        CurvePoint("finetune", 100, 40.0, str(transferred), "tpos", 1),
        CurvePoint("finetune", 100, 40.0, str(transferred), "tpos", 2),
    ]  # seed 2 has no scratch partner: left out
    rows = transfer_by_size(points, "scratch")
    assert len(rows) == 1 and rows[0]["seeds"] == 1
    assert (rows[0]["positive_transfer"], rows[0]["negative_transfer"], rows[0]["gain"]) == pytest.approx((20.0, 60.0, -40.0))
    assert "| tpos | 100 | finetune | scratch | 1 | 20.00 ± 0.00 | 60.00 ± 0.00 | -40.00 ± 0.00 |" in transfer_markdown(rows)
    figure = figures.transfer_by_size_figure(rows)
    assert len(figure.axes) == 1 and len(figure.axes[0].lines) == 2
