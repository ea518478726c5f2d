"""What a run costs in memory: the process's peak resident memory (Linux), reset when a run starts."""

from __future__ import annotations

import resource
from pathlib import Path

_FROZEN = []  # one entry per call that froze what was alive (the first two)


def release_free_memory() -> None:
    """Collect garbage and hand the C heap's free pages back to the system (glibc's malloc_trim):
    after a run, tens of thousands of freed sub-128 KB tensors can leave over a GB of the heap
    resident (measured: 1,754 MB before, 255 MB after), which the next run's peak would count.

    The objects alive at the first two calls are then frozen (``gc.freeze``): later collections skip
    them. They are the imported libraries (about 180,000 objects at the first run's start, torch's
    most of them, and 118,000 more that the first run imports: functions, their closures and
    annotations), which live as long as the process, so freezing them frees nothing less. A full
    collection over them took 100-150 ms at every run start, more than a tiny run's training
    (the test suite's runs, 2026-11-29). Objects the caller still holds at those two calls are
    frozen too (the second call may come inside a run: a jackknifed fold's tagger, a self-labelling
    round): a cycle among them that the caller drops later is not collected. Objects without cycles
    are freed by reference counting, frozen or not."""
    import ctypes
    import gc

    gc.collect()
    if len(_FROZEN) < 2:
        gc.freeze()
        _FROZEN.append(True)
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        pass


def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark (VmHWM), after releasing free heap memory, so that a
    run's peak excludes earlier runs of the same process (Linux only)."""
    release_free_memory()
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def proc_kilobytes(path: str, key: str) -> int | None:
    """The value in kB of ``key`` (``VmHWM``, ``MemAvailable``...) in a /proc file (Linux), or None."""
    file = Path(path)
    if file.is_file():
        for line in file.read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
    return None


def peak_rss_megabytes() -> float:
    """Peak resident memory since the last reset (else since the process started), in MB."""
    peak = proc_kilobytes("/proc/self/status", "VmHWM")
    if peak is not None:
        return round(peak / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def available_memory_bytes() -> int | None:
    """Memory the system can give without swapping (/proc/meminfo's MemAvailable, Linux), capped by
    this process's address-space limit where one is set; None where neither says."""
    free = proc_kilobytes("/proc/meminfo", "MemAvailable")
    available = None if free is None else free * 1024
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit != resource.RLIM_INFINITY:  # what the limit leaves: the limit less the address space already in use (VmSize)
        left = max(limit - (proc_kilobytes("/proc/self/status", "VmSize") or 0) * 1024, 0)
        available = left if available is None else min(available, left)
    return available
