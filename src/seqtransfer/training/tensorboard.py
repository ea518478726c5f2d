"""Each epoch of a run in TensorBoard (``train.log_to=tensorboard``; extra ``tensorboard``).

The run's ``tensorboard/`` folder gets, per epoch: the training loss, the dev score (and each
task's, for a multi-task model), each parameter group's learning rate and the epoch's seconds,
from the same record ``metrics.json`` keeps. The phases of a scheme (PretRand's random++, chain
thaw, ...) follow each other on one step axis, the epochs of all phases counted together.

    tensorboard --logdir results/runs        # every run of an experiment grid side by side
"""

from __future__ import annotations

from pathlib import Path

from seqtransfer.errors import SeqTransferError

FOLDER = "tensorboard"


class TensorBoardLog:
    """An epoch report (``fit``'s ``epoch_reports``) writing to ``directory``/tensorboard."""

    def __init__(self, directory: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter  # imports tensorboard: only when asked for
        except ImportError:
            raise SeqTransferError("train.log_to=tensorboard needs the tensorboard package", hint='pip install "seqtransfer[tensorboard]" (or tensorboard)') from None
        self.writer = SummaryWriter(log_dir=str(Path(directory) / FOLDER))
        self.phase, self.offset = "", 0

    def start_phase(self, name: str, epochs_before: int) -> None:
        """The phase the next epochs belong to, after ``epochs_before`` epochs of earlier phases
        (a resumed run writes its new epochs at the steps they would have had)."""
        self.phase, self.offset = name, epochs_before

    def __call__(self, record: dict) -> None:
        if record.get("restored"):  # written by the process that trained it
            return
        self.step = self.offset + record["epoch"]
        scalars = {"loss/train": record["loss"], "dev/score": record["dev"], "seconds/epoch": record["epoch_seconds"]}
        scalars |= {f"dev/{task}": score for task, score in record.get("dev_tasks", {}).items()}
        scalars |= {f"learning_rate/group_{index}": rate for index, rate in enumerate(record.get("learning_rates", []))}
        for name, value in scalars.items():
            self.writer.add_scalar(name, value, self.step)
        self.writer.add_text("phase", f"epoch {record['epoch']} of phase '{self.phase}'", self.step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
