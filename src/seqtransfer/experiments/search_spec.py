"""A hyper-parameter search as an experiment file states it (``search:``, see ``search.py``):
:class:`SearchSpec` and its checks, read by ``spec.py`` when the file is loaded; ``search.py`` runs
the searches on Ray Tune.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqtransfer.config import check_values, config_from_dict
from seqtransfer.errors import SeqTransferError

ALGORITHMS = ("grid", "random", "asha")
DISTRIBUTIONS = ("choice", "uniform", "loguniform", "randint")


@dataclass
class SearchSpec:
    space: dict[str, Any]
    algorithm: str = "random"
    trials: int = 20
    max_epochs: int | None = None
    grace_epochs: int = 3  # ASHA: epochs every trial runs before it may be stopped
    seed: int = 1  # seed of the random draws (the runs' own seed is train.seed)


def extremes(values: Any) -> list:
    """Every value a key can take that a config check must pass: the choices, or a range's ends
    (randint's upper bound is excluded)."""
    if isinstance(values, list):
        return values
    ((kind, arguments),) = values.items()
    if kind == "choice":
        return list(arguments)
    if kind == "randint":  # both ends and a neighbour: a rule on parity (even BiLSTM sizes) shows on one of two neighbours
        low, high = int(arguments[0]), int(arguments[1]) - 1
        return sorted({low, min(low + 1, high), high})
    return list(arguments)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_range(kind: str, arguments: list, where: str, path: Path) -> None:
    """A range's bounds: numbers, low below high; whole numbers for randint (high excluded), positive for loguniform."""
    if kind == "choice":
        return
    low, high = arguments
    if not (is_number(low) and is_number(high)) or (kind == "randint" and not (float(low).is_integer() and float(high).is_integer())):
        raise SeqTransferError(f"{where} bounds must be {'whole ' if kind == 'randint' else ''}numbers, got [{low!r}, {high!r}]", path=path)
    if kind == "randint" and high - low < 1 or kind != "randint" and high <= low:
        raise SeqTransferError(
            f"{where} [{low}, {high}] is an empty range", path=path, hint="[low, high] with low < high" + (" (randint excludes high: [8, 33] draws 8..32)" if kind == "randint" else "")
        )
    if kind == "loguniform" and low <= 0:
        raise SeqTransferError(f"{where} needs bounds above 0, got [{low}, {high}]", path=path, hint="e.g. {loguniform: [0.001, 0.1]}")


def check_epochs(search: SearchSpec, where: str, path: Path) -> None:
    """max_epochs (a cap) and grace_epochs (ASHA's first rung): positive whole numbers, the rung within the cap."""
    for name in ("max_epochs", "grace_epochs"):
        value = getattr(search, name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise SeqTransferError(f"{where}: {name} must be a positive whole number, got {value!r}", path=path, hint=f"e.g. {name}: {30 if name == 'max_epochs' else 3}")
    if search.algorithm == "asha" and search.max_epochs is not None and search.grace_epochs > search.max_epochs:
        raise SeqTransferError(
            f"{where}: grace_epochs {search.grace_epochs} is more than max_epochs {search.max_epochs}: no trial could be stopped early", path=path, hint="set grace_epochs below max_epochs"
        )


def check_search(search: SearchSpec, where: str, path: Path) -> SearchSpec:
    """One-line errors for an unknown key, an empty space or budget, a malformed or empty range, a
    value no run can train with, bad epoch caps."""
    if search.algorithm not in ALGORITHMS:
        raise SeqTransferError(f"{where}: unknown search algorithm '{search.algorithm}'", path=path, hint=f"algorithms: {', '.join(ALGORITHMS)}")
    if not isinstance(search.space, dict) or not search.space:
        raise SeqTransferError(f"{where}: the search space is empty", path=path, hint="give space: {train.learning_rate: [0.01, 0.02], ...}")
    if not isinstance(search.trials, int) or isinstance(search.trials, bool) or search.trials < 1:
        raise SeqTransferError(f"{where}: the trial budget must be a positive integer, got {search.trials!r}", path=path, hint="e.g. trials: 20")
    for key, values in search.space.items():
        if not isinstance(key, str) or key.count(".") != 1:
            raise SeqTransferError(f"{where}: search key '{key}' is not a dotted config key", path=path, hint="e.g. train.learning_rate or model.dropout")
        if isinstance(values, dict):
            if len(values) != 1 or next(iter(values)) not in DISTRIBUTIONS:
                raise SeqTransferError(f"{where}: '{key}' must be a list or one of {', '.join(DISTRIBUTIONS)}", path=path, hint="e.g. {loguniform: [0.001, 0.1]}")
            ((kind, arguments),) = values.items()
            if not isinstance(arguments, list) or not arguments or (kind != "choice" and len(arguments) != 2):
                raise SeqTransferError(f"{where}: '{key}: {kind}' needs {'a list' if kind == 'choice' else 'two bounds [low, high]'}", path=path)
            if search.algorithm == "grid" and kind != "choice":
                raise SeqTransferError(f"{where}: a grid takes lists of values, not '{kind}' for '{key}'", path=path, hint="use algorithm: random or asha for ranges")
            check_range(kind, arguments, f"{where}: '{key}: {kind}'", path)
        elif not isinstance(values, list) or not values:
            raise SeqTransferError(f"{where}: '{key}' needs a non-empty list of values or a distribution", path=path)
        section, name = key.split(".")
        for value in extremes(values):
            try:
                check_values(config_from_dict({section: {name: value}}))
            except SeqTransferError as error:
                raise SeqTransferError(f"{where}: search key {error.message}", path=path, hint=error.hint) from None
    check_epochs(search, where, path)
    if search.algorithm == "grid":
        size = trial_count(search)
        if size > search.trials:
            raise SeqTransferError(f"{where}: the grid has {size} points, more than the budget of {search.trials} trials", path=path, hint=f"set trials: {size} or shrink the grid")
    return search


def trial_count(search: SearchSpec) -> int:
    """The trials a search runs: its budget, or a grid's points (a grid holds choices only)."""
    if search.algorithm == "grid":
        return math.prod(len(extremes(values)) for values in search.space.values())
    return search.trials
