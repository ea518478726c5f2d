"""One --device everywhere: device-free run directories, the CRF's two paths, clear errors for devices this machine lacks."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import tiny_train_arguments

import seqtransfer
from seqtransfer.cli import main, run
from seqtransfer.device import resolve_device
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.crf import CRF, ForwardBackward, log_partition_scan, log_partition_torch

needs_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the errors of a machine without a GPU")


def test_auto_is_the_cpu_without_a_gpu():
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")


@needs_no_gpu
@pytest.mark.parametrize("name,expected", [("cuda", "no CUDA GPU"), ("cuda:3", "no CUDA GPU"), ("tpu", "unknown device|unsupported device"), ("mps", "no MPS")])
def test_devices_this_machine_lacks_are_one_clear_error(name, expected):
    if name == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    with pytest.raises(SeqTransferError, match=expected):
        resolve_device(name)


@needs_no_gpu
def test_train_on_a_missing_gpu_is_one_line_and_writes_nothing(tmp_path, capsys):
    code = main(tiny_train_arguments(tmp_path / "run", epochs=1) + ["--device", "cuda"])
    error = capsys.readouterr().err
    assert code == 2 and len(error.strip().splitlines()) == 1 and "no CUDA GPU" in error
    assert not (tmp_path / "run").exists()


def test_run_records_its_device_and_loads_anywhere(tmp_path):
    metrics = run(tiny_train_arguments(tmp_path / "run", epochs=1) + ["--device", "cpu"])
    assert metrics["device"].startswith("cpu (") and json.loads((tmp_path / "run" / "metrics.json").read_text())["device"] == metrics["device"]
    predictor = seqtransfer.load(tmp_path / "run", device="auto")
    assert next(predictor.run.model.parameters()).device == resolve_device("auto")
    assert len(predictor.predict([["John", "loves", "Paris"]])[0]) == 3


def test_resuming_on_another_device_is_the_same_run():
    from seqtransfer.config import RunConfig
    from seqtransfer.workflows.checks import config_differences

    other = RunConfig()
    other.train.device = "cuda:0"
    assert config_differences(RunConfig(), other) == []


def test_device_is_not_part_of_a_runs_identity():
    from seqtransfer.config import RunConfig
    from seqtransfer.experiments.grid import identity_of

    config = RunConfig()
    before = identity_of(config, None)
    config.train.device = "cuda:1"
    assert identity_of(config, None) == before


def test_batch_moves_once_and_keeps_character_lengths_on_the_host():
    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary

    vocabularies = Vocabularies(Vocabulary(["<pad>", "<unk>", "a"]), Vocabulary(["<pad>", "<unk>", "a"]), Vocabulary(["X"]))
    batch = make_batch(encode_sentences([["a", "a"], ["a"]], vocabularies, [["X", "X"], ["X"]]), np.array([0, 1]))
    assert batch.to(torch.device("cpu")) is batch
    moved = batch.to(torch.device("meta"))
    assert moved.words.is_meta and moved.targets["labels"].is_meta and moved.mask.is_meta and moved.lengths.is_meta
    assert moved.character_lengths.device.type == "cpu"


@pytest.mark.parametrize("log_partition", [log_partition_torch, log_partition_scan])
@pytest.mark.parametrize("lengths", [[7, 3, 1, 5], [1, 1], [8, 8, 2], [13, 6, 9]])  # odd and even widths, one token only, a width of 2^k
def test_crf_torch_paths_equal_the_numpy_forward_backward(log_partition, lengths):
    """The GPU paths (torch with autograd: the loop over time steps and the log-semiring scan) and
    the CPU path (numpy) agree in value and gradient."""
    generator = torch.Generator().manual_seed(len(lengths))
    crf = CRF(5)
    for parameter in crf.parameters():
        torch.nn.init.normal_(parameter, generator=generator)
    width = max(lengths)
    emissions = (torch.randn(len(lengths), width, 5, generator=generator) * 4).requires_grad_()
    mask = torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    parameters = [emissions, crf.transitions, crf.start, crf.end]
    numpy_path = ForwardBackward.apply(emissions, mask, crf.transitions, crf.start, crf.end)
    numpy_gradients = torch.autograd.grad(numpy_path.sum(), parameters, materialize_grads=True)
    torch_path = log_partition(emissions, mask, crf.transitions, crf.start, crf.end)
    torch_gradients = torch.autograd.grad(torch_path.sum(), parameters, materialize_grads=True)
    assert torch_path.dtype == emissions.dtype and torch.allclose(numpy_path, torch_path, atol=1e-4)
    for numpy_gradient, torch_gradient in zip(numpy_gradients, torch_gradients):
        masked = numpy_gradient * (mask.unsqueeze(-1) if numpy_gradient.dim() == 3 else 1)
        assert torch.allclose(masked, torch_gradient, atol=1e-4)


def test_the_crf_scan_survives_scores_far_apart_and_gives_way_to_the_loop_when_too_large(monkeypatch):
    """Scores hundreds apart (a trained CRF's are tens) underflow no product to log 0 (no NaN
    gradient); a tag set whose (B, T, L, L) matrices exceed SCAN_ELEMENTS takes the loop."""
    from seqtransfer.models import crf as crf_module

    crf = CRF(4)
    emissions = torch.tensor([[[0.0, -900.0, 5.0, 900.0], [900.0, 0.0, -900.0, 1.0], [3.0, 2.0, 1.0, -900.0]]], requires_grad=True)
    mask = torch.ones(1, 3, dtype=torch.bool)
    scan = log_partition_scan(emissions, mask, crf.transitions, crf.start, crf.end)
    (gradient,) = torch.autograd.grad(scan.sum(), emissions)
    assert torch.allclose(scan, log_partition_torch(emissions, mask, crf.transitions, crf.start, crf.end)) and torch.isfinite(gradient).all()
    assert crf_module.device_log_partition(torch.zeros(2, 3, 4)) is log_partition_scan
    monkeypatch.setattr(crf_module, "SCAN_ELEMENTS", 2 * 3 * 4 * 4 - 1)
    assert crf_module.device_log_partition(torch.zeros(2, 3, 4)) is log_partition_torch


def test_out_of_memory_is_one_line_naming_the_batch_size(tmp_path, capsys, monkeypatch):
    from seqtransfer.models.heads import TaggingHead

    def out_of_memory(self, batch):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(TaggingHead, "loss", out_of_memory)
    code = main(tiny_train_arguments(tmp_path / "run", epochs=1))
    error = capsys.readouterr().err
    assert code == 2 and len(error.strip().splitlines()) == 1 and "ran out of memory" in error and "batches of 16" in error


def test_predict_and_evaluate_take_batch_size_and_device(tiny_run, tmp_path):
    from conftest import FIXTURES

    text = tmp_path / "in.txt"
    text.write_text("John loves Paris\nMary sleeps\n")
    labels = run(["predict", str(tiny_run), str(text), "--batch-size", "1", "--device", "cpu", "--output", str(tmp_path / "out.txt")])
    assert labels == run(["predict", str(tiny_run), str(text), "--batch-size", "64", "--output", str(tmp_path / "out2.txt")])
    evaluate = ["evaluate", str(tiny_run), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner"]
    assert run([*evaluate, "--batch-size", "2", "--device", "cpu"]) == run(evaluate)  # the batch size changes no score


def test_ray_task_asks_for_a_fraction_of_a_gpu():
    """The options Ray receives, recorded by a stand-in for ``ray.remote`` (the real module would keep
    process-wide state that a later test's cluster connection trips over)."""
    from seqtransfer.experiments.backends import ray_task
    from seqtransfer.experiments.runner import execute_task

    class RecordingRay:
        def remote(self, **options):
            self.options = options
            return lambda function: (function, options)

    ray = RecordingRay()
    assert ray_task(ray, 1.0, 0.25) == (execute_task, {"num_cpus": 1.0, "num_gpus": 0.25})
    assert ray_task(ray, 2.0, 0.0)[1] == {"num_cpus": 2.0, "num_gpus": 0.0}
    with pytest.raises(SeqTransferError, match="zero or more GPUs"):
        ray_task(ray, 1.0, -1)


def test_gpus_per_run_needs_ray(tmp_path, capsys):
    from test_experiments import tiny_experiment

    code = main(["experiment", "run", str(tiny_experiment(tmp_path)), "--gpus-per-run", "0.5", "--results", str(tmp_path / "results")])
    error = capsys.readouterr().err
    assert code == 2 and "needs --ray" in error and len(error.strip().splitlines()) == 1
