"""Finding dataset files on disk (or downloading them) and reading one split of a spec as stored.

A dataset folder (``DatasetSpec.folder``) is looked for, in order, under:

1. the ``--data-dir`` option (a root holding dataset folders, e.g. ``/work/shared/datasets``;
   the dataset folder itself is accepted too);
2. ``$SEQTRANSFER_DATA``;
3. the user cache ``$XDG_CACHE_HOME/seqtransfer/datasets`` (default ``~/.cache/seqtransfer/datasets``).

A folder counts only if it holds every split file of the spec (``ark`` and ``ark_oct27`` share
a folder but not files). When none does and the spec has ``downloads``, the files are fetched
into the cache; otherwise the error names the folders looked in and what to set.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from seqtransfer.data.conll import read_conll
from seqtransfer.data.conllu import read_conllu
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.dataset_spec import DatasetSpec
from seqtransfer.data.tsv import read_tsv_sentences
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import atomic_write

DOWNLOAD_TIMEOUT_SECONDS = 20
Downloader = Callable[[str, Path], None]


def cache_root() -> Path:
    """The user cache folder for datasets (respects ``$XDG_CACHE_HOME``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "seqtransfer" / "datasets"


def candidate_folders(spec: DatasetSpec, data_dir: str | Path | None) -> list[Path]:
    """The folders that may hold ``spec``'s files, in search order."""
    candidates = []
    if data_dir is not None:
        root = Path(data_dir).expanduser()
        candidates += [root, root / spec.folder] if root.name == spec.folder else [root / spec.folder]
    if os.environ.get("SEQTRANSFER_DATA"):
        candidates.append(Path(os.environ["SEQTRANSFER_DATA"]).expanduser() / spec.folder)
    candidates.append(cache_root() / spec.folder)
    return candidates


def holds_files(folder: Path, spec: DatasetSpec) -> bool:
    """True when ``folder`` holds every split file of ``spec``."""
    return all((folder / relative).is_file() for relative in spec.splits.values())


def download_file(url: str, target: Path) -> None:
    """Fetch ``url`` into ``target`` atomically (a short timeout: fail fast when offline)."""
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
        data = response.read()
    with atomic_write(target, "wb") as handle:
        handle.write(data)


def find_dataset_folder(spec: DatasetSpec, data_dir: str | Path | None = None, downloader: Downloader | None = None) -> Path:
    """The folder holding ``spec``'s files: data_dir, $SEQTRANSFER_DATA, cache, else download."""
    candidates = candidate_folders(spec, data_dir)
    for folder in candidates:
        if holds_files(folder, spec):
            return folder
    if not spec.downloads:
        raise missing_data_error(spec, candidates)
    target = cache_root() / spec.folder
    for relative, url in spec.downloads.items():
        try:
            (downloader or download_file)(url, target / relative)
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise SeqTransferError(
                f"dataset '{spec.name}' not found in {', '.join(map(str, candidates))} and downloading {url} failed ({error})",
                hint=f"connect to the internet, or download the files into {target}, or set --data-dir DIR / SEQTRANSFER_DATA=DIR",
            ) from None
    return target


def missing_data_error(spec: DatasetSpec, candidates: Sequence[Path]) -> SeqTransferError:
    """The error for a dataset found nowhere and not downloadable."""
    files = ", ".join(spec.splits.values())
    return SeqTransferError(
        f"dataset '{spec.name}' not found: no folder with {files} among {', '.join(map(str, candidates))}; it cannot be downloaded automatically ({spec.license})",
        hint=f"obtain it from {spec.url}, put it in a folder '{spec.folder}' under a data root DIR and pass --data-dir DIR or set SEQTRANSFER_DATA=DIR",
    )


def split_path(spec: DatasetSpec, split: str, data_dir: str | Path | None = None, downloader: Downloader | None = None) -> Path:
    """The file of ``split`` (for a carved dev split: the train file)."""
    if split not in spec.split_names():
        raise SeqTransferError(f"dataset '{spec.name}' has no split '{split}' (splits: {', '.join(spec.split_names())})", hint="pick one of the listed splits")
    relative = Path(spec.splits[split] if split in spec.splits else spec.splits["train"])  # a carved dev split reads the train file
    if relative.is_absolute():
        return relative
    return find_dataset_folder(spec, data_dir, downloader) / relative


def read_split(spec: DatasetSpec, split: str, data_dir: str | Path | None = None, downloader: Downloader | None = None) -> list[Sentence]:
    """Read one split of ``spec`` with the right reader, carving dev from train when needed."""
    path = split_path(spec, split, data_dir, downloader)
    if spec.format == "conllu":
        sentences = read_conllu(path)
    elif spec.format == "tsv":
        sentences = read_tsv_sentences(path, spec.columns, header=spec.header, extra_fields=spec.extra_fields, named_fields=spec.named_fields)
    else:
        sentences = read_conll(path, spec.columns, separator=getattr(spec, "separator", "auto"))
    if spec.dev_from_train and "dev" not in spec.splits and split in ("train", "dev"):
        sentences = carve_dev(sentences, split)
    return sentences


def carve_dev(sentences: list[Sentence], split: str) -> list[Sentence]:
    """The carved ``split`` ("train" or "dev") of a train file: dev = index % 10 == 9."""
    keep_dev = split == "dev"
    return [sentence for index, sentence in enumerate(sentences) if (index % 10 == 9) == keep_dev]
