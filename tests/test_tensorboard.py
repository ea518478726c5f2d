"""train.log_to=tensorboard: each epoch's loss, dev score and learning rates, readable by TensorBoard."""

import pytest

from seqtransfer.cli import main
from seqtransfer.config import RunConfig, result_settings

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

FIXTURES = "tests/fixtures"
TINY = ["model.embeddings=null", "model.word_dimension=8", "model.char_dimension=4", "model.char_hidden=4", "model.hidden=8", "model.random_hidden=8"]


def scalars(folder) -> dict[str, list[tuple[int, float]]]:
    events = EventAccumulator(str(folder)).Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_each_epoch_is_logged_with_its_loss_score_and_learning_rate(tmp_path):
    run = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--train",
                f"{FIXTURES}/tiny_ner_train.conll",
                "--dev",
                f"{FIXTURES}/tiny_ner_dev.conll",
                "--columns",
                "word,ner",
                "--output",
                str(run),
                "--quiet",
                "--epochs",
                "3",
                "train.patience=5",
                "train.log_to=tensorboard",
                *TINY,
            ]
        )
        == 0
    )
    logged = scalars(run / "tensorboard")
    assert [step for step, _ in logged["loss/train"]] == [1, 2, 3]
    assert {"dev/score", "seconds/epoch", "learning_rate/group_0"} <= set(logged)
    assert logged["learning_rate/group_0"][0][1] == pytest.approx(0.015)  # SGD's default rate, no decay


def test_phases_follow_each_other_on_one_step_axis(tmp_path):
    source, target = tmp_path / "source", tmp_path / "target"
    common = ["--train", f"{FIXTURES}/tiny_ner_train.conll", "--dev", f"{FIXTURES}/tiny_ner_dev.conll", "--columns", "word,ner", "--quiet", "--epochs", "2", "train.patience=5", *TINY]
    assert main(["train", *common, "--output", str(source)]) == 0
    assert main(["train", *common, "--output", str(target), "transfer.scheme=pretrand", f"transfer.source={source}", "train.log_to=tensorboard"]) == 0
    steps = [step for step, _ in scalars(target / "tensorboard")["loss/train"]]
    assert steps == [1, 2, 3, 4]  # random++ (2 epochs), then joint (2 epochs)


def test_logging_is_not_part_of_a_run_identity():
    logged = RunConfig()
    logged.train.log_to = "tensorboard"
    assert result_settings(logged) == result_settings(RunConfig())


def test_an_unknown_destination_is_one_line(tmp_path, capsys):
    assert main(["train", "--train", f"{FIXTURES}/tiny_ner_train.conll", "--columns", "word,ner", "--output", str(tmp_path / "run"), "train.log_to=wandb"]) == 2
    assert "tensorboard" in capsys.readouterr().err


def test_a_resumed_runs_restored_epochs_are_not_written_twice(tmp_path):
    from seqtransfer.training.tensorboard import TensorBoardLog

    log = TensorBoardLog(tmp_path)
    log.start_phase("train", 0)
    record = {"epoch": 1, "loss": 2.0, "dev": 50.0, "epoch_seconds": 1.0}
    log({**record, "restored": True})  # the process that trained epoch 1 wrote it
    log({**record, "epoch": 2, "dev": 60.0})
    log.writer.close()
    assert scalars(tmp_path / "tensorboard")["dev/score"] == [(2, 60.0)]
