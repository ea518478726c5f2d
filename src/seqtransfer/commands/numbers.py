"""Argument types that check a number when the command line is read, before any work starts.

``--epochs 0`` or ``--held-out 1.5`` then fail at once with argparse's usage line and one error
line naming the option, the value and what it must be, instead of a traceback or a run that does
nothing after minutes of loading.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole(minimum: int) -> Callable[[str], int]:
    """A whole number of at least ``minimum`` (``--epochs``: 1, ``--rounds``: 0)."""

    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    read.__name__ = f"whole number >= {minimum}"
    return read


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def positive(text: str) -> float:
    """A number above 0 (a learning rate, a weight)."""
    value = number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def not_negative(text: str) -> float:
    """A number of 0 or more (GPUs per run, minutes between checkpoints)."""
    value = number(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def share(text: str) -> float:
    """A share strictly between 0 and 1 (held-out lines)."""
    value = number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (both excluded), got {text}")
    return value


def probability(text: str) -> float:
    """A probability above 0, up to 1 (a confidence threshold)."""
    value = number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, got {text}")
    return value
