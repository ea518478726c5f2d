"""`seqtransfer ensemble`: several runs as one model for evaluate, predict, load and distillation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, TINY_MODEL, tiny_train_arguments

from seqtransfer.cli import main


@pytest.fixture(scope="module")
def members(tmp_path_factory) -> list[Path]:
    """Two tiny NER taggers of different seeds, one a CRF, trained on different files: their label
    vocabularies list the labels in different orders."""
    folder = tmp_path_factory.mktemp("ensemble")
    runs = [folder / "seed-1", folder / "seed-2"]
    assert main(tiny_train_arguments(runs[0], epochs=2, seed=1)) == 0
    other_file = [
        argument if argument != str(FIXTURES / "tiny_ner_train.conll") else str(FIXTURES / "tiny_ner_test.conll") for argument in tiny_train_arguments(runs[1], epochs=2, seed=2, classifier="crf")
    ]
    assert main(other_file) == 0
    return runs


def averaged_by_hand(members: list[Path], tokens: list[list[str]]) -> list[list[str]]:
    """Each member's per-token softmax, its columns put in the order of the sorted union of labels by name, averaged, arg-max."""
    import torch

    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.rundir import load_run

    runs = [load_run(member) for member in members]
    labels = sorted({label for run in runs for label in run.vocabularies.labels.items})
    averaged = []
    for sentence in tokens:
        parts = []
        for run in runs:
            batch = make_batch(encode_sentences([sentence], run.vocabularies), np.array([0]))
            with torch.no_grad():
                probabilities = run.model.eval().probabilities(batch)[0]  # (T, L_member)
            columns = torch.zeros(len(sentence), len(labels))
            for column, label in enumerate(run.vocabularies.labels.items):
                columns[:, labels.index(label)] = probabilities[:, column]
            parts.append(columns)
        averaged.append([labels[column] for column in torch.stack(parts).mean(0).argmax(-1).tolist()])
    return averaged


def one_error_line(arguments: list[str], capsys) -> str:
    code = main(arguments)
    error = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(error) == 1, error
    return error[0]


def test_an_ensemble_folder_scores_and_predicts_as_its_members_averaged(members, tmp_path, capsys):
    from seqtransfer.analysis.predictions import read_predictions
    from seqtransfer.data.conll import read_conll
    from seqtransfer.predictor import load
    from seqtransfer.rundir import read_vocabularies

    assert read_vocabularies(members[0]).labels.items != read_vocabularies(members[1]).labels.items  # mapped by name, not by position
    output = tmp_path / "ensemble"
    assert main(["ensemble", *map(str, members), "--output", str(output)]) == 0
    assert "ensemble of 2 tagging runs" in capsys.readouterr().out
    described = json.loads((output / "members.json").read_text(encoding="utf-8"))
    assert described["combination"] == "average" and described["method"] == "ensemble" and not any(Path(member).is_absolute() for member in described["members"])
    assert [(output / member).resolve() for member in described["members"]] == [member.resolve() for member in members]
    test_file = FIXTURES / "tiny_ner_dev.conll"
    tokens = [sentence.tokens for sentence in read_conll(str(test_file), ["word", "ner"])]
    expected = averaged_by_hand(members, tokens)
    assert main(["evaluate", str(output), "--file", str(test_file), "--columns", "word,ner", "--scheme", "iob2", "--batch-size", "2"]) == 0
    assert read_predictions(output / "predictions" / "evaluate-tiny_ner_dev.conll.conll").predicted == expected
    sentences = ["John lives in Paris", "Mary loves New York"]
    averaged = averaged_by_hand(members, [sentence.split() for sentence in sentences])
    assert load(output).predict(sentences) == averaged
    text = tmp_path / "input.txt"
    text.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    assert main(["predict", str(output), str(text), "--output", str(tmp_path / "tagged.conll")]) == 0
    tagged = [line.split()[-1] for line in (tmp_path / "tagged.conll").read_text(encoding="utf-8").splitlines() if line.strip()]
    assert tagged == [label for sentence in averaged for label in sentence]
    tree = tmp_path / "tree"  # the folder names its members relative to itself: a tree moved whole still loads
    copies = [shutil.copytree(member, tree / "runs" / member.name) for member in members]
    assert main(["ensemble", *map(str, copies), "--output", str(tree / "ensemble")]) == 0
    moved = shutil.move(tree, tmp_path / "moved")
    assert load(Path(moved) / "ensemble").predict(sentences) == averaged


def test_a_voting_ensemble_predicts_by_majority(members, tmp_path, capsys):
    from seqtransfer.predictor import load
    from seqtransfer.workflows.combination import model_predictions, vote

    output = tmp_path / "vote"
    assert main(["ensemble", *map(str, members), str(members[0]), "--output", str(output), "--combination", "vote"]) == 2  # listed twice
    assert "listed twice" in capsys.readouterr().err
    third = tmp_path / "seed-3"
    assert main(tiny_train_arguments(third, epochs=2, seed=3)) == 0
    assert main(["ensemble", *map(str, members), str(third), "--output", str(output), "--combination", "vote"]) == 0
    tokens = [["John", "lives", "in", "Paris"], ["Mary"]]
    expected = vote([model_predictions(run, tokens, confidences=False)[0] for run in [*members, third]])
    assert load(output).predict(tokens) == expected
    assert main(["evaluate", str(output), "--file", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--scheme", "iob2"]) == 0


def test_distilling_an_ensemble_folder_is_distilling_its_runs(members, tmp_path):
    output = tmp_path / "ensemble"
    assert main(["ensemble", *map(str, members), "--output", str(output)]) == 0
    from_folder, from_runs = tmp_path / "from-folder", tmp_path / "from-runs"
    assert main([*tiny_train_arguments(from_folder, epochs=2, seed=5), f"transfer.distill_from=[{output}]"]) == 0
    assert main([*tiny_train_arguments(from_runs, epochs=2, seed=5), f"transfer.distill_from=[{members[0]}, {members[1]}]"]) == 0
    assert "distilling 2 teacher run(s)" in (from_folder / "log.txt").read_text(encoding="utf-8")
    assert (from_folder / "model.safetensors").read_bytes() == (from_runs / "model.safetensors").read_bytes()


def test_what_cannot_be_an_ensemble_is_one_line_and_writes_nothing(members, tmp_path, capsys):
    pos = tmp_path / "pos"
    assert (
        main(
            [
                "train",
                "--train",
                str(FIXTURES / "tiny_pos_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_pos_dev.conll"),
                "--columns",
                "word,pos",
                "--epochs",
                "1",
                "--output",
                str(pos),
                "--quiet",
                *TINY_MODEL,
            ]
        )
        == 0
    )
    made = tmp_path / "made"
    assert main(["ensemble", *map(str, members), "--output", str(made)]) == 0
    full = tmp_path / "full"
    (full / "notes").mkdir(parents=True)
    cases = {
        "one run": ([str(members[0])], "at least two runs"),
        "another tag set": ([str(members[0]), str(pos)], "the runs label in different tag sets"),
        "a missing run": ([str(members[0]), str(tmp_path / "nobody")], "nobody"),
        "an ensemble as a member": ([str(members[0]), str(made)], "already a folder of models"),
    }
    for name, (runs, message) in cases.items():
        output = tmp_path / name.replace(" ", "-")
        assert message in one_error_line(["ensemble", *runs, "--output", str(output)], capsys), name
        assert not output.exists(), name
    assert "--output is not empty" in one_error_line(["ensemble", *map(str, members), "--output", str(full)], capsys)
    assert "--output is one of the runs" in one_error_line(["ensemble", *map(str, members), "--output", str(members[0])], capsys)
    message = one_error_line(
        [
            "transfer",
            "--source",
            str(made),
            "--method",
            "finetune",
            "--train",
            str(FIXTURES / "tiny_ner_train.conll"),
            "--columns",
            "word,ner",
            "--output",
            str(tmp_path / "from-ensemble"),
            "--quiet",
            "train.threads=1",
        ],
        capsys,
    )
    assert "an ensemble is not a source" in message and "transfer.distill_from=" in message and not (tmp_path / "from-ensemble").exists()
    assert sorted(path.name for path in full.iterdir()) == ["notes"]
    readers = [tmp_path / f"reads-tags-{seed}" for seed in (1, 2)]
    for seed, reader in zip((1, 2), readers):
        assert (
            main(
                [
                    "train",
                    "--train",
                    str(FIXTURES / "tiny_dep_train.conllu"),
                    "--task",
                    "deprel",
                    "--epochs",
                    "1",
                    "--seed",
                    str(seed),
                    "--output",
                    str(reader),
                    "--quiet",
                    "model.tag_feature=upos",
                    *TINY_MODEL,
                ]
            )
            == 0
        )
    assert "which an ensemble does not pass on" in one_error_line(["ensemble", *map(str, readers), "--output", str(tmp_path / "readers")], capsys)
    assert not (tmp_path / "readers").exists()


def test_a_broken_ensemble_folder_is_one_line(members, tmp_path, capsys):
    """A members.json that is not JSON, or not an object, and a member run moved away: one line each, for predict and evaluate alike."""
    broken = {"not JSON": "{not json", "a list": "[]"}
    for name, text in broken.items():
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        (folder / "members.json").write_text(text, encoding="utf-8")
        for command in (["predict", str(folder), str(tmp_path / "any.txt")], ["evaluate", str(folder)], ["ensemble", str(members[0]), str(folder), "--output", str(tmp_path / "e")]):
            assert "members.json" in one_error_line(command, capsys), (name, command)
    runs = [shutil.copytree(member, tmp_path / "runs" / member.name) for member in members]
    assert main(["ensemble", *map(str, runs), "--output", str(tmp_path / "ensemble")]) == 0
    shutil.rmtree(runs[1])
    for command in (["predict", str(tmp_path / "ensemble"), str(tmp_path / "any.txt")], ["evaluate", str(tmp_path / "ensemble")]):
        assert "its model ../runs/seed-2 is not there" in one_error_line(command, capsys), command


def test_pseudolabel_takes_an_ensemble_folder_as_its_runs(members, tmp_path, capsys):
    output = tmp_path / "ensemble"
    assert main(["ensemble", *map(str, members), "--output", str(output)]) == 0
    text = tmp_path / "unlabelled.txt"
    text.write_text("John lives in Paris\nMary loves New York\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["pseudolabel", str(output), "--unlabeled", str(text), "--output", str(tmp_path / "pseudo.conll")]) == 0
    assert "2 of 2 sentences (8 tokens) labelled by 2 run(s)" in capsys.readouterr().out
    labels = [line.split("\t")[1] for line in (tmp_path / "pseudo.conll").read_text(encoding="utf-8").splitlines() if line.strip()]
    assert labels == [label for sentence in averaged_by_hand(members, [["John", "lives", "in", "Paris"], ["Mary", "loves", "New", "York"]]) for label in sentence]
