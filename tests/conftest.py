"""Shared fixtures: tiny data files and a tiny trained run (trained once per session)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
DATA_ROOT = Path(os.environ.get("SEQTRANSFER_DATA", Path(__file__).resolve().parents[2] / "shared" / "datasets"))

TINY_MODEL = ["model.embeddings=null", "model.word_dimension=8", "model.char_dimension=6", "model.char_hidden=8", "model.hidden=16", "model.dropout=0.1", "train.threads=1"]


def write_random_text(path: Path, words: str, lines: int, longest: int, seed: int) -> Path:
    """A raw text file of ``lines`` random sentences of 3 to ``longest`` of the (space-separated) words, for tiny LMs."""
    generator = random.Random(seed)
    vocabulary = words.split()
    path.write_text("\n".join(" ".join(generator.choice(vocabulary) for _ in range(generator.randint(3, longest))) for _ in range(lines)), encoding="utf-8")
    return path


def tiny_train_arguments(output: Path, epochs: int = 3, seed: int = 1, classifier: str = "softmax") -> list[str]:
    """CLI arguments that train a tiny model on the tiny NER fixture."""
    return [
        "train",
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--test",
        str(FIXTURES / "tiny_ner_test.conll"),
        "--columns",
        "word,ner",
        "--scheme",
        "iob2",
        "--classifier",
        classifier,
        "--seed",
        str(seed),
        "--epochs",
        str(epochs),
        "--output",
        str(output),
        "--quiet",
        "data.metric=span_f1",
        *TINY_MODEL,
    ]


def pytest_collection_finish(session):
    """Move what collection imported (torch, transformers and the test modules: over 360,000 objects)
    out of the garbage collector's sight. Each run starts with a full `gc.collect()` (to measure
    its own peak memory), which otherwise scans them all again: 0.07-0.13 s for each of the suite's
    hundreds of tiny runs."""
    import gc

    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A tiny CRF tagger trained on the NER fixture, shared by the tests that only read it."""
    from seqtransfer.cli import run

    output = tmp_path_factory.mktemp("runs") / "tiny-crf"
    run(tiny_train_arguments(output, classifier="crf"))
    return output


@pytest.fixture(scope="session")
def data_root() -> Path:
    if not DATA_ROOT.is_dir():
        pytest.skip(f"shared datasets not found at {DATA_ROOT} (set SEQTRANSFER_DATA)")
    return DATA_ROOT
