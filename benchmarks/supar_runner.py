"""SuPar 1.1.4's biaffine dependency parser, trained and timed in its own venv (see compare_supar.py).

    benchmarks/.supar-venv/bin/python supar_runner.py SETTINGS.json RESULT.json

Trains with SuPar's own command (``supar.cmds.biaffine_dep train``) for a fixed number of epochs
and times only its training passes (``_train``) and its evaluation passes (``_evaluate``) by
wrapping them; then parses the test file with tree decoding (``predict --tree``), timed. Writes
per-epoch training seconds, parse seconds, peak resident memory and the prediction file path.

``device`` in the settings: cpu (SuPar's ``-d -1``) or cuda[:N]. With ``time_budget`` (seconds for
this process), training stops before an epoch when that epoch and the parsing after it (together
estimated as two epochs) would not fit, and cuts the first epoch short where even it does not fit
(``budget.Budget``): SuPar has saved its best epoch so far, which then parses. Progress lines go to
stdout as it trains (a comparison that kills it reads them).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # SuPar's checkpoints hold pickled objects

import torch  # noqa: E402
from budget import Budget, deadline_of, sizes_that_fit  # noqa: E402
from supar.cmds import biaffine_dep  # noqa: E402
from supar.parsers.dep import BiaffineDependencyParser  # noqa: E402

TIMES: dict[str, list[float]] = {"train": [], "evaluate": []}


class BudgetSpent(Exception):
    """Raised before an epoch that would not fit the time budget."""


class BudgetedLoader:
    """SuPar's training loader, each batch counted by the budget, which may end the epoch early."""

    def __init__(self, loader, budget: Budget) -> None:
        self.loader, self.budget = loader, budget

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            if not self.budget.take(len(batch.sentences), sum(len(sentence.words) for sentence in batch.sentences)):
                return
            yield batch


def timed_training(function, budget: Budget):
    """SuPar's ``_train`` (one epoch's training pass), timed and counted by ``budget``: an epoch that
    would not fit is not begun (SuPar has saved its best epoch so far, which then parses), and one
    that does not fit whole is cut (``budget.Budget``). SuPar's dev and test scoring after each epoch
    counts in the budget as time outside training (``overhead``)."""

    def wrapper(parser, loader):
        budget.overhead = sum(TIMES["evaluate"]) / max(len(TIMES["train"]), 1)  # its dev and test scoring, per epoch
        if not budget.another_epoch_fits():
            raise BudgetSpent(f"supar: time budget: stopping after {len(TIMES['train'])} epochs")
        budget.start_epoch()
        started = time.perf_counter()
        try:
            return function(parser, BudgetedLoader(loader, budget))
        finally:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            TIMES["train"].append(budget.end_epoch(time.perf_counter() - started)["seconds"])

    return wrapper


def timed(function):
    def wrapper(*arguments, **keywords):
        started = time.perf_counter()
        try:
            return function(*arguments, **keywords)
        finally:
            TIMES["evaluate"].append(time.perf_counter() - started)

    return wrapper


def run_command(arguments: list[str]) -> None:
    sys.argv = ["biaffine-dep", *arguments]
    biaffine_dep.main()


def supar_device(device: str) -> str:
    """SuPar's ``-d``: a GPU's index, or -1 for the CPU."""
    return "-1" if device == "cpu" else (device.split(":")[1] if ":" in device else "0")


def main(settings_path: str, result_path: str) -> None:
    started = time.perf_counter()
    settings = json.load(open(settings_path))
    # After its training SuPar scores dev and test, loads its best epoch, scores test again, then parses:
    # before an epoch has ended, seven tenths of the budget are kept for that.
    budget = Budget("supar", deadline_of(settings.get("time_budget"), settings.get("started_at")), after_training=0.7)
    BiaffineDependencyParser._train = timed_training(BiaffineDependencyParser._train, budget)
    BiaffineDependencyParser._evaluate = timed(BiaffineDependencyParser._evaluate)
    common = ["-d", supar_device(settings.get("device", "cpu")), "-t", str(settings["threads"]), "-p", settings["model"]]
    try:
        run_command(
            [
                "train",
                "-b",
                *common,
                "-c",
                settings["config"],
                "--feat",
                "char",
                "--embed",
                "",
                "--n-embed",
                str(settings["word_dimension"]),
                "--buckets",
                "32",
                "--punct",
                "--train",
                settings["train"],
                "--dev",
                settings["dev"],
                "--test",
                settings["test"],
                f"--seed={settings['seed']}",
            ]
        )  # epochs and tokens per batch are in the config file
    except BudgetSpent as stop:
        print(stop, file=sys.stderr, flush=True)
    parser = BiaffineDependencyParser.load(settings["model"])
    torch.set_num_threads(settings["threads"])
    parse_seconds = {}
    for batch_tokens in sizes_that_fit("supar", settings["parse_batch_tokens"], parse_seconds, budget.deadline, passes=2):  # the best of two passes at each (in tokens)
        for _ in range(2):
            started = time.perf_counter()
            parser.predict(settings["test"], pred=settings["predictions"], tree=True, proj=False, buckets=8, batch_size=batch_tokens, verbose=False)
            parse_seconds[batch_tokens] = min(parse_seconds.get(batch_tokens, float("inf")), time.perf_counter() - started)
    result = {
        "train_seconds": TIMES["train"],
        "evaluate_seconds": TIMES["evaluate"],
        "parse_seconds_by_batch": parse_seconds,
        "parse_seconds": min(parse_seconds.values()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "predictions": settings["predictions"],
        "torch": torch.__version__,
        "device": str(next(parser.model.parameters()).device),
        "epochs": len(TIMES["train"]),
        **budget.fields(),
        "time_budget": settings.get("time_budget"),
    }
    json.dump(result, open(result_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:3])
