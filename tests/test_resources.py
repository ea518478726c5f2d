"""A run's peak memory leaves out what earlier runs of the same process freed."""

from __future__ import annotations

import sys

import pytest
import torch

from seqtransfer.resources import peak_rss_megabytes, reset_peak_rss


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM and malloc_trim are Linux (glibc)")
def test_the_peak_is_reset_below_memory_an_earlier_run_freed():
    if not reset_peak_rss():  # earlier tests' peak out of the way
        pytest.skip("/proc/self/clear_refs cannot be written here")
    before = peak_rss_megabytes()
    churn = [torch.ones(100, 200) for _ in range(5000)]  # 80 KB each: the C heap, not mmap; about 400 MB
    kept = churn[::100]
    del churn
    assert peak_rss_megabytes() > before + 300
    reset_peak_rss()
    assert peak_rss_megabytes() < before + 100 and len(kept) == 50  # the freed heap went back to the system
