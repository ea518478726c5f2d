"""What a run costs in memory: the process's peak resident memory (Linux), reset when a run starts."""

from __future__ import annotations

import resource
from pathlib import Path


def release_free_memory() -> None:
    """Collect garbage and hand the C heap's free pages back to the system (glibc's malloc_trim):
    after a run, tens of thousands of freed sub-128 KB tensors can leave over a GB of the heap
    resident (measured: 1,754 MB before, 255 MB after), which the next run's peak would count."""
    import ctypes
    import gc

    gc.collect()
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


def peak_rss_megabytes() -> float:
    """Peak resident memory since the last reset (else since the process started), in MB."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def available_memory_bytes() -> int | None:
    """Memory the system can give without swapping (/proc/meminfo's MemAvailable, Linux), capped by
    this process's address-space limit where one is set; None where neither says."""
    meminfo = Path("/proc/meminfo")
    available = None
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit != resource.RLIM_INFINITY:  # what the limit leaves: the limit less the address space already in use
        left = max(limit - address_space_bytes(), 0)
        available = left if available is None else min(available, left)
    return available


def address_space_bytes() -> int:
    """This process's virtual memory size (/proc/self/status's VmSize, Linux; 0 where unknown)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0
