"""What scripts/gpu_check.sh runs: CPU and GPU agreement, speed-up and GPU memory, on carried data.

For a CRF tagger (WNUT-17 sample), a PretRand model transferred from it, and a biaffine parser
(UD-EWT sample), 2,000 training sentences each in batches of 64 (a size where a GPU should win;
issue 51): one epoch of training on the CPU and on the GPU with the same seed (time,
speed-up, dev score of each: random streams differ per device, so the scores are compared as
numbers of the same kind, not bits), then the CPU-trained model loaded on both devices with
dropout off: the largest difference of its forward scores and of one batch's gradients, and the
share of identical predictions. On a machine without a GPU only the CPU half runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import evaluation_batches
from seqtransfer.rundir import load_run
from seqtransfer.training.inference import predict_labels
from seqtransfer.workflows.train import train_tagger

TOLERANCE = 1e-3  # forward scores and gradients: float32 kernels differ between devices in rounding


def config_for(data: Path, model: str, device: str, glove: Path, source: Path | None = None) -> RunConfig:
    config = RunConfig()
    parsing = model == "parser"
    stem = "ud_ewt" if parsing else "wnut17"
    extension = "conllu" if parsing else "conll"
    config.data.dataset = None
    config.data.train, config.data.dev, config.data.test = (str(data / f"{stem}-{split}.{extension}") for split in ("train", "dev", "test"))
    config.data.task = "dependency" if parsing else "ner"
    config.data.columns = None if parsing else ["word", "ner"]
    config.data.scheme = "none" if parsing else "iob2"
    overrides = [f"model.embeddings={glove}", "train.max_epochs=1", "train.batch_size=64", f"train.device={device}", "train.threads=4"]
    overrides += [] if parsing else ["model.classifier=crf"]
    if model == "pretrand":
        overrides += ["transfer.scheme=pretrand", f"transfer.source={source}"]
    return apply_overrides(config, overrides)


def train_once(data: Path, model: str, device: str, glove: Path, output: Path, source: Path | None = None) -> dict:
    started = time.perf_counter()
    metrics = train_tagger(config_for(data, model, device, glove, source), output, log=lambda message: None, show_progress=False)
    main = metrics["dev"].get("las", metrics["dev"].get("f1"))
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "train_seconds": sum(record["train_seconds"] for record in metrics["history"]),
        "dev": round(main, 2),
        "gpu_peak_megabytes": metrics.get("gpu_peak_megabytes"),
    }


def agreement(run_directory: Path) -> dict:
    """The same weights and batches on CPU and GPU, dropout off: scores, gradients, predictions."""
    cpu, gpu = load_run(run_directory, "cpu"), load_run(run_directory, "cuda")
    data = load_task_data(cpu.config.data, splits=("train", "dev"))
    encoded = data.encode("dev", cpu.vocabularies, with_targets=False)
    same = [a == b for a, b in zip(predict_labels(cpu.model, encoded, cpu.vocabularies.labels, 64), predict_labels(gpu.model, encoded, gpu.vocabularies.labels, 64))]
    batch = next(evaluation_batches(data.encode("train", cpu.vocabularies), 16))
    for model in (cpu.model, gpu.model):
        model.eval()  # dropout off; gradients still flow
        for module in model.modules():  # cuDNN's RNN backward runs in training mode only (no dropout inside a one-layer LSTM)
            if isinstance(module, torch.nn.RNNBase):
                module.train()
        model.zero_grad()
        model.loss(batch.to(next(model.parameters()).device)).backward()
    differences = [float((a.grad - b.grad.cpu()).abs().max()) for a, b in zip(cpu.model.parameters(), gpu.model.parameters()) if a.grad is not None and not a.grad.is_sparse]
    return {"identical_predictions": round(sum(same) / len(same), 4), "largest_gradient_difference": max(differences), "within_tolerance": max(differences) < TOLERANCE}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=".gpu-check/data")
    parser.add_argument("--output", default="/tmp/gpu-check", help="folder of the trained runs")
    parser.add_argument("--json", default=None, help="the report, written again after each model and device (default OUTPUT/gpu-check.json)")
    arguments = parser.parse_args()
    data, output = Path(arguments.data), Path(arguments.output)
    report_path = Path(arguments.json) if arguments.json else output / "gpu-check.json"
    report_path.parent.mkdir(parents=True, exist_ok=True)
    glove = data / "glove-sample.txt"
    has_gpu = torch.cuda.is_available()
    print(f"torch {torch.__version__}; GPU: {torch.cuda.get_device_name(0) if has_gpu else 'none (CPU half only)'}", flush=True)
    devices = ["cpu", "cuda"] if has_gpu else ["cpu"]
    report = {}
    for model in ("tagger", "pretrand", "parser"):
        for device in devices:
            source = output / f"tagger-{device}" if model == "pretrand" else None
            report[f"{model}/{device}"] = result = train_once(data, model, device, glove, output / f"{model}-{device}", source)
            report_path.write_text(json.dumps(report, indent=1))  # kept if a later step fails or the call is cut off
            print(
                f"{model:8} {device:4}: one epoch {result['train_seconds']:.2f} s training ({result['seconds']:.1f} s in all), dev {result['dev']}, GPU peak {result['gpu_peak_megabytes']} MB",
                flush=True,
            )
        if has_gpu:
            speedup = report[f"{model}/cpu"]["train_seconds"] / max(report[f"{model}/cuda"]["train_seconds"], 1e-9)
            report[f"{model}/agreement"] = check = agreement(output / f"{model}-cpu")
            report_path.write_text(json.dumps(report, indent=1))
            print(f"{model:8} speed-up {speedup:.1f}x; CPU-trained model on both devices: {check}", flush=True)
    report_path.write_text(json.dumps(report, indent=1))
    failed = [name for name, result in report.items() if name.endswith("agreement") and not result["within_tolerance"]]
    print("agreement within tolerance" if not failed else f"DISAGREEMENT: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
