"""K processes started at once, one thread each: each one's wall and CPU seconds, context switches and peak memory.

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/concurrent_processes.py 4 train   # 4 short WNUT-17 trainings
    python benchmarks/concurrent_processes.py 2 gemm                                        # 2 loops of 512x512 matrix products

``train``: ``seqtransfer train`` of the CRF tagger on WNUT-17's first 1,000 sentences, 3 epochs, one
thread (each run's epoch seconds from its metrics.json); ``gemm`` / ``big``: a loop of small / large
matrix products. Whether K processes on the cores each get a fair share and spend the CPU seconds
they spend alone (issue 58, benchmarks/README.md, "Where the rest went, measured").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
LOOPS = {"gemm": ("512, 512", "512, 512", 3000), "big": ("4096, 4096", "4096, 256", 60)}


def command(kind: str, output: Path) -> list[str]:
    if kind == "train":
        data = os.environ.get("SEQTRANSFER_DATA", "../shared/datasets")
        return [
            str(BIN / "seqtransfer"),
            "train",
            "--dataset",
            "wnut17",
            "--classifier",
            "crf",
            "--data-dir",
            data,
            "--epochs",
            "3",
            "--output",
            str(output),
            "--quiet",
            "train.threads=1",
            "data.max_train_sentences=1000",
        ]
    left, right, repeats = LOOPS[kind]
    code = (
        f"import time, torch\ntorch.set_num_threads(1)\na, b = torch.randn({left}), torch.randn({right})\nstarted = time.perf_counter()\n"
        f"for _ in range({repeats}):\n    a @ b\nprint(time.perf_counter() - started)"
    )
    return [str(BIN / "python"), "-c", code]


def main() -> None:
    count, kind = int(sys.argv[1]), sys.argv[2]
    work = Path(tempfile.mkdtemp(prefix="concurrent-"))
    started, running, rows = time.monotonic(), {}, []
    for index in range(count):
        output = work / f"run-{index}"
        process = subprocess.Popen(command(kind, output), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        running[process.pid] = (process, output, time.monotonic())
    while running:
        pid, _, usage = os.wait4(-1, 0)
        process, output, began = running.pop(pid)
        row = {
            "wall": round(time.monotonic() - began, 2),
            "cpu": round(usage.ru_utime + usage.ru_stime, 2),
            "voluntary_switches": usage.ru_nvcsw,
            "involuntary_switches": usage.ru_nivcsw,
            "peak_mb": usage.ru_maxrss // 1024,
        }
        if kind == "train":
            row["epochs"] = [round(record["train_seconds"], 2) for record in json.loads((output / "metrics.json").read_text())["history"]]
        else:
            row["loop_seconds"] = process.stdout.read().strip()[-20:]
        rows.append(row)
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"processes": count, "kind": kind, "total": round(time.monotonic() - started, 2), "rows": rows}))


if __name__ == "__main__":
    main()
