"""Atomic file writing: a reader never sees a half-written file.

Everything the toolkit writes (configs, vocabularies, weights, metrics, predictions) goes
through :func:`atomic_write`, which writes to a temporary file in the same folder and renames
it over the target only once the content is complete.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from seqtransfer.errors import SeqTransferError


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary sibling of ``path`` for writing; rename it to ``path`` on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    binary = "b" in mode
    try:
        with os.fdopen(descriptor, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary_name, 0o666 & ~_current_umask())  # mkstemp makes 0600; give the usual mode
        os.replace(temporary_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary_name)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_write(path) as handle:
        handle.write(text)


def write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def read_json(path: str | Path) -> Any:
    """Read a JSON file."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_json_lines(path: str | Path, hint: str) -> list[tuple[int, Any]]:
    """The (line number, value) of each non-empty line of a JSON-lines file; a line that is not JSON
    is one clear error naming it (``hint``: what the file's lines are); a missing file has none."""
    path = Path(path)
    if not path.is_file():
        return []
    values = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            raise SeqTransferError(f"not a JSON record ({error.msg})", path=path, line=number, hint=hint) from None
    return values


def load_yaml(text: str) -> Any:
    """YAML text as values, with the safe loader (nothing in it is executed) and YAML 1.2's booleans:
    only true and false. YAML 1.1 also reads yes, no, on and off as booleans, so ``train.amp=off``
    or ``amp: off`` would become False; here they stay text (a boolean setting accepts them too:
    ``config._coerce``, ``experiments.spec.booleans_read``)."""
    return yaml.load(text, Loader=_yaml12_loader())


@functools.cache
def _yaml12_loader():
    """PyYAML's safe loader with YAML 1.2's booleans (built once)."""
    import re

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"] for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    return Loader


# The paper experiments and their config files ship inside the package; in a clone, the folder
# `experiments/` at the repository's root links to it, so the paths the docs give work in both.
SHIPPED_EXPERIMENTS = Path(__file__).resolve().parent / "paper_experiments"


def shipped_or_given(path: Path) -> Path:
    """``path``, or the shipped copy of a relative ``experiments/...`` path that does not exist from
    the working folder (an installed wheel run outside a clone)."""
    if path.exists() or path.is_absolute() or not path.parts or path.parts[0] != "experiments":
        return path
    shipped = SHIPPED_EXPERIMENTS.joinpath(*path.parts[1:])
    return shipped if shipped.exists() else path


def read_yaml_mapping(path: str | Path, what: str) -> dict:
    """Read a YAML file that must hold a mapping (safe loader: nothing in it is executed).

    ``what`` names the kind of file in error messages ("config file", "experiment file").
    """
    path = shipped_or_given(Path(path))
    if not path.is_file():
        raise SeqTransferError(f"{what} not found", path=path, hint="check the path")
    try:
        values = load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise SeqTransferError("invalid YAML", path=path, line=mark.line + 1 if mark else None, hint="fix the syntax") from None
    except UnicodeDecodeError:
        raise SeqTransferError(f"{what} is not UTF-8", path=path, hint="re-encode it to UTF-8") from None
    if values is not None and not isinstance(values, dict):
        raise SeqTransferError(f"a {what} must hold a mapping of keys to values", path=path)
    return values or {}
