"""A run directory is the model: it holds everything needed to rebuild and use it.

    config.yaml          the fully filled RunConfig
    vocabulary.json      words, characters, labels
    model.safetensors    the best weights (no pickle anywhere)
    metrics.json         dev/test scores, epoch history, timing, parameter counts
    predictions/*.conll  token, gold and predicted label per line, space-separated (conlleval's input)
    log.txt              the training log

``metrics.json`` is written last: a folder without it is an unfinished run.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
import yaml
from safetensors import safe_open
from safetensors.torch import load_file

from seqtransfer.config import RunConfig, check_values, config_from_dict, dump_config
from seqtransfer.data.tag_feature import tag_predictor
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.device import resolve_device
from seqtransfer.embeddings.packaged import PACKAGED
from seqtransfer.embeddings.recurrent_lm import folder_architecture
from seqtransfer.embeddings.transformer import encoder_fingerprint, encoder_path
from seqtransfer.errors import SeqTransferError, warn
from seqtransfer.files import read_json, write_json, write_text
from seqtransfer.models.registry import build_model
from seqtransfer.run_members import (  # noqa: F401 - re-exported: callers read them as rundir.read_members, rundir.MEMBERS, ...
    COMBINATIONS,
    MEMBERS,
    MEMBERS_HINT,
    first_member,
    is_ensemble,
    member_directories,
    read_members,
    read_members_file,
    write_members,
)
from seqtransfer.training.checkpoint import save_tensors
from seqtransfer.training.prediction import Predictor, load_tagger

CONFIG = "config.yaml"
VOCABULARY = "vocabulary.json"
WEIGHTS = "model.safetensors"
METRICS = "metrics.json"
REQUIRED = (CONFIG, VOCABULARY, WEIGHTS, METRICS)
EMBEDDING_TABLES = ("word_representation.word_embedding.weight", "word_representation.character_encoder.embedding.weight")


@dataclass
class LoadedRun:
    """A model rebuilt from its run directory."""

    directory: Path
    config: RunConfig
    vocabularies: Vocabularies
    model: torch.nn.Module
    metrics: dict


LOCK = "train.lock"
DAMAGED = "the run directory was truncated or edited: train it again, or restore it from a copy"


@contextlib.contextmanager
def writer_lock(directory: Path) -> Iterator[None]:
    """Hold the run directory's lock while training writes it; a second writer gets one clear line."""
    import fcntl  # POSIX; the lock file is removed when the run ends

    directory.mkdir(parents=True, exist_ok=True)
    busy = SeqTransferError("another seqtransfer process is training into this run directory", path=directory, hint="wait for it to finish, or choose another --output")
    handle = open(directory / LOCK, "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # The holder before us may have removed the file we opened: then our lock guards nothing.
        if not (directory / LOCK).exists() or os.fstat(handle.fileno()).st_ino != os.stat(directory / LOCK).st_ino:
            raise BlockingIOError
    except OSError:
        handle.close()
        raise busy from None
    try:
        yield
    finally:
        (directory / LOCK).unlink(missing_ok=True)  # while still holding it: a newcomer sees the file gone and gives up
        handle.close()


def remove_partial_files(directory: Path) -> None:
    """Delete temporary files an interrupted atomic write left behind (``.NAME.XXXX.tmp``)."""
    for leftover in directory.rglob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def read_saved_config(directory: Path) -> RunConfig:
    """The config.yaml of a run directory (safe YAML: an object tag is an error, never executed)."""
    path = directory / CONFIG
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise SeqTransferError(f"config.yaml is not readable YAML ({type(error).__name__})", path=path, hint=DAMAGED) from None
    if not isinstance(values, dict):
        raise SeqTransferError("config.yaml does not hold a mapping of settings", path=path, hint=DAMAGED)
    return config_from_dict(upgrade_saved(values), str(path))


def upgrade_saved(values: dict) -> dict:
    """Settings as earlier versions saved them, in today's form."""
    multitask = values.get("multitask")
    if isinstance(multitask, dict) and multitask.get("unified") is False:  # a flag before it named the unified data's folder
        multitask["unified"] = None
    model = values.get("model")
    if isinstance(model, dict) and "tag_count" not in model and model.get("encoder_mode") == "finetune":
        # saved before fine-tuned encoders read encoder_pooling (the same change added tag_count):
        # such a run was trained on first sub-words whatever its encoder_pooling said
        model["encoder_pooling"] = "first"
    return values


def read_run_config(directory: Path) -> RunConfig:
    """The config of a finished run, with every value checked (an edited ``hidden: 15`` is one line)."""
    config = read_saved_config(directory)
    try:
        return check_values(config)
    except SeqTransferError as error:
        raise SeqTransferError(f"config.yaml: {error.message}", path=directory / CONFIG, hint=DAMAGED) from None


def read_vocabularies(directory: Path) -> Vocabularies:
    """A run's vocabularies; those of a run that reads predicted input tags predict them with its tagger (``tagger``)."""
    path = directory / VOCABULARY
    try:
        vocabularies = Vocabularies.from_json(read_json(path))
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        raise SeqTransferError("vocabulary.json is damaged (not the JSON seqtransfer writes)", path=path, hint=DAMAGED) from None
    if vocabularies.tagger:
        vocabularies.tag_predictor = tag_predictor(tagger, vocabularies.tagger)
    return vocabularies


@functools.lru_cache(maxsize=4)
def tagger(directory: str) -> Predictor:
    """The tagging run at ``directory`` (``model.tag_tagger``), loaded once per process (``load_tagger``)."""
    return load_tagger(directory, load_run)


def weight_shapes(directory: Path) -> dict[str, tuple[int, ...]]:
    """Names and shapes of the saved weights, from the safetensors header only (no data read)."""
    path = directory / WEIGHTS
    try:
        with safe_open(str(path), framework="pt") as weights:
            return {name: tuple(weights.get_slice(name).get_shape()) for name in weights.keys()}
    except Exception as error:  # safetensors raises its own SafetensorError (and OSError) on a bad header
        raise SeqTransferError(f"model.safetensors is damaged ({str(error).splitlines()[0][:120]})", path=path, hint=DAMAGED) from None


def check_weights_fit(config: RunConfig, vocabularies: Vocabularies, shapes: dict[str, tuple[int, ...]], directory: Path) -> None:
    """Compare the saved weights with the model the config describes, built on the meta device
    (no memory): a config edited to huge sizes is refused before anything is allocated."""
    with torch.device("meta"):
        model = build_model(config.model, vocabularies)
        stored = getattr(model, "stored", lambda name: True)
        expected = {name: tuple(tensor.shape) for name, tensor in model.state_dict().items() if stored(name)}
    missing, unexpected = sorted(expected.keys() - shapes.keys()), sorted(shapes.keys() - expected.keys())
    wrong = [name for name in sorted(expected.keys() & shapes.keys()) if expected[name] != shapes[name]]
    if missing or unexpected or wrong:
        name = (wrong or missing or unexpected)[0]
        detail = f"{name}: config.yaml and vocabulary.json say {expected.get(name)}, model.safetensors holds {shapes.get(name)}"
        raise SeqTransferError(f"the weights do not match the configuration ({detail})", path=directory, hint=DAMAGED)


def save_setup(directory: Path, config: RunConfig, vocabularies: Vocabularies) -> None:
    """Write what defines the run before training starts."""
    directory.mkdir(parents=True, exist_ok=True)
    write_text(directory / CONFIG, dump_config(config))
    write_json(directory / VOCABULARY, vocabularies.to_json())


def save_weights(directory: Path, state: dict[str, torch.Tensor], model: torch.nn.Module | None = None) -> None:
    """The weights a run directory holds (all, or what ``model.stored`` keeps: an adapter, not its frozen encoder)."""
    stored = getattr(model, "stored", lambda name: True)
    save_tensors(directory / WEIGHTS, {name: tensor for name, tensor in state.items() if stored(name)})


def save_metrics(directory: Path, metrics: dict) -> None:
    write_json(directory / METRICS, metrics)


def parameters_without_embeddings(directory: Path) -> int:
    """Parameters of a saved model minus its word and character embedding tables (file header only).

    Model sizes are compared this way: a transferred model's tables hold the source's and the
    target's words and characters, which says nothing about the size of the network.
    """
    members = read_members(directory)
    if members:  # several models predicting together (self-labelling): all of them
        return sum(parameters_without_embeddings(member) for member in members[0])
    with safe_open(str(directory / WEIGHTS), framework="pt") as weights:
        shapes = [weights.get_slice(name).get_shape() for name in weights.keys() if name not in EMBEDDING_TABLES]
    return sum(math.prod(shape) for shape in shapes)


def check_run_directory(directory: Path) -> None:
    """Raise a one-line error unless ``directory`` holds a finished run."""
    if not directory.is_dir():
        raise SeqTransferError("run directory not found", path=directory, hint="pass a folder written by `seqtransfer train`")
    missing = [name for name in REQUIRED if not (directory / name).is_file()]
    if missing:
        raise SeqTransferError(f"not a finished seqtransfer run (missing {', '.join(missing)})", path=directory, hint="pass a folder written by `seqtransfer train`, or re-run training to finish it")


ENCODER_HINT = "point model.encoder in the run's config.yaml at the encoder folder it was trained on"
SOURCE_HINT = "point transfer.source in the run's config.yaml at the source run it was trained from"


def holds_encoder(encoder: str, expected_hash: str) -> bool:
    """Whether an encoder folder's hash is ``expected_hash``, with or without our LM's training report
    (as runs before 2026-11-26 recorded it)."""
    return expected_hash in (encoder_fingerprint(encoder), encoder_fingerprint(encoder, with_training_report=True))


def encoder_is_the_runs(model_config) -> bool:
    """Whether ``model.encoder`` holds the encoder the run was trained on; runs that recorded no hash pass."""
    return not model_config.encoder_hash or holds_encoder(model_config.encoder, model_config.encoder_hash)


def check_encoder_hash(config: RunConfig, directory: Path) -> str | None:
    """The encoder folder must be the one the run was trained on: a run on frozen features, or one
    that saved only its adapter, reads the encoder's weights from it (they fit no other), so another
    encoder is refused; a fully fine-tuned run holds its own weights and reads only the tokenizer
    from the folder, so it is warned about (the warning returned). Runs trained before the hash was
    recorded pass, and so do those that recorded it with our LM's training report (before 2026-11-26).
    Our own LMs (recurrent, AWD-LSTM) are refused even fully fine-tuned: the run reads their
    character set or word vocabulary and sizes from the folder, which another LM's would misread."""
    if encoder_is_the_runs(config.model):
        return None
    found = encoder_fingerprint(config.model.encoder)
    message = f"the encoder at {config.model.encoder} differs from the one this run was trained on (hash {found}, expected {config.model.encoder_hash})"
    ours = folder_architecture(encoder_path(config.model.encoder)) is not None
    if config.model.encoder_mode == "finetune" and config.model.encoder_adapter is None and not ours:
        warn(f"{directory}: {message}; the run holds its own encoder weights and reads only the tokenizer from that folder")
        return message
    raise SeqTransferError(message, path=directory, hint=ENCODER_HINT)


def find_beside_run(name: str, directory: Path, matches) -> Path:
    """A folder a run names by a path (its source run, its encoder): an absolute path as saved; a
    relative one (from where the run was trained) from the working directory or else from a folder
    holding the run directory (a run read from elsewhere, or a project moved whole): the first of
    those for which ``matches(folder)`` holds, else the first that exists, else the path as saved."""
    path = Path(name)
    holders = dict.fromkeys([*directory.absolute().parents, *directory.resolve().parents])  # a linked run directory: its link's folders, then its own
    candidates = [path] if path.is_absolute() else list(dict.fromkeys([path, *(holder / path for holder in holders)]))
    existing = [folder for folder in candidates if folder.is_dir()]
    return next((folder for folder in existing if matches(folder)), existing[0] if existing else path)


def find_run_encoder(name: str, directory: Path, expected_hash: str | None) -> str:
    """The encoder folder a run names (``find_beside_run``): a packaged encoder as it is; else the
    folder whose hash is the run's, or the first that exists (its hash then checked: refused or warned about)."""
    if name in PACKAGED:
        return name

    def matches(folder: Path) -> bool:
        try:
            return bool(expected_hash) and holds_encoder(str(folder), expected_hash)
        except SeqTransferError:  # an incomplete folder
            return False

    found = find_beside_run(name, directory, matches)
    if not found.is_dir():
        raise SeqTransferError(f"the run's encoder folder {name} is not there", path=directory, hint=ENCODER_HINT)
    return name if found == Path(name) else str(found)


def find_run_source(run: LoadedRun) -> Path:
    """The source run a transfer run read (``find_beside_run``): the one whose weights' hash is the
    one its metrics recorded (a run recorded before the hash: the first that holds weights); one line
    when it is not there, or holds other weights."""
    saved, expected = run.config.transfer.source, run.metrics.get("source_weights")
    found = find_beside_run(saved, run.directory, lambda folder: weights_fingerprint(folder) == expected if expected else weights_fingerprint(folder) is not None)
    held = weights_fingerprint(found)
    if held is None:
        raise SeqTransferError(f"the run's source run {saved} is not there", path=run.directory, hint=SOURCE_HINT)
    if expected and held != expected:
        raise SeqTransferError(f"the source run at {found} holds other weights than the run was trained from (retrained or replaced)", path=run.directory, hint=SOURCE_HINT)
    return found


def weights_fingerprint(directory: str | Path) -> str | None:
    """A hash of the weights a transfer from ``directory`` reads (its first member's, for a folder of
    models): which instance of a source a target was trained from, since a source trained again
    from the same settings, in another session, need not have the same weights. None if there are none."""
    path = first_member(directory) / WEIGHTS
    if not path.is_file():
        return None
    status = path.stat()
    return file_hash(str(path.resolve()), status.st_size, status.st_mtime_ns)


def source_weights(source: str | Path | None) -> dict:
    """{"source_weights": hash} of the source run a transfer read, for its metrics and records
    (experiments/kept.py checks a kept cell against it); {} without a source."""
    fingerprint = weights_fingerprint(source) if source else None
    return {"source_weights": fingerprint} if fingerprint else {}


def encoder_weights(model_config) -> dict:
    """{"encoder_weights": hash} of the pretrained encoder folder a run read (its tokenizer, config
    and weights), for its metrics and records (a kept cell is checked against it as against its
    source's weights); {} for a model without an encoder."""
    return {"encoder_weights": model_config.encoder_hash} if getattr(model_config, "encoder_hash", None) else {}


@functools.lru_cache(maxsize=64)
def file_hash(path: str, size: int, modified: int) -> str:
    """sha256 of a file (the first 16 hex digits); ``size`` and ``modified`` key the cache."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def read_run_setup(directory: Path) -> tuple[RunConfig, Vocabularies]:
    """A run directory's settings and vocabularies, its encoder folder found (``find_run_encoder``)."""
    check_run_directory(directory)
    config = read_run_config(directory)
    vocabularies = read_vocabularies(directory)
    if config.model.encoder:
        saved, config.model.encoder = config.model.encoder, find_run_encoder(config.model.encoder, directory, config.model.encoder_hash)
        if vocabularies.encoder == saved:  # the sub-words and features the encoded sentences carry come from it too
            vocabularies.encoder = config.model.encoder
    return config, vocabularies


def check_finite(state: dict[str, torch.Tensor], path: Path) -> None:
    """Weights holding NaN or infinity predict garbage with a straight face: refuse them."""
    broken = [name for name, tensor in state.items() if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())]
    if broken:
        raise SeqTransferError(
            f"{len(broken)} weight tensor(s) hold NaN or infinite values ({', '.join(broken[:3])}{', ...' if len(broken) > 3 else ''})",
            path=path,
            hint="the run diverged or the file was changed: train it again (--restart)",
        )


def load_run(directory: str | Path, device: str | None = "cpu") -> LoadedRun:
    """Rebuild the model of a run directory (safetensors + YAML + JSON, no pickle) on ``device``
    (``auto``: the first GPU, else the CPU); a run trained on any device loads on any other."""
    directory = Path(directory)
    config, vocabularies = read_run_setup(directory)
    differs = check_encoder_hash(config, directory) if config.model.encoder else None  # before the weights are compared with it: another encoder is said to be one
    try:
        check_weights_fit(config, vocabularies, weight_shapes(directory), directory)
    except SeqTransferError:
        if differs:  # a fine-tuned run's encoder folder now holds an encoder of other sizes
            raise SeqTransferError(f"{differs}, and the run's weights do not fit it", path=directory, hint=ENCODER_HINT) from None
        raise
    model = build_model(config.model, vocabularies)
    try:
        state = load_file(str(directory / WEIGHTS))
    except Exception as error:  # offsets past the end of the file, truncated data
        raise SeqTransferError(f"model.safetensors is damaged ({str(error).splitlines()[0][:120]})", path=directory / WEIGHTS, hint=DAMAGED) from None
    check_finite(state, directory / WEIGHTS)
    if hasattr(model, "stored") and len(state) < len(model.state_dict()):  # an adapter's run: the frozen encoder comes from its folder
        model.load_pretrained()
        model.load_state_dict(state, strict=False)
    else:
        model.load_state_dict(state)
    model.to(resolve_device(device))
    model.eval()
    try:
        metrics = read_json(directory / METRICS)
    except (ValueError, UnicodeDecodeError):
        raise SeqTransferError("metrics.json is damaged (not JSON)", path=directory / METRICS, hint=DAMAGED) from None
    return LoadedRun(directory, config, vocabularies, model, metrics)
