"""User-facing errors: one line that names the file, the line and the fix.

The CLI catches :class:`SeqTransferError` and prints ``str(error)`` alone (no traceback),
so every message must stand on its own.
"""

from __future__ import annotations

from pathlib import Path


class SeqTransferError(Exception):
    """An error caused by the user's input or configuration, not by a bug.

    ``str(error)`` reads ``path:line: message (fix: hint)`` with the parts that are known.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None, hint: str | None = None) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        location = ""
        if self.path is not None:
            location = self.path if self.line is None else f"{self.path}:{self.line}"
            location += ": "
        text = f"{location}{self.message}"
        if self.hint:
            text += f" (fix: {self.hint})"
        return text.replace("\n", " ")


class SeqTransferWarning(UserWarning):
    """Something in the user's input was repaired or inferred; the CLI prints it as one line."""


def warn(message: str) -> None:
    """Tell the user what was repaired or inferred (``warnings``: API users may filter it)."""
    import warnings

    warnings.warn(SeqTransferWarning(message), stacklevel=2)
