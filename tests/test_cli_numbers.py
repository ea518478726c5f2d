"""Numeric options are checked when the command line is read: one error line naming the option."""

import argparse

import pytest

from seqtransfer.cli import main
from seqtransfer.commands.numbers import positive, probability, share, whole

RUN = "tests/fixtures/runs/v1_tagger_crf"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--dataset", "wnut17", "--output", "OUT", "--epochs", "0"], "argument --epochs: must be at least 1, got 0"),
        (["predict", RUN, "--batch-size", "-4"], "argument --batch-size: must be at least 1, got -4"),
        (["predict", RUN, "--batch-size", "many"], "argument --batch-size: 'many' is not a whole number"),
        (["pretrain-lm", "--text", "t.txt", "--output", "OUT", "--held-out", "1.5"], "argument --held-out: must be between 0 and 1"),
        (["finetune-lm", "LM", "--text", "t.txt", "--output", "OUT", "--learning-rate", "0"], "argument --learning-rate: must be above 0"),
        (["selflabel", "self_training", "--unlabeled", "x", "--dataset", "wnut17", "--output", "OUT", "--threshold", "1.2"], "argument --threshold: must be above 0 and at most 1"),
        (["experiment", "run", "pretrand-table4", "--gpus-per-run", "-1"], "argument --gpus-per-run: must be 0 or more"),
        (["experiment", "run", "pretrand-table4", "--threads", "0"], "argument --threads: must be at least 1"),
    ],
)
def test_a_bad_number_fails_before_any_work(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and message in error and "--help" in error
    assert not any(tmp_path.iterdir())  # nothing written


def test_other_misread_options_are_one_line_too(capsys):
    assert main(["train", "--classifier", "bogus", "--output", "x"]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "invalid choice: 'bogus'" in error and "seqtransfer train --help" in error


def test_the_types_accept_their_ranges_edges():
    assert whole(0)("0") == 0 and whole(1)("7") == 7
    assert positive("1e-5") == 1e-5 and share("0.5") == 0.5 and probability("1") == 1.0
    for check, text in [(whole(1), "0"), (whole(1), "1.5"), (positive, "0"), (share, "1"), (share, "0"), (probability, "0"), (positive, "nan")]:
        with pytest.raises(argparse.ArgumentTypeError):
            check(text)
