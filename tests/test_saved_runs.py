"""Run directories written by earlier versions keep loading and predicting exactly as they did.

``fixtures/runs/v0_*`` were trained with the code of c76bd0b (before tasks became first-class):
a tiny CRF tagger and a tiny PretRand transferred from it. Their saved test predictions must be
reproduced bit for bit by today's ``load(...).predict``.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES

import seqtransfer

SAVED_RUNS = sorted((FIXTURES / "runs").glob("v0_*"))


def read_prediction_rows(path):
    blocks = path.read_text(encoding="utf-8").strip("\n").split("\n\n")
    return [[line.split(" ") for line in block.split("\n")] for block in blocks]


@pytest.mark.parametrize("run_directory", SAVED_RUNS, ids=[path.name for path in SAVED_RUNS])
def test_saved_run_reproduces_its_predictions(run_directory):
    saved = read_prediction_rows(run_directory / "predictions" / "test.conll")
    tokens = [[row[0] for row in sentence] for sentence in saved]
    predicted = seqtransfer.load(run_directory).predict(tokens)
    assert predicted == [[row[2] for row in sentence] for sentence in saved]


def test_both_saved_architectures_are_present():
    assert {path.name for path in SAVED_RUNS} == {"v0_tagger_crf", "v0_pretrand"}


def test_a_multitask_config_of_an_earlier_version_loads():
    from seqtransfer.config import config_from_dict
    from seqtransfer.rundir import upgrade_saved

    config = config_from_dict(upgrade_saved({"multitask": {"unified": False, "sampling": "round_robin"}}))
    assert config.multitask.unified is None
