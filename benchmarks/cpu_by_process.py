"""Where a command's CPU time goes: every process's CPU seconds, sampled from /proc twice a second
until the command ends, summed by kind (the driver, Ray's workers, Ray's own daemons, others).

    python benchmarks/cpu_by_process.py seqtransfer experiment run benchmarks/contention_grid.yaml --seeds 4 --ray local --cpus-per-run 0.5

Issue 58 (benchmarks/README.md, "Where the rest went, measured"). A process that ends between two
samples loses what it used since the last one; one whose command line can no longer be read
counts as "other".
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
RAY_DAEMONS = ("gcs_server", "raylet", "dashboard", "log_monitor", "monitor.py", "runtime_env", "ray_client", "ray/_private")


def processes() -> dict[tuple[str, int], tuple[float, str]]:
    """(pid, start time) -> (CPU seconds so far, command line) of every process now."""
    found = {}
    for pid in (entry for entry in os.listdir("/proc") if entry.isdigit()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")[:160]
        except OSError:
            continue
        found[(pid, int(fields[19]))] = ((int(fields[11]) + int(fields[12])) / TICKS, command)  # utime + stime; starttime
    return found


def machine_busy_seconds() -> float:
    values = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / TICKS  # all but idle and iowait


def kind_of(command: str) -> str:
    if "ray::" in command or "default_worker" in command:
        return "ray worker"
    if any(name in command for name in RAY_DAEMONS):
        return "ray daemon"
    return "driver" if "seqtransfer" in command else "other"


def main() -> None:
    before, busy_before, started = processes(), machine_busy_seconds(), time.monotonic()
    seen = dict(before)
    process = subprocess.Popen(sys.argv[1:])
    while process.poll() is None:
        seen.update(processes())
        time.sleep(0.5)
    seen.update(processes())
    wall, busy = time.monotonic() - started, machine_busy_seconds() - busy_before
    by_kind, by_command = collections.defaultdict(float), collections.defaultdict(float)
    for key, (seconds, command) in seen.items():
        used = seconds - before.get(key, (0.0, ""))[0]
        if used > 0.05:
            by_kind[kind_of(command)] += used
            by_command[command[:90]] += used
    print(json.dumps({"wall": round(wall, 1), "machine_busy_cpu_s": round(busy, 1), "by_kind": {kind: round(value, 1) for kind, value in by_kind.items()}}))
    for command, used in sorted(by_command.items(), key=lambda item: -item[1])[:14]:
        print(f"{used:7.1f}  {command}")


if __name__ == "__main__":
    main()
