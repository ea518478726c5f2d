"""Activation recording during a tiny transfer run, then the neuron analysis and the report on it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import FIXTURES, TINY_MODEL
from safetensors import safe_open
from test_transfer import target_config

from seqtransfer.analysis.activations import list_recordings
from seqtransfer.cli import run
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.rundir import load_run
from seqtransfer.training.activations import feature_matrix
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies
from seqtransfer.transfer.schemes import SCHEMES
from seqtransfer.workflows.train import build_target_model, load_source


def transfer_arguments(source, output, method: str = "finetune", epochs: int = 2, *overrides: str) -> list[str]:
    return [
        "transfer",
        "--source",
        str(source),
        "--method",
        method,
        "--train",
        str(FIXTURES / "tiny_pos_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_pos_dev.conll"),
        "--columns",
        "word,pos",
        "--epochs",
        str(epochs),
        "--output",
        str(output),
        "--quiet",
        *TINY_MODEL,
        *overrides,
    ]


@pytest.fixture(scope="module")
def recorded_run(tiny_run, tmp_path_factory):
    output = tmp_path_factory.mktemp("recorded") / "finetune"
    run(transfer_arguments(tiny_run, output, "finetune", 2, "train.record_activations=[0,1,2]"))
    return output


def dev_token_count() -> int:
    text = (FIXTURES / "tiny_pos_dev.conll").read_text()
    return sum(1 for line in text.splitlines() if line.strip())


def test_recording_writes_float16_files_per_epoch(recorded_run):
    folder = recorded_run / "activations"
    assert sorted(path.name for path in folder.iterdir()) == ["epoch-000.safetensors", "epoch-001.safetensors", "epoch-002.safetensors", "final.safetensors", "tokens.json"]
    sentences = json.loads((folder / "tokens.json").read_text())["sentences"]
    assert sum(len(sentence) for sentence in sentences) == dev_token_count()
    with safe_open(str(folder / "epoch-001.safetensors"), framework="numpy") as handle:
        matrix, metadata = handle.get_tensor("activations"), handle.metadata()
    assert matrix.dtype == np.float16 and matrix.shape == (dev_token_count(), 16)
    assert metadata == {"epoch": "1", "phase": "train"}
    _, recordings = list_recordings(recorded_run)
    assert [(recording.name, recording.epoch) for recording in recordings] == [("epoch-000", 0), ("epoch-001", 1), ("epoch-002", 2), ("final", load_run(recorded_run).metrics["best_epoch"])]


def test_epoch_zero_is_the_feature_extractor_of_the_transferred_weights(recorded_run, tiny_run):
    config = target_config("finetune", tiny_run)
    seed_everything(config.train.seed, 1)
    source = load_source(config, SCHEMES["finetune"])
    data = load_task_data(config.data)
    vocabularies, matrix = prepare_vocabularies(config, data, lambda message: None, base=source.vocabularies)
    model = build_target_model(config, SCHEMES["finetune"], vocabularies, matrix, source, lambda message: None)
    expected = feature_matrix(model, encode_sentences(data.tokens("dev"), vocabularies))
    _, recordings = list_recordings(recorded_run)
    np.testing.assert_allclose(recordings[0].matrix().astype(np.float32), expected, atol=2e-3)
    # The source model's own FE gives the same states on sentences whose words and characters it knows.
    source_states = feature_matrix(source.model, encode_sentences([["Mary"]], source.vocabularies))
    np.testing.assert_allclose(feature_matrix(model, encode_sentences([["Mary"]], vocabularies)), source_states, atol=1e-6)
    final = load_run(recorded_run)
    np.testing.assert_allclose(recordings[-1].matrix().astype(np.float32), feature_matrix(final.model, encode_sentences(data.tokens("dev"), final.vocabularies)), atol=2e-3)


def test_recording_does_not_change_training(recorded_run, tiny_run, tmp_path):
    run(transfer_arguments(tiny_run, tmp_path / "plain", "finetune", 2))
    plain, recorded = load_run(tmp_path / "plain"), load_run(recorded_run)
    timings = ("train_seconds", "epoch_seconds")  # wall times differ between any two runs
    without_timings = [[{key: value for key, value in record.items() if key not in timings} for record in run.metrics["history"]] for run in (plain, recorded)]
    assert without_timings[0] == without_timings[1]
    for name, tensor in plain.model.state_dict().items():
        assert torch.equal(tensor, recorded.model.state_dict()[name]), name
    assert not (tmp_path / "plain" / "activations").exists()


def test_pretrand_epochs_are_numbered_across_phases(tiny_run, tmp_path):
    run(transfer_arguments(tiny_run, tmp_path / "pretrand", "pretrand", 2, "model.random_hidden=6", "train.record_activations=0,1,3,4"))
    _, recordings = list_recordings(tmp_path / "pretrand")
    assert [(recording.name, recording.epoch, recording.phase) for recording in recordings][:4] == [
        ("epoch-000", 0, "random"),
        ("epoch-001", 1, "random"),
        ("epoch-003", 3, "joint"),
        ("epoch-004", 4, "joint"),
    ]
    np.testing.assert_array_equal(recordings[0].matrix(), recordings[1].matrix())  # the transferred FE is frozen in phase 'random'


def test_neurons_command(recorded_run, tmp_path):
    analysis = run(["analyze", "neurons", str(recorded_run), "--top-k", "3", "--units", "2,5", "--output", str(tmp_path / "neurons")])
    assert analysis.correlation.shape == (16, 16) and np.all(np.abs(analysis.charges) <= 1 + 1e-9)
    assert list(analysis.top_words) == ["source dev", "epoch 0", "epoch 1", "epoch 2", "final"]
    saved = json.loads((tmp_path / "neurons" / "neurons.json").read_text())
    assert len(saved["units"]) == 16 and len(saved["units"][2]["positive"]["epoch 0"]) == 3
    assert saved["units"][0]["charge"] == pytest.approx(float(analysis.charges[0]), abs=1e-4)
    for name in ("correlation.png", "correlation.svg", "unit-002.png", "unit-005.svg", "correlation.safetensors"):
        assert (tmp_path / "neurons" / name).stat().st_size > 0, name


def test_neurons_command_errors(tiny_run, recorded_run, tmp_path):
    from seqtransfer.errors import SeqTransferError

    with pytest.raises(SeqTransferError, match="no recorded activations"):
        run(["analyze", "neurons", str(tiny_run)])
    with pytest.raises(SeqTransferError, match="--units must lie in 0..15"):
        run(["analyze", "neurons", str(recorded_run), "--units", "99", "--no-source"])


def test_report_command_on_real_runs(recorded_run, tiny_run, tmp_path):
    scratch = tmp_path / "scratch"
    run(
        [
            "train",
            "--train",
            str(FIXTURES / "tiny_pos_train.conll"),
            "--dev",
            str(FIXTURES / "tiny_pos_dev.conll"),
            "--columns",
            "word,pos",
            "--epochs",
            "2",
            "--output",
            str(scratch),
            "--quiet",
            *TINY_MODEL,
        ]
    )
    report = tmp_path / "report.html"
    content = run(
        ["analyze", "report", "--transfer", str(scratch), str(recorded_run), "--neurons", str(recorded_run), "--units", "1", "--curve", str(scratch), str(recorded_run), "--output", str(report)]
    )
    page = report.read_text()
    assert len(content.comparisons) == 1 and content.units == [1]
    assert page.count("data:image/png;base64,") == 5  # PT/NT bars, class improvement, heat-map, unit 1, curve
    assert "http://" not in page and "https://" not in page
