"""Reading a run's prediction files: ``token gold predicted`` per line, blank line between sentences."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seqtransfer.errors import SeqTransferError


@dataclass
class Predictions:
    """The sentences of one split with their gold and predicted labels (lists of sentences)."""

    path: Path
    tokens: list[list[str]]
    gold: list[list[str]]
    predicted: list[list[str]]

    @property
    def token_count(self) -> int:
        return sum(len(sentence) for sentence in self.tokens)


def predictions_path(run_directory: str | Path, split: str) -> Path:
    """Where a run keeps its predictions of ``split``."""
    return Path(run_directory) / "predictions" / f"{split}.conll"


def read_predictions(path: str | Path) -> Predictions:
    """Read a prediction file written by ``seqtransfer train`` (three space-separated fields)."""
    path = Path(path)
    if not path.is_file():
        raise SeqTransferError("prediction file not found", path=path, hint="pass a finished run directory and a split it was scored on (dev or test)")
    sentences: list[list[list[str]]] = [[]]  # sentences of [token, gold, predicted] rows
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                if sentences[-1]:
                    sentences.append([])
                continue
            if len(fields) != 3:
                raise SeqTransferError(f"expected 'token gold predicted', found {len(fields)} fields", path=path, line=number, hint="score the run on a labelled split")
            sentences[-1].append(fields)
    sentences = [sentence for sentence in sentences if sentence]
    columns = [[[row[column] for row in sentence] for sentence in sentences] for column in range(3)]
    return Predictions(path, *columns)


def read_scores(path: str | Path) -> tuple[list[float], list[float]]:
    """Gold and predicted scores of a regression's predictions file (``gold TAB predicted TAB text``
    per sentence, tasks/regression.py)."""
    rows = [line.split("\t") for line in Path(path).read_text(encoding="utf-8").splitlines() if line]
    return [float(row[0]) for row in rows], [float(row[1]) for row in rows]


def check_same_data(reference: Predictions, transferred: Predictions) -> None:
    """Raise a one-line error unless both files hold the same sentences, tokens and gold labels."""
    if len(reference.tokens) != len(transferred.tokens):
        raise SeqTransferError(
            f"the runs were scored on different data: {len(reference.tokens)} vs {len(transferred.tokens)} sentences",
            path=transferred.path,
            hint="compare two runs trained and scored on the same dataset and split",
        )
    for index, (tokens_a, tokens_b, gold_a, gold_b) in enumerate(zip(reference.tokens, transferred.tokens, reference.gold, transferred.gold)):
        if tokens_a != tokens_b or gold_a != gold_b:
            what = "tokens" if tokens_a != tokens_b else "gold labels"
            raise SeqTransferError(
                f"the runs were scored on different data: sentence {index + 1} has different {what}", path=transferred.path, hint="compare two runs trained and scored on the same dataset and split"
            )
