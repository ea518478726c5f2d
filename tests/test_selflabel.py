"""Self-training and tri-training rounds on unlabelled text: resumable, recorded, voting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, TINY_MODEL

from seqtransfer.analysis.predictions import read_predictions
from seqtransfer.cli import main, run
from seqtransfer.predictor import load
from seqtransfer.workflows.combination import vote
from seqtransfer.workflows.selflabel import choose_agreed, token_accuracy

UNLABELED = [
    "Peter lives in Berlin",
    "Mary visited Paris today",
    "John works for Google",
    "we met Anna in Rome",
    "Paul flew to London",
    "the team of Madrid won",
    "Sara likes New York",
    "Tom left Oslo",
    "I saw Ben at IBM",
    "Lisa moved to Vienna",
]


def selflabel_arguments(method: str, output, *extra: str) -> list[str]:
    unlabeled = output.parent / "unlabeled.txt"
    unlabeled.parent.mkdir(parents=True, exist_ok=True)
    unlabeled.write_text("\n".join(UNLABELED) + "\n", encoding="utf-8")
    return [
        "selflabel",
        method,
        "--unlabeled",
        str(unlabeled),
        "--rounds",
        "2",
        "--pool",
        "4",
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--scheme",
        "iob2",
        "--epochs",
        "2",
        "--output",
        str(output),
        *extra,
        *TINY_MODEL,
    ]


def test_vote_agreement_and_accuracy():
    assert vote([[["A", "B"]], [["A", "C"]], [["D", "C"]]]) == [["A", "C"]]
    assert vote([[["A"]], [["B"]], [["C"]]]) == [["A"]]  # a three-way tie: the first model's label
    labels = [[["A"], ["B"]], [["A"], ["C"]], [["A"], ["B"]]]
    assert choose_agreed(None, labels, None, 1, 0) == [0, 1]
    assert choose_agreed(None, labels, None, 1, 0, disagreement=True) == [1]
    assert choose_agreed(None, labels, None, 0, 1) == [0]
    assert token_accuracy([["A", "B"]], [["A", "C"]]) == pytest.approx(50.0)


def test_tri_training_rounds_resume_and_predict_by_vote(tmp_path, capsys):
    output = tmp_path / "tri"
    records = run(selflabel_arguments("tri_training", output))
    assert [record["round"] for record in records] == [0, 1, 2]
    assert all(len(record["source_dev"]) == 3 for record in records)
    metrics = json.loads((output / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["peak_rss_megabytes"] > 0 and metrics["trainable_parameters"] == metrics["parameters"]  # the three final models, all trained
    assert {item["model"] for item in records[1]["added"]} == {1, 2, 3}
    trained = sorted(path.stat().st_mtime_ns for path in output.glob("round-*/model-*/metrics.json"))
    capsys.readouterr()
    again = run(selflabel_arguments("tri_training", output))
    assert again == json.loads((output / "rounds.json").read_text(encoding="utf-8"))
    assert sorted(path.stat().st_mtime_ns for path in output.glob("round-*/model-*/metrics.json")) == trained
    assert ": training " not in capsys.readouterr().out
    predictor = load(output)
    members = [load(output / "round-2" / f"model-{number}") for number in (1, 2, 3)]
    sentence = [["Peter", "lives", "in", "Berlin"]]
    assert predictor.predict(sentence) == vote([member.predict(sentence) for member in members])
    scores = run(["evaluate", str(output), "--file", str(FIXTURES / "tiny_ner_test.conll")])  # evaluate scores the vote too
    scored = read_predictions(output / "predictions" / "evaluate-tiny_ner_test.conll.conll")
    assert scored.predicted == vote([member.predict_raw(scored.tokens) for member in members]) and 0 <= scores["f1"] <= 100


def test_a_crash_inside_a_round_resumes_to_the_same_models(tmp_path, monkeypatch, capsys):
    from seqtransfer.workflows import selflabel as training  # where the rounds call train_tagger

    run(selflabel_arguments("tri_training", tmp_path / "whole"))
    original = training.train_tagger

    def crash_at_round_1_model_2(config, directory, **options):
        if Path(directory).parts[-2:] == ("round-1", "model-2"):
            raise KeyboardInterrupt  # the machine stops after round 1's first model
        return original(config, directory, **options)

    monkeypatch.setattr(training, "train_tagger", crash_at_round_1_model_2)
    with pytest.raises(KeyboardInterrupt):
        run(selflabel_arguments("tri_training", tmp_path / "crashed"))
    monkeypatch.setattr(training, "train_tagger", original)
    first_model = (tmp_path / "crashed" / "round-1" / "model-1" / "metrics.json").stat().st_mtime_ns
    capsys.readouterr()
    resumed = run(selflabel_arguments("tri_training", tmp_path / "crashed"))
    assert "round 1, model 1: training" not in capsys.readouterr().out  # finished models are not trained again
    assert (tmp_path / "crashed" / "round-1" / "model-1" / "metrics.json").stat().st_mtime_ns == first_model
    whole = json.loads((tmp_path / "whole" / "rounds.json").read_text(encoding="utf-8"))
    assert [record["added"] for record in resumed] == [record["added"] for record in whole]
    for model in (1, 2, 3):
        assert (tmp_path / "crashed" / "round-2" / f"model-{model}" / "model.safetensors").read_bytes() == (tmp_path / "whole" / "round-2" / f"model-{model}" / "model.safetensors").read_bytes()


def test_self_training_accumulates_confident_sentences(tmp_path):
    output = tmp_path / "self"
    records = run(selflabel_arguments("self_training", output, "--top-n", "2", "--pseudo-weight", "0.5"))
    assert [item["sentences"] for record in records[1:] for item in record["added"]] == [2, 2]
    pseudo = [(output / f"round-{number}" / "pseudo-1.conll").read_text(encoding="utf-8").strip().split("\n\n") for number in (1, 2)]
    assert len(pseudo[0]) == 2 and len(pseudo[1]) == 4 and pseudo[1][:2] == pseudo[0]
    assert "weight 0.5" in (output / "round-2" / "model-1" / "log.txt").read_text(encoding="utf-8")
    assert json.loads((output / "members.json").read_text(encoding="utf-8"))["combination"] == "single"


@pytest.mark.parametrize("method, members", [("self_training", ["round-3/model-1"]), ("co_training", ["round-3/model-1", "round-3/model-2"])])
def test_self_and_co_training_stop_when_no_unlabelled_sentence_is_left(tmp_path, capsys, method, members):
    output = tmp_path / method
    records = run(selflabel_arguments(method, output, "--rounds", "5", "--top-n", "4"))  # 10 sentences, pools of 4: 4 + 4 + 2
    assert [record["round"] for record in records] == [0, 1, 2, 3] and [record["pool"] for record in records[1:]] == [4, 4, 2]
    assert "round 4: no unlabelled sentence is left to label; the models of round 3 are the final ones" in capsys.readouterr().out
    assert json.loads((output / "members.json").read_text(encoding="utf-8"))["members"] == members
    assert json.loads((output / "metrics.json").read_text(encoding="utf-8"))["rounds"] == 3
    assert run(selflabel_arguments(method, output, "--rounds", "5", "--top-n", "4")) == records  # resumed: the same, nothing trained
    assert not (output / "round-4").exists()


def test_other_settings_in_the_same_folder_are_refused(tmp_path, capsys):
    output = tmp_path / "self"
    run(selflabel_arguments("self_training", output, "--rounds", "0"))
    capsys.readouterr()
    code = main(selflabel_arguments("self_training", output, "--rounds", "0", "--threshold", "0.5"))
    error = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(error) == 1 and "other settings" in error[0]


def test_rounds_saved_before_a_config_field_existed_resume(tmp_path, capsys):
    """A field added to the config since the rounds were saved (at its default), or other threads, is the same settings."""
    output = tmp_path / "self"
    run(selflabel_arguments("self_training", output, "--rounds", "0"))
    saved = json.loads((output / "selflabel.json").read_text(encoding="utf-8"))
    del saved["config"]["train"]["adversarial_tokenizer"]
    saved["config"]["train"]["threads"] = 7
    (output / "selflabel.json").write_text(json.dumps(saved), encoding="utf-8")
    capsys.readouterr()
    assert main(selflabel_arguments("self_training", output, "--rounds", "0")) == 0
    assert ": training " not in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--threshold", "1.5"], "--threshold: must be above 0 and at most 1"),
        (["--threshold", "0"], "--threshold: must be above 0 and at most 1"),
        (["--pool", "0"], "--pool: must be at least 1"),
        (["--unlabeled", "nothing.txt"], "nothing.txt: file not found"),
    ],
)
def test_bad_self_labelling_settings_are_one_line(tmp_path, capsys, extra, message):
    code = main(selflabel_arguments("self_training", tmp_path / "out", *extra))
    error = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(error) == 1 and message in error[0], error
    assert not list((tmp_path / "out").glob("round-*/model-*/metrics.json"))


def test_an_experiment_files_tri_training_takes_no_top_n():
    from seqtransfer.errors import SeqTransferError
    from seqtransfer.workflows.selflabel import SelfLabelSettings, check_settings

    with pytest.raises(SeqTransferError, match="tri_training adds every sentence the other two models agree on: top_n does not apply"):
        check_settings(SelfLabelSettings(method="tri_training", unlabeled="tweebank", top_n=5))


@pytest.mark.parametrize(
    "method, extra, message",
    [
        ("tri_training", ["--top-n", "5"], "--threshold and --top-n do not apply"),
        ("tri_training_disagreement", ["--threshold", "0.5"], "--threshold and --top-n do not apply"),
        ("self_training", ["--threshold", "0.5", "--top-n", "5"], "pass one of them"),
    ],
)
def test_sentence_choices_that_a_method_would_ignore_are_one_line(tmp_path, capsys, method, extra, message):
    code = main(selflabel_arguments(method, tmp_path / "out", *extra))
    error = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(error) == 1 and message in error[0], error
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_pseudo_label_accuracy_and_target_scores_are_recorded_on_real_data(tmp_path):
    """UD-EWT UPOS -> TweeBank UPOS (same tag set): tiny model, 300 source sentences, 1 epoch, a pool of 50 tweets."""
    output = tmp_path / "ewt-tweebank"
    records = run(
        [
            "selflabel",
            "self_training",
            "--unlabeled",
            "tweebank:upos",
            "--target",
            "tweebank:upos",
            "--rounds",
            "1",
            "--pool",
            "50",
            "--top-n",
            "20",
            "--dataset",
            "ud_ewt",
            "--task",
            "upos",
            "--epochs",
            "1",
            "--output",
            str(output),
            *TINY_MODEL,
            "data.max_train_sentences=300",
        ]
    )
    added = records[1]["added"][0]
    assert added["sentences"] == 20 and 0 < added["pseudo_accuracy"] <= 100
    assert all(0 < record["target"] <= 100 for record in records)
    checked = run(["analyze", "tokens", str(output / "round-1" / "pseudo-1.conll"), "--gold", "tweebank:upos"])  # the same check, by kind of token
    assert next(iter(checked.values()))["accuracy"] == pytest.approx(added["pseudo_accuracy"])


def test_co_training_teaches_each_view_the_others_surest_sentences(tmp_path, capsys):
    output = tmp_path / "co"
    records = run(selflabel_arguments("co_training", output, "--top-n", "2"))
    assert [item["sentences"] for item in records[1]["added"]] == [2, 2]
    from seqtransfer.rundir import load_run

    assert [load_run(output / "round-2" / f"model-{number}").config.model.inputs for number in (1, 2)] == ["words", "characters"]
    members = json.loads((output / "members.json").read_text(encoding="utf-8"))
    assert members["combination"] == "confident"
    from seqtransfer.workflows.combination import model_predictions

    sentence = [["Peter", "lives", "in", "Berlin"]]
    (first, first_confidence), (second, second_confidence) = (model_predictions(output / "round-2" / f"model-{number}", sentence) for number in (1, 2))
    assert load(output).predict(sentence) == (first if first_confidence[0] >= second_confidence[0] else second)
    # a co-trained folder as a source: its first model, the words-only view, whose inputs the target takes
    target = ["--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--epochs", "1", *TINY_MODEL]
    run(["transfer", "--source", str(output), "--method", "finetune", *target, "--output", str(tmp_path / "sft")])
    assert load_run(tmp_path / "sft").config.model.inputs == "words"
    code = main(["transfer", "--source", str(output), "--method", "finetune", *target, "--output", str(tmp_path / "bad"), "model.inputs=characters"])
    assert code == 2 and "has model.inputs=words; this run asks for characters" in capsys.readouterr().err and not (tmp_path / "bad").exists()
    code = main(selflabel_arguments("co_training", tmp_path / "co-from-source", "transfer.scheme=finetune", f"transfer.source={tmp_path / 'sft'}"))
    assert code == 2 and "trains one model per view" in capsys.readouterr().err and not (tmp_path / "co-from-source").exists()
