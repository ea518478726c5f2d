"""What a run's settings must satisfy before its run directory is written: one error line each
(adapters without a fine-tuned encoder, settings a scheme that trains nothing would ignore, a causal
LM read as a sentence encoder, teachers that cannot teach, an unfinished run with other settings)."""

from __future__ import annotations

from pathlib import Path

from seqtransfer import rundir
from seqtransfer.config import RunConfig, config_to_dict
from seqtransfer.corpora.task_data import TaskData
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.embeddings.transformer import is_causal_encoder
from seqtransfer.errors import SeqTransferError
from seqtransfer.training.checkpoint import check_fits
from seqtransfer.transfer.distillation import check_teacher, gives_label_distributions, teacher_directories
from seqtransfer.transfer.schemes import Scheme


def check_adapter(config: RunConfig) -> None:
    """Adapters (LoRA, Houlsby) live inside a fine-tuned encoder: elsewhere they would be silently ignored."""
    adapter, model = config.model.encoder_adapter, config.model
    if adapter and not (model.encoder and model.encoder_mode == "finetune"):
        has = f"encoder {model.encoder} in mode {model.encoder_mode}" if model.encoder else "no encoder"
        raise SeqTransferError(
            f"model.encoder_adapter={adapter} adapts a fine-tuned encoder; this run has {has}", hint="add model.encoder=NAME model.encoder_mode=finetune, or drop model.encoder_adapter"
        )


def check_nothing_is_added(config: RunConfig, scheme: Scheme) -> None:
    """A scheme that trains nothing (the source as it is) refuses settings that would do nothing."""
    ignored = [
        key
        for key, value in (
            ("transfer.adaptations", config.transfer.adaptations),
            ("transfer.distill_from", config.transfer.distill_from),
            ("transfer.auxiliary_lm_weight", config.transfer.auxiliary_lm_weight),
        )
        if value
    ]
    if ignored:
        raise SeqTransferError(f"{scheme.name} trains nothing, so {', '.join(ignored)} would do nothing", hint="drop them, or use --method finetune")


def check_fine_tuned_encoder(data: TaskData, scheme: Scheme) -> None:
    """A fine-tuned encoder serves the task kinds that have an encoder model, from scratch or from an encoder's run."""
    if "encoder" not in data.kind.architectures or scheme.architecture != "tagger":
        raise SeqTransferError(
            f"a fine-tuned encoder serves tagging, parsing and sentence tasks from scratch or from a fine-tuned encoder's run (finetune, features), not {data.kind.name} / {scheme.name}",
            hint="use model.encoder_mode=features (frozen encoder vectors) for this model",
        )


def check_causal_encoder(config: RunConfig) -> None:
    """A left-to-right encoder's first vector ([CLS]) sees only itself: a fine-tuned causal LM pools a
    sentence by its mean (one line otherwise). Its auxiliary LM loss predicts each next sub-word
    (``transfer/masked_lm.py``)."""
    model = config.model
    if not is_causal_encoder(model.encoder):
        return
    if model.architecture in ("encoder_classifier", "encoder_regressor") and model.sentence_pooling == "cls":
        raise SeqTransferError(
            f"the encoder {model.encoder} reads left to right (a causal LM): its first vector ([CLS]) sees only the first token, not the sentence",
            hint="add model.sentence_pooling=mean (the mean of the token vectors)",
        )


def check_distillation(config: RunConfig, model, data: TaskData, labels: Vocabulary) -> None:
    """Distillation teaches label distributions: a tagger's per token or a classifier's per sentence,
    not a parser's trees or a regressor's scores; and each teacher run gives them in this task's tag
    set (read from its run directory, its model built on the meta device: nothing loaded). Refused
    before the run directory is written."""
    if config.transfer.distill_from and not gives_label_distributions(model):
        raise SeqTransferError(f"distillation (transfer.distill_from) teaches taggers and sentence classifiers, not a {data.kind.name} model", hint="drop transfer.distill_from")
    for teacher in teacher_directories(config.transfer.distill_from):
        check_teacher(teacher, labels)


def check_auxiliary_lm(config: RunConfig, scheme: Scheme) -> None:
    """The auxiliary LM's layers train beside the layers they read: not under a scheme that trains only the classifier."""
    if config.transfer.auxiliary_lm_weight and not any("language_model.".startswith(prefix) for phase in scheme.phases(config.transfer) for prefix in phase.trainable):
        raise SeqTransferError(
            f"transfer.auxiliary_lm_weight trains LM layers beside the layers they read; scheme {scheme.name} trains only the classifier",
            hint="drop transfer.auxiliary_lm_weight, or use finetune or pretrand",
        )


def check_resumable(directory: Path, config: RunConfig, model=None) -> None:
    """A run directory with an unfinished run resumes only with the same configuration, and (with
    ``model``) only from checkpoints that are whole and hold this model's weights: all checked
    before anything in the directory is rewritten. A changed setting is named first (a checkpoint
    that does not fit because of it is not damaged: the same command resumes it)."""
    if (directory / rundir.CONFIG).is_file():
        saved = rundir.read_saved_config(directory)
        differing = config_differences(saved, config)
        if differing:
            raise SeqTransferError(
                f"this run directory holds an unfinished run with other settings ({', '.join(differing)})",
                path=directory,
                hint="run the same command to resume it, pass --restart to start it over, or choose another --output",
            )
    if model is not None:
        for phase in sorted((directory / "checkpoint").glob("*/")):
            check_fits(phase, model)


# Settings whose default is null and which a run fills in itself before this check (the optimizer,
# its rate and schedule, the metric, an encoder's hash, the task kinds, the regression scores'
# mean): a run directory of an earlier version may hold them as null.
RESOLVED_AT_RUN_TIME = frozenset({"train.optimizer", "train.learning_rate", "train.schedule", "data.metric", "model.encoder_hash", "model.task_kinds", "model.score_mean"})


def config_differences(first: RunConfig, second: RunConfig) -> list[str]:
    """Dotted keys whose values differ between a saved (``first``) and a new config.

    Ignored: where data lives, threads, device, the evaluation batch size and how often a long epoch is
    checkpointed (none changes the trained weights), and ``data.scheme`` of a registered dataset (its registry entry decides).
    A saved null counts like any value (an interrupted run without ``data.max_train_sentences``,
    or without GloVe, and a new command with it are other runs, whose weights do not fit each
    other), except for the settings a run resolves itself (``RESOLVED_AT_RUN_TIME``), which
    earlier versions saved unresolved.
    """
    ignored = {"data.data_dir", "train.threads", "train.share_cores", "train.device", "train.evaluation_batch_size", "train.log_to", "train.checkpoint_minutes"}
    if second.data.dataset:
        ignored.add("data.scheme")
    first_values, second_values = config_to_dict(first), config_to_dict(second)
    differing = []
    for section, values in second_values.items():
        for key, value in values.items():
            saved = first_values.get(section, {}).get(key)
            name = f"{section}.{key}"
            if name not in ignored and saved != value and not (saved is None and name in RESOLVED_AT_RUN_TIME):
                differing.append(f"{section}.{key}")
    return differing
