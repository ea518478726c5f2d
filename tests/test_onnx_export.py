"""`seqtransfer export RUN --format onnx`: onnxruntime predicts what the run predicts (issue 57, point 2)."""

import json

import pytest

import seqtransfer
from seqtransfer.cli import main
from seqtransfer.errors import SeqTransferError

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from seqtransfer.workflows.onnx_export import export_onnx  # noqa: E402
from seqtransfer.workflows.onnx_model import OnnxModel  # noqa: E402

RUNS = "tests/fixtures/runs"
SENTENCES = [
    ["John", "lives", "in", "New", "York", "."],
    ["@user", "lol", "#tbt", "http://t.co/x", "Ünïcödé", "ok"],
    ["a"],
    ["The", "same", "form", "the", "same", "form"] * 6,  # longer than the traced sentences, forms repeated
]


@pytest.mark.parametrize("run", ["v1_tagger_softmax", "v1_tagger_crf", "v1_pretrand", "v1_parser", "v1_finetune"])
def test_onnxruntime_predicts_what_the_run_predicts(run, tmp_path):
    note = export_onnx(f"{RUNS}/{run}", tmp_path / "onnx")
    assert note["largest_difference_to_torch"] < 1e-5
    expected = seqtransfer.load(f"{RUNS}/{run}", device="cpu").predict(SENTENCES)
    exported = OnnxModel(tmp_path / "onnx")
    assert exported.predict(SENTENCES) == expected
    assert exported.predict(SENTENCES, batch_size=1) == expected  # every batch shape, one sentence at a time
    assert sorted(path.name for path in (tmp_path / "onnx").iterdir()) == ["decoding.json", "model.onnx", "seqtransfer_export.json", "vocabulary.json"]


def test_the_crf_transitions_travel_with_the_graph(tmp_path):
    export_onnx(f"{RUNS}/v1_tagger_crf", tmp_path / "onnx")
    decoding = json.loads((tmp_path / "onnx" / "decoding.json").read_text())
    assert decoding["kind"] == "crf" and len(decoding["transitions"]) == len(decoding["start"]) == len(decoding["end"])


@pytest.mark.parametrize(
    "run, reason",
    [
        ("v1_multitask", "a multitask model is not exported"),
        ("v1_sentence", "a sentence model is not exported"),
        ("v1_encoder_finetune", "exports to Hugging Face"),
        ("v1_encoder_features", "frozen Transformer's features"),
    ],
)
def test_what_has_no_onnx_export_is_refused_in_one_line(run, reason, tmp_path, capsys):
    with pytest.raises(SeqTransferError, match=reason):
        export_onnx(f"{RUNS}/{run}", tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()
    assert main(["export", f"{RUNS}/{run}", "--format", "onnx", "--output", str(tmp_path / "cli")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_command_writes_the_folder(tmp_path, capsys):
    assert main(["export", f"{RUNS}/v1_tagger_softmax", "--format", "onnx", "--output", str(tmp_path / "onnx")]) == 0
    assert "model.onnx" in capsys.readouterr().out
    assert OnnxModel(tmp_path / "onnx").predict([["John", "lives"]]) == seqtransfer.load(f"{RUNS}/v1_tagger_softmax", device="cpu").predict([["John", "lives"]])


@pytest.mark.parametrize("run", ["v1_tagger_crf", "v1_pretrand", "v1_parser"])
def test_the_graph_scores_sentences_of_other_shapes_as_torch_does(run, tmp_path):
    """Not only the traced sentences: every size (sentences, tokens, forms, characters) is dynamic."""
    import numpy as np
    import torch

    from seqtransfer.data.batching import encode_sentences, evaluation_batches
    from seqtransfer.rundir import load_run
    from seqtransfer.workflows.onnx_export import INPUTS, ScoreGraph, feeds

    export_onnx(f"{RUNS}/{run}", tmp_path / "onnx")
    loaded = load_run(f"{RUNS}/{run}")
    graph = ScoreGraph(loaded.model).eval()
    batch = next(evaluation_batches(encode_sentences(SENTENCES, loaded.vocabularies), len(SENTENCES)))
    with torch.inference_mode():
        expected = graph(*(getattr(batch, name) for name in INPUTS))
    expected = expected if isinstance(expected, tuple) else (expected,)
    found = OnnxModel(tmp_path / "onnx").session.run(None, feeds(batch))
    for want, got in zip(expected, found):
        want = want.numpy()
        assert want.shape == got.shape
        finite = np.isfinite(want)
        assert (finite == np.isfinite(got)).all() and np.abs(want[finite] - got[finite]).max() < 1e-5
