"""A runner's time budget and its progress lines: the standard library only, so that every runner
imports it, in this repository's venv and in the peers' (flair's, SuPar's, which have no seqtransfer).

A runner given ``--time-budget`` (seconds for its process) trains whole epochs while another one and
the inference after it fit, and **cuts an epoch short** when even that one would not: it stops at the
batch where its training time runs out, and reports the partial epoch with the sentences and tokens
it trained on, so that its tokens/s are measured on a machine where one epoch does not fit the budget.
Inference is reserved as much time as an epoch takes (the timed passes at each batch size cost about
one epoch), or half of the budget left before the first epoch has ended.

While it trains, a runner prints a ``PROGRESS {json}`` line on stdout at the end of each epoch and at
most every ``PROGRESS_SECONDS`` within one (tokens and seconds so far). A comparison that has to kill
a runner at its hard limit reads its last lines (:func:`partial_result`): the training speed of what
ended is kept, only the unfinished part is lost.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

PROGRESS = "PROGRESS "
PROGRESS_SECONDS = 10.0


def deadline_of(time_budget: float | None, started_at: float | None = None) -> float | None:
    """The ``time.perf_counter()`` value at which ``time_budget`` seconds end, counted from
    ``started_at`` (a ``time.time()`` value: when the comparison started this process, so that its
    imports and a GPU's start count, as the comparison's kill clock counts them), else from now."""
    if not time_budget:
        return None
    spent = max(0.0, time.time() - started_at) if started_at else 0.0
    return time.perf_counter() + time_budget - spent


def progress_line(tool: str, **fields) -> None:
    """One progress line on stdout (read by the comparison if it must kill this process)."""
    print(PROGRESS + json.dumps({"tool": tool, **fields}), flush=True)


class Budget:
    """The training side of a runner's time budget (``deadline``: a ``time.perf_counter()`` value or None).

    ``start_epoch`` before an epoch's first batch, ``take(sentences, tokens)`` for each batch (False:
    stop this epoch here), ``end_epoch`` after its last; ``epochs`` holds what each epoch trained."""

    def __init__(self, tool: str, deadline: float | None, after_training: float = 0.5) -> None:
        self.tool, self.deadline, self.after_training = tool, deadline, after_training
        self.training_started = time.perf_counter()
        self.epochs: list[dict] = []  # per epoch: seconds, sentences, tokens, batches, cut
        self.current: dict = {}
        self.started = self.last_line = 0.0
        self.overhead = 0.0  # seconds per epoch outside training (a peer's own scoring after each epoch)

    def another_epoch_fits(self) -> bool:
        """Whether one more whole epoch and then the inference (about one epoch) end before the deadline."""
        whole = [epoch["seconds"] for epoch in self.epochs if not epoch["cut"]]
        if any(epoch["cut"] for epoch in self.epochs):
            return False
        if self.deadline is None or not whole:
            return True
        return time.perf_counter() + 2 * (sum(whole) / len(whole) + self.overhead) <= self.deadline

    def start_epoch(self) -> None:
        self.current = {"epoch": len(self.epochs) + 1, "sentences": 0, "tokens": 0, "batches": 0, "cut": False}
        self.started = self.last_line = time.perf_counter()

    def reserve(self) -> float:
        """Seconds kept for the inference: a whole epoch's mean, or before one has ended the share
        ``after_training`` (half) of the budget left when training began."""
        whole = [epoch["seconds"] for epoch in self.epochs if not epoch["cut"]]
        return sum(whole) / len(whole) + self.overhead if whole else (self.deadline - self.training_started) * self.after_training

    def take(self, sentences: int, tokens: int) -> bool:
        """Count a batch about to be trained; False (the batch is not trained) once the training time is spent."""
        now = time.perf_counter()
        if self.deadline is not None and self.current["batches"] and now >= self.deadline - self.reserve():
            self.current["cut"] = True
            return False
        if now - self.last_line >= PROGRESS_SECONDS:  # what has trained by now: this batch not yet
            self.last_line = now
            progress_line(self.tool, **self.current, seconds=round(now - self.started, 3), finished=False)
        self.current["sentences"] += sentences
        self.current["tokens"] += tokens
        self.current["batches"] += 1
        return True

    def end_epoch(self, seconds: float | None = None) -> dict:
        """Close the epoch (``seconds``: its own timing where the runner has one, after a device synchronisation)."""
        epoch = {**self.current, "seconds": seconds if seconds is not None else time.perf_counter() - self.started}
        self.current = {}
        self.epochs.append(epoch)
        progress_line(self.tool, **epoch, finished=True)
        if epoch["cut"]:
            print(f"{self.tool}: time budget: epoch {epoch['epoch']} cut after {epoch['sentences']} sentences ({epoch['tokens']} tokens) in {epoch['seconds']:.1f} s", file=sys.stderr, flush=True)
        return epoch

    def fields(self) -> dict:
        """What the runner's result adds: each epoch's seconds, sentences, tokens, and whether it was cut."""
        return {
            "epoch_seconds": [epoch["seconds"] for epoch in self.epochs],
            "epoch_sentences": [epoch["sentences"] for epoch in self.epochs],
            "epoch_tokens": [epoch["tokens"] for epoch in self.epochs],
            "epoch_cut": [epoch["cut"] for epoch in self.epochs],
        }


def inference_fits(last_pass_seconds: float, deadline: float | None, passes: int = 2) -> bool:
    """Whether ``passes`` more inference passes of about ``last_pass_seconds`` each end before the deadline."""
    return deadline is None or time.perf_counter() + passes * last_pass_seconds <= deadline


def sizes_that_fit(tool: str, sizes: list, timings: dict, deadline: float | None, passes: int):
    """The inference batch sizes to time, in order: after the first, each only while ``passes`` more
    passes at the fastest pass so far (``timings``, which the caller fills) end before the deadline."""
    for size in sizes:
        if timings and not inference_fits(min(timings.values()), deadline, passes):
            print(f"{tool}: time budget: inference timed at batch sizes {sorted(timings)} only", file=sys.stderr, flush=True)
            return
        yield size


def runner_budget(share: float) -> float:
    """The ``--time-budget`` a runner is given out of its ``share`` (its hard limit): a tenth less, at least 5 s, as a margin."""
    return max(share - max(5.0, share / 10), 1.0)


def share_left(deadline: float, parts_left: int) -> float:
    """Seconds of what is left until ``deadline`` (a ``time.perf_counter()`` value) for the next of ``parts_left`` parts."""
    return (deadline - time.perf_counter()) / parts_left


def training_speed(result: dict) -> tuple[float | None, float | None]:
    """(median seconds, median tokens/s) of a runner's whole epochs, else of the epoch the time budget
    cut (its tokens over its seconds); (None, None) when no epoch ended."""
    seconds = result.get("epoch_seconds") or []
    tokens = result.get("epoch_tokens") or [result.get("train_tokens")] * len(seconds)
    cut = result.get("epoch_cut") or [False] * len(seconds)
    epochs = [(second, token) for second, token, short in zip(seconds, tokens, cut) if not short] or list(zip(seconds, tokens))
    if not epochs:
        return None, result.get("train_tokens_per_second")
    return statistics.median(second for second, _ in epochs), statistics.median(token / second for second, token in epochs)


def progress_of(output: str) -> list[dict]:
    """The ``PROGRESS`` lines of a runner's stdout, in order (one may follow a progress bar's text on its line)."""
    lines = []
    for line in output.splitlines():
        if PROGRESS in line:
            try:
                lines.append(json.loads(line[line.index(PROGRESS) + len(PROGRESS) :]))
            except json.JSONDecodeError:  # the line the kill cut in two
                continue
    return lines


def partial_result(output: str) -> dict:
    """What a killed runner's progress lines measured: its finished epochs, and the one it was in.

    ``train_tokens_per_second``: the finished epochs' tokens over their seconds, else the last
    epoch's tokens so far over its seconds so far, else a probe's (the parser's timed epoch on a
    prefix, not one of its epochs); None when no line came."""
    lines = progress_of(output)
    probes = [line for line in lines if line.get("probe")]
    lines = [line for line in lines if not line.get("probe")]
    finished = [line for line in lines if line.get("finished")]
    unfinished = lines[-1] if lines and not lines[-1].get("finished") else None
    counted = finished or ([unfinished] if unfinished else probes)
    seconds = sum(line["seconds"] for line in counted)
    return {
        "killed": True,
        "epoch_seconds": [line["seconds"] for line in finished],
        "epoch_tokens": [line["tokens"] for line in finished],
        "epoch_cut": [line["cut"] for line in finished],
        "unfinished_epoch": unfinished,
        "train_tokens_per_second": sum(line["tokens"] for line in counted) / seconds if seconds > 0 else None,
    }


def run_runner(command: list[str], environment: dict, timeout: float | None = None, log: Path | None = None, echo: tuple[str, ...] = ()) -> tuple[str, bool]:
    """Run a runner process; return (its stdout, whether it was killed at ``timeout`` seconds).

    Its stdout is read line by line as it comes (a kill loses none of the lines already printed).
    With ``log``, its stderr joins its stdout there, and the lines that start with one of ``echo``
    are shown on this process's stderr as they come; without, its stderr passes through."""
    lines: list[str] = []
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT if log else None, text=True, errors="replace", env=environment)

    def read() -> None:
        with open(log, "w", encoding="utf-8") if log else contextlib.nullcontext() as handle:
            for line in process.stdout:
                lines.append(line)
                if handle:
                    handle.write(line)
                    handle.flush()
                shown = line[line.index(PROGRESS) :] if PROGRESS in line else line  # a progress line after a progress bar's text
                if echo and shown.startswith(echo):
                    print(shown, end="", file=sys.stderr, flush=True)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        process.wait(timeout=timeout)
        killed = False
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        killed = True
    reader.join()
    if not killed and process.returncode != 0:
        raise SystemExit(f"{Path(command[1]).name} failed with exit code {process.returncode}" + (f" (its output: {log})" if log else ""))
    return "".join(lines), killed
