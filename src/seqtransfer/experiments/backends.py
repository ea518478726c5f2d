"""Where the runs of a grid execute: in this process, or as tasks on a Ray cluster."""

from __future__ import annotations

import os
from collections.abc import Callable

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.grid import RunTask
from seqtransfer.experiments.runner import describe, execute_task

Log = Callable[[str], None]


def ready(task: RunTask, pending_directories: set[str]) -> bool:
    """A task can start once the runs it needs (its source, the runs unifying its data) are not pending any more."""
    return not any(directory in pending_directories for directory in task.dependencies)


class LocalBackend:
    """One run after the other in this process (the default); sources come first in the list."""

    def run(self, tasks: list[RunTask], log: Log, on_record: Callable[[dict], None] | None = None) -> list[dict]:
        records = []
        for number, task in enumerate(tasks, start=1):
            what = task.record.get("source") or f"{task.record['method']} / {task.record['target'] or 'all targets'} / seed {task.record['seed']}"
            log(f"[{number}/{len(tasks)}] training {what} in {task.directory}")
            for record in execute_task(task, echo=log):
                records.append(record)
                log(f"[{number}/{len(tasks)}] {describe(record)}")
                if on_record:
                    on_record(record)
        return records


def ray_task(ray, cpus_per_run: float, gpus_per_run: float):
    """``execute_task`` as a Ray remote function asking for these resources per run.

    A fraction of a GPU lets several small BiLSTM runs share one GPU (Ray sets each task's
    CUDA_VISIBLE_DEVICES, and ``train.device=auto`` then takes that GPU); 0 asks for none, so
    nothing changes on a cluster without GPUs.
    """
    if cpus_per_run <= 0 or gpus_per_run < 0:
        raise SeqTransferError(f"a run needs a positive number of CPUs and zero or more GPUs (got {cpus_per_run}, {gpus_per_run})", hint="e.g. --gpus-per-run 0.25")
    return ray.remote(num_cpus=cpus_per_run, num_gpus=gpus_per_run)(execute_task)


class RayBackend:
    """Each run is a Ray task needing ``cpus_per_run`` CPUs and ``gpus_per_run`` GPUs; runs of a stage execute in parallel.

    ``address`` is "auto" (a running local cluster), "local" (start one in this process) or
    the address of a cluster's head ("HOST:PORT"). Workers must have seqtransfer installed and
    see the same data and results folders (a shared file system on a multi-machine cluster).
    """

    def __init__(self, address: str, cpus_per_run: float = 1.0, gpus_per_run: float = 0.0) -> None:
        if address == "local":  # a one-machine cluster advertised on loopback only
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            # Ray starts its workers 15 steps nicer than the command; beside other jobs that left a
            # trial about 6 % of a core here. The runs are the work: they keep the command's priority.
            os.environ.setdefault("RAY_worker_niceness", "0")
        try:
            import ray
        except ImportError:
            raise SeqTransferError("Ray is not installed", hint="pip install 'seqtransfer[ray]'") from None
        self.ray = ray
        if not ray.is_initialized():
            ray.init(address=None if address == "local" else address, include_dashboard=False, log_to_driver=False)
        self.execute = ray_task(ray, cpus_per_run, gpus_per_run)

    def run(self, tasks: list[RunTask], log: Log, on_record: Callable[[dict], None] | None = None) -> list[dict]:
        """Submit every task whose source is finished; submit the others as their sources finish."""
        pending = {task.directory for task in tasks}
        queued, running, records, finished = list(tasks), {}, [], 0
        while queued or running:
            for task in [task for task in queued if ready(task, pending)]:
                running[self.execute.remote(task)] = task
                queued.remove(task)
            done, _ = self.ray.wait(list(running), num_returns=1)
            task = running.pop(done[0])
            finished += 1
            pending.discard(task.directory)
            for record in self.ray.get(done[0]):
                records.append(record)
                log(f"[{finished}/{len(tasks)}] {describe(record)}")
                if on_record:
                    on_record(record)
        return records
