"""The CRF's recursions as trees of semiring products (models/crf_scan.py; issue 51): Viterbi by
the max-plus scan finds the loop's paths; what chooses the scan on a GPU and the loop elsewhere."""

from __future__ import annotations

import pytest
import torch

from seqtransfer.models import crf as crf_module
from seqtransfer.models.crf import CRF
from seqtransfer.models.crf_scan import viterbi_scan


def random_crf(labels: int, generator: torch.Generator) -> CRF:
    crf = CRF(labels)
    for parameter in crf.parameters():
        torch.nn.init.normal_(parameter, generator=generator)
    return crf


@pytest.mark.parametrize("seed", range(4))
def test_the_max_plus_scan_finds_the_paths_of_the_loop(seed):
    """Random CRFs and batches of mixed lengths (one token, odd and even widths, a width of 2^k + 1):
    the same paths, 0 past each end."""
    generator = torch.Generator().manual_seed(seed)
    for _ in range(25):
        batch_size, width, labels = (int(torch.randint(low, high, (), generator=generator)) for low, high in ((1, 6), (1, 18), (1, 9)))
        crf = random_crf(labels, generator)
        lengths = torch.randint(1, width + 1, (batch_size,), generator=generator)
        lengths[0] = width
        mask = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
        emissions = torch.randn(batch_size, width, labels, generator=generator) * 3
        with torch.no_grad():
            expected = crf.decode_loop(emissions, mask)
            found = viterbi_scan(emissions, mask, crf.transitions, crf.start, crf.end)
        assert torch.equal(found, expected), (batch_size, width, labels)


def test_a_cpu_tensor_decodes_by_the_loop_and_the_scans_have_a_size_limit(monkeypatch):
    emissions, mask = torch.randn(2, 5, 3), torch.ones(2, 5, dtype=torch.bool)
    crf = random_crf(3, torch.Generator().manual_seed(0))
    called = []
    monkeypatch.setattr(crf_module, "viterbi_scan", lambda *arguments: called.append("scan") or viterbi_scan(*arguments))
    crf.decode(emissions, mask)
    assert called == []  # CPU: the loop (measured fastest here)
    assert crf_module.scan_fits(torch.zeros(2, 5, 3), 3) and crf_module.scan_fits(torch.zeros(2, 5, 3), 2)
    monkeypatch.setattr(crf_module, "SCAN_ELEMENTS", 2 * 2 * 27 - 1)  # (B, T/2, L^3) = 108 entries no longer fit
    assert not crf_module.scan_fits(torch.zeros(2, 5, 3), 3) and crf_module.scan_fits(torch.zeros(2, 5, 3), 2)
