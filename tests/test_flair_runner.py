"""The flair side of the benchmarks builds its embeddings as a GPU run needs (issue 51, point 2).

flair 0.15.1 refuses to fine-tune a ``WordEmbeddings`` table that stays on the CPU while the model
trains elsewhere. Run on the meta device, which is not the CPU: the table must follow the model.
Needs the flair venv that ``benchmarks/compare_flair.py`` makes (``benchmarks/.flair-venv``);
skipped where it has not been made (CI)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
FLAIR_PYTHON = BENCHMARKS / ".flair-venv" / "bin" / "python"

CHECK = """
import numpy as np, torch, flair
flair.device = torch.device("meta")  # not the CPU, as a GPU run: flair's check fires for any such device
import flair_runner
embedding = flair_runner.word_embeddings(["a", "b"], np.zeros((3, 4), dtype=np.float32))
print(embedding.embedding.weight.device.type, embedding.fine_tune)
"""


@pytest.mark.skipif(not FLAIR_PYTHON.exists(), reason="benchmarks/.flair-venv not made (python benchmarks/compare_flair.py makes it)")
def test_flair_word_embeddings_train_where_the_model_trains():
    completed = subprocess.run([str(FLAIR_PYTHON), "-c", CHECK], cwd=BENCHMARKS, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.split() == ["meta", "True"]
