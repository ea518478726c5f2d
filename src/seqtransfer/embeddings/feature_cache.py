"""The feature cache: frozen encoders' token vectors, computed once per encoder and set of sentences.

Features are stored as float16 safetensors under ``$SEQTRANSFER_CACHE`` (default
``~/.cache/seqtransfer/features``), keyed by a hash of the encoder's files and of the sentences;
every run and seed reuses them. A cached file that does not fit its sentences and encoder is
recomputed; a user's sentences (prediction) are encoded in memory, never cached. The encoder is a
Transformer folder (``embeddings/transformer.py``) or one of our recurrent LMs
(``embeddings/recurrent_lm.py``): (T, L + 1, H) arrays either way.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from seqtransfer.embeddings.recurrent_lm import is_recurrent_lm, recurrent_features
from seqtransfer.embeddings.tokenization import PAIR_SEPARATOR, marks_spaces
from seqtransfer.embeddings.transformer import encode_sentences_with, encoder_fingerprint, encoder_path, encoder_shape, has_token_types, load_encoder, tokenizer_of
from seqtransfer.errors import warn

CACHE_VERSION = 1


def cache_root() -> Path:
    return Path(os.environ.get("SEQTRANSFER_CACHE", Path.home() / ".cache" / "seqtransfer" / "features"))


def sentences_hash(sentences: Sequence[Sequence[str]]) -> str:
    return hashlib.sha256(json.dumps([list(tokens) for tokens in sentences], ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def cached_features(name: str, sentences: Sequence[Sequence[str]], pooling: str, segments: bool = False, store: bool = True, separate: bool = False) -> list[np.ndarray]:
    """Token vectors of every layer for ``sentences``, from the disk cache or computed (and cached);
    ``segments``: pairs read BERT token types (``window_input``); ``separate``: each text of a pair
    encoded alone; ``store=False``: computed in memory, the cache neither read nor written (a user's
    sentences: one file per call would pile up)."""
    if not store:
        return computed_features(name, sentences, pooling, segments, separate)
    path = cache_path(name, sentences, pooling, segments, separate)
    features = read_cached_features(path, sentences, encoder_shape(name))
    if features is None:
        features = computed_features(name, sentences, pooling, segments, separate)
        write_cached_features(path, features)
    return features


def computed_features(name: str, sentences: Sequence[Sequence[str]], pooling: str, segments: bool, separate: bool = False) -> list[np.ndarray]:
    if is_recurrent_lm(encoder_path(name)):  # characters in: no sub-words to pool, no token types
        return recurrent_features(encoder_path(name), sentences, separate=separate)
    tokenizer, model = load_encoder(name)
    return encode_sentences_with(tokenizer, model, sentences, pooling, segments, separate)


def cache_path(name: str, sentences: Sequence[Sequence[str]], pooling: str, segments: bool, separate: bool = False) -> Path:
    """The cache file of an encoder, pooling and set of sentences."""
    pairs = any(PAIR_SEPARATOR in tokens for tokens in sentences)
    # token types change only pairs' vectors, and only for an encoder that has them: else the untyped entry serves
    typed = "-segments" if segments and not separate and has_token_types(name) and pairs else ""
    alone = "-separate" if separate and pairs else ""  # each text of a pair in its own windows (a recurrent LM: its own sentence)
    # byte-level BPE tokens read as words inside a sentence ("Ġword"): other pieces than before that convention, another entry
    recurrent = is_recurrent_lm(encoder_path(name))
    spaced = "-spaced" if not recurrent and marks_spaces(tokenizer_of(name)) else ""
    # our recurrent LM's token vectors read each token's own character windows since 2026-11-28 (before: the batch's widest): another entry
    own = "-own-windows" if recurrent else ""
    # a literal <S> or </S> token reads as a word since 2026-11-30 (before: as the sentence mark): another entry for such sentences
    marks = "-marks-apart" if recurrent and any(token in ("<S>", "</S>") for tokens in sentences for token in tokens) else ""
    key = f"v{CACHE_VERSION}-{encoder_fingerprint(name)}-{pooling}{typed}{alone}{spaced}{own}{marks}-{sentences_hash(sentences)}"
    return cache_root() / f"{key}.safetensors"


def read_cached_features(path: Path, sentences: Sequence[Sequence[str]], shape: tuple[int, int]) -> list[np.ndarray] | None:
    """The cached (T, L + 1, H) arrays of ``sentences``, or None: no file, or a damaged one or one
    whose arrays do not fit the sentences and the encoder's ``shape`` (warned about: recomputed)."""
    if not path.is_file():
        return None
    try:
        stored = load_file(str(path))
        features = [stored[str(index)] for index in range(len(sentences))]
    except Exception:  # safetensors raises its own errors for a truncated or garbled file
        warn(f"feature cache file {path} is damaged: recomputing it")
        return None
    for number, (tokens, array) in enumerate(zip(sentences, features), start=1):
        if array.shape != (len(tokens), *shape):
            warn(f"feature cache file {path} holds a {array.shape} array for sentence {number}, expected {(len(tokens), *shape)}: recomputing it")
            return None
    return features


def write_cached_features(path: Path, features: list[np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # written whole, then renamed: a reader never sees half a file
    save_file({str(index): array for index, array in enumerate(features)}, str(partial))
    os.replace(partial, path)
