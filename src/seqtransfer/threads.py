"""How many torch threads a run uses, and sharing the cores with other programs while it runs.

Measured on a 2-core machine (WNUT-17, one epoch of the BiLSTM-CRF tagger, `benchmarks/contention.py`,
numbers in `benchmarks/README.md`): with 2 threads each, two trainings at once ran 6.6x slower
each than one alone, because libgomp's threads spin at every small parallel region while the
other process holds the core they wait for. Spinning less (``OMP_WAIT_POLICY=PASSIVE``) fixes the
pair but makes a run alone 3x slower (a thread woken at every region); smaller ``GOMP_SPINCOUNT``
values were no better than the default under contention. One thread each gave the fair share
exactly (and for the BiLSTM(-CRF) taggers and the parser, threads do not change a run's numbers: the
weights are byte-identical). So a run keeps the threads it asked for while the cores are free, and
drops to the cores that other programs leave it, measured from the kernel's CPU counters twice a
second; it goes back up when they are free again. Within a run the count changes only between batches.

Not every model's numbers are free of the thread count: the weight gradients of ``LayerNorm`` and
``Conv1d`` are sums that torch splits across threads (measured: they differ in the last bits
between 1 and 2 threads, where those of ``Linear``, ``LSTM`` and ``Embedding`` do not), and so is
the gradient of a parameter broadcast over a whole tensor (a scalar mix's ``gamma``: a sum of every
element; per-feature sums, as of a bias or PretRand's weighting vectors, measured the same at 1 and
2 threads), so a fine-tuned Transformer or our ELMo-style LM trained on 2 threads that dropped to 1 while other
programs ran ends with other weights than the same command on an idle machine. A model with such a
trainable module keeps its threads fixed (:func:`thread_dependent_module`): the same command gives
the same numbers; on a busy machine give it ``train.threads=1`` instead.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import torch

PROC_STAT = Path("/proc/stat")
PROC_SELF_STAT = Path("/proc/self/stat")
SAMPLE_SECONDS = 0.5


def cgroup_cores(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota of this process's cgroup in cores (v2 ``cpu.max`` or v1 CFS quota), or None if unlimited."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None


def machine_cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by its cgroup's quota."""
    cores = len(affinity())
    quota = cgroup_cores()
    return max(1, min(cores, math.floor(quota + 0.25)) if quota else cores)


def granted_threads(requested: int) -> int:
    """``requested`` capped by the machine's cores and by ``OMP_NUM_THREADS`` where it is set
    (Ray sets it to the CPUs a task asked for, so that concurrent trials add up to the cores given)."""
    limit = machine_cores()
    omp = os.environ.get("OMP_NUM_THREADS", "")
    if omp.isdigit() and int(omp) >= 1:
        limit = min(limit, int(omp))
    return max(1, min(requested, limit))


def affinity() -> set[int]:
    """The CPUs this process may run on."""
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))


def cpu_counters(cpus: set[int]) -> tuple[float, float] | None:
    """(busy ticks on ``cpus`` of every process, this process's busy ticks), or None where the
    kernel does not say (not Linux). When this run is not niced, the time of niced processes
    (``/proc/stat``'s nice column) is left out: the scheduler gives a nice-10 job about a tenth
    of a shared core, so a grid run under ``nice -n 10`` does not take this run's threads away.
    A neighbour at nice 1 to 5 gets more than that, and is not seen either (measured: beside a
    nice-10 busy loop a 2-thread run took 4.1 s an epoch; one thread takes 4.9 s even alone)."""
    try:
        lines = PROC_STAT.read_text().splitlines()
        own = PROC_SELF_STAT.read_text().rsplit(")", 1)[1].split()
        niced_away = os.getpriority(os.PRIO_PROCESS, 0) <= 0
        busy = 0
        for line in lines:
            name, *values = line.split()
            if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus):
                continue
            user, nice, system, _idle, _iowait, irq, softirq, steal = ([int(value) for value in values] + [0] * 8)[:8]
            busy += user + system + irq + softirq + steal + (0 if niced_away else nice)
        return float(busy), float(int(own[11]) + int(own[12]))  # utime + stime: fields 14 and 15 of proc(5)
    except (OSError, ValueError, IndexError, AttributeError):  # no /proc, or no os.getpriority (not Linux)
        return None


def other_cores(before: tuple[float, float], after: tuple[float, float], seconds: float) -> float:
    """The cores kept busy by other programs between two ``cpu_counters`` readings ``seconds`` apart."""
    ticks = os.sysconf("SC_CLK_TCK") * seconds
    return max(0.0, (after[0] - before[0]) - (after[1] - before[1])) / max(ticks, 1e-9)


# Modules whose parameters' gradients are sums torch splits across threads (see the module docstring);
# a module of this package says so of itself with a true ``gradients_hang_on_threads`` class attribute.
THREAD_DEPENDENT_MODULES = (torch.nn.LayerNorm, torch.nn.Conv1d)


def thread_dependent_module(model: torch.nn.Module) -> str | None:
    """The class name of a module of ``model`` that trains and whose gradients depend on the thread count, or None."""
    for module in model.modules():
        dependent = isinstance(module, THREAD_DEPENDENT_MODULES) or getattr(module, "gradients_hang_on_threads", False)
        if dependent and any(parameter.requires_grad for parameter in module.parameters(recurse=False)):
            return type(module).__name__
    return None


class CoreShare:
    """Keeps a run's torch threads within the cores other programs leave free.

    ``tick()`` is called between batches; at most every ``SAMPLE_SECONDS`` it reads the CPU
    counters and sets ``torch.set_num_threads`` to the free cores (at least 1, at most the
    granted threads). ``adapt=False`` keeps the granted count throughout.
    """

    def __init__(self, requested: int, adapt: bool = True) -> None:
        self.granted = granted_threads(requested)
        self.cores, self.cpus = machine_cores(), affinity()
        self.last_time, self.last_counters = time.monotonic(), cpu_counters(self.cpus)
        self.adapt = adapt and self.granted > 1 and self.last_counters is not None
        self.threads = self.granted
        torch.set_num_threads(self.granted)

    def tick(self) -> int:
        """Re-read the load if it is time; returns the threads now in use."""
        if not self.adapt:
            return self.threads
        now = time.monotonic()
        if now - self.last_time < SAMPLE_SECONDS:
            return self.threads
        counters = cpu_counters(self.cpus)
        if counters is None:
            return self.threads
        # A cgroup quota below the CPUs' count: what others leave free of the CPUs, up to the quota.
        free = min(self.cores, len(self.cpus) - other_cores(self.last_counters, counters, now - self.last_time))
        self.last_time, self.last_counters = now, counters
        threads = max(1, min(self.granted, math.floor(free + 0.25)))
        if threads != self.threads:
            torch.set_num_threads(threads)
            self.threads = threads
        return threads
