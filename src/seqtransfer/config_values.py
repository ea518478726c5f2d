"""The value checks of a run configuration: settings whose type is right but whose value cannot
train (:func:`check_values`), and settings that nothing in a run reads (:func:`idle_settings`).

``seqtransfer.config`` imports these names back, so they can be imported from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seqtransfer.config_sections import RunConfig
from seqtransfer.errors import SeqTransferError
from seqtransfer.learning_rate_schedules import SCHEDULES


def fold_of(value: str) -> tuple[int, int] | None:
    """(k, K) of "k/K" with 1 <= k <= K and K >= 2, else None."""
    number, _, count = str(value).partition("/")
    if not (number.strip().isdigit() and count.strip().isdigit()):
        return None
    number, count = int(number), int(count)
    return (number, count) if count >= 2 and 1 <= number <= count else None


# the names of data/tokenize.py's TOKENIZERS (a higher layer); tests/test_bad_input.py checks that they agree
TOKENIZER_NAMES = ("whitespace", "tweet", "slavic")


def schedule_names() -> list[str]:
    """The learning-rate schedules' names (``learning_rate_schedules.SCHEDULES``, read when asked: a
    schedule registered at run time passes the check)."""
    return list(SCHEDULES)


# (key, test, what the value must be: text, or a function giving it from a registry): settings whose type is right but whose value cannot train.
_VALUE_RULES: list[tuple[str, Callable[[Any], bool], str | Callable[[], str]]] = [
    ("model.word_dimension", lambda value: value > 0, "a positive integer"),
    ("model.char_dimension", lambda value: value > 0, "a positive integer"),
    ("model.char_hidden", lambda value: value > 0 and value % 2 == 0, "a positive even integer (it counts both directions)"),
    ("model.hidden", lambda value: value > 0 and value % 2 == 0, "a positive even integer (it counts both directions)"),
    ("model.random_hidden", lambda value: value > 0 and value % 2 == 0, "a positive even integer (it counts both directions)"),
    ("model.parser_hidden", lambda value: value > 0 and value % 2 == 0, "a positive even integer (it counts both directions)"),
    ("model.parser_layers", lambda value: value >= 1, "at least 1"),
    ("model.arc_hidden", lambda value: value > 0, "a positive integer"),
    ("model.relation_hidden", lambda value: value > 0, "a positive integer"),
    ("model.dropout", lambda value: 0.0 <= value < 1.0, "in [0, 1)"),
    ("model.projection", lambda value: value > 0, "a positive integer"),
    ("model.tag_dimension", lambda value: value > 0, "a positive integer"),
    ("model.normalized_scale", lambda value: value > 0, "positive"),
    ("model.inputs", lambda value: value in ("both", "words", "characters"), "both, words or characters"),
    ("model.feature_extractor", lambda value: value in (None, "bilstm", "none"), "bilstm or none (or null: the model's own)"),
    ("model.encoder_pooling", lambda value: value in ("first", "mean"), "first or mean"),
    ("model.sentence_pooling", lambda value: value in ("cls", "mean"), "cls or mean"),
    ("model.pair_encoding", lambda value: value in ("joint", "separate"), "joint or separate"),
    ("model.bcn_maxout_layers", lambda value: value >= 1, "at least 1"),
    ("model.feature_layers", lambda value: value >= 1, "at least 1"),
    ("model.encoder_mode", lambda value: value in ("features", "finetune"), "features or finetune"),
    ("model.encoder_adapter", lambda value: value in (None, "lora", "houlsby"), "lora or houlsby (or null)"),
    ("model.adapter_size", lambda value: value >= 1, "at least 1"),
    ("model.lora_rank", lambda value: value >= 1, "at least 1"),
    ("model.lora_alpha", lambda value: value > 0, "positive"),
    ("model.discriminator_hidden", lambda value: value >= 0, "zero (no discriminator) or a positive integer"),
    ("train.adversarial_weight", lambda value: value > 0, "positive"),
    ("train.log_to", lambda value: value in (None, "tensorboard"), "tensorboard (or null: no logging beside metrics.json)"),
    ("transfer.discriminative_factor", lambda value: value >= 1.0, "at least 1"),
    ("transfer.random_plus_plus_trains", lambda value: value in ("random_units", "random_branch"), "random_units or random_branch"),
    ("transfer.random_branch_learning_rate", lambda value: value is None or value > 0, "positive (or null: the random branch at train.learning_rate)"),
    ("transfer.l2sp_weight", lambda value: value > 0, "positive"),
    ("transfer.ewc_weight", lambda value: value > 0, "positive"),
    ("transfer.ewc_batches", lambda value: value >= 1, "at least 1"),
    ("transfer.distillation_temperature", lambda value: value > 0, "positive"),
    ("transfer.distillation_weight", lambda value: value > 0, "positive"),
    ("transfer.auxiliary_lm_weight", lambda value: value >= 0, "zero (off) or positive"),
    ("transfer.auxiliary_lm_words", lambda value: value >= 2, "at least 2"),
    ("multitask.sampling", lambda value: value in ("round_robin", "proportional"), "round_robin or proportional"),
    ("multitask.weight_growth", lambda value: value >= 1.0, "at least 1 (1 = constant weights)"),
    ("multitask.weight_schedule", lambda value: value in ("geometric", "linear", "constant"), "geometric, linear or constant"),
    ("multitask.weight_ramp_epochs", lambda value: value >= 1, "at least 1"),
    (
        "multitask.loss_weights",
        lambda value: value is None or all(isinstance(weight, (int, float)) and not isinstance(weight, bool) and weight > 0 for weight in value.values()),
        "a mapping of task -> positive weight (or null)",
    ),
    ("train.learning_rate", lambda value: value is None or value > 0, "positive"),
    ("train.head_learning_rate", lambda value: value is None or value > 0, "positive (or null: the head at train.learning_rate)"),
    ("train.betas", lambda value: len(value) == 2 and all(isinstance(beta, (int, float)) and not isinstance(beta, bool) and 0.0 <= beta < 1.0 for beta in value), "two numbers in [0, 1)"),
    ("train.momentum", lambda value: 0.0 <= value < 1.0, "in [0, 1)"),
    ("train.learning_rate_decay", lambda value: value >= 0, "zero or positive"),
    ("train.warmup", lambda value: 0.0 <= value < 1.0, "in [0, 1)"),
    ("train.schedule", lambda value: value is None or value in schedule_names(), lambda: f"one of {', '.join(schedule_names())} (or null)"),
    ("train.weight_decay", lambda value: value >= 0, "zero or positive"),
    ("train.gradient_clip", lambda value: value >= 0, "zero (no clipping) or positive"),
    ("train.batch_size", lambda value: value >= 1, "at least 1"),
    ("train.batching", lambda value: value in ("tokens", "subwords", "random"), "tokens, subwords or random"),
    ("train.evaluation_batch_size", lambda value: value >= 1, "at least 1"),
    ("train.max_epochs", lambda value: value >= 1, "at least 1 (0 epochs would save an untrained model as a finished run)"),
    ("train.seed", lambda value: 0 <= value < 2**32, "a whole number from 0 to 2**32 - 1 (numpy's range)"),
    ("train.patience", lambda value: value >= 1, "at least 1"),
    ("train.min_epochs", lambda value: value >= 0, "zero or more"),
    ("train.checkpoint_minutes", lambda value: value >= 0, "zero (checkpoints at epoch ends only) or positive"),
    ("train.amp", lambda value: value in ("off", "auto", "bf16", "fp16"), "off, auto, bf16 or fp16"),
    ("train.threads", lambda value: value >= 1, "at least 1"),
    ("data.pseudo_weight", lambda value: value > 0, "positive"),
    ("data.convert_scheme", lambda value: value in (None, "iob1", "iob2", "bioes"), "iob1, iob2 or bioes (or null: the labels as they are)"),
    ("data.anneal_start", lambda value: 0 < value <= 1, "a share in (0, 1]"),
    ("data.anneal_decay", lambda value: 0 < value <= 1, "in (0, 1]"),
    ("data.train_fraction", lambda value: value is None or 0 < value <= 1, "a share in (0, 1] (or null for all)"),
    ("data.bootstrap", lambda value: value is None or value >= 0, "a seed, 0 or more (or null)"),
    ("data.select_by", lambda value: value in ("moore_lewis", "js"), "moore_lewis or js"),
    ("data.select_top", lambda value: value is None or 0 < value <= 100, "a percentage in (0, 100] (or null)"),
    ("data.select_tokenizer", lambda value: value in TOKENIZER_NAMES, "one of " + ", ".join(TOKENIZER_NAMES)),
    ("train.adversarial_tokenizer", lambda value: value in TOKENIZER_NAMES, "one of " + ", ".join(TOKENIZER_NAMES)),
    ("train.adversarial_schedule", lambda value: value in ("constant", "ganin"), "constant or ganin"),
    ("data.max_train_sentences", lambda value: value is None or value >= 1, "at least 1 (or null for all)"),
    ("data.max_sentence_length", lambda value: value is None or value >= 1, "at least 1 (or null for no limit)"),
    ("data.exclude_fold", lambda value: value is None or fold_of(value) is not None, "k/K with 1 <= k <= K and K >= 2, e.g. 1/5 (or null)"),
    ("model.tag_jackknife", lambda value: value == 0 or value >= 2, "0 (off) or a number of folds, at least 2"),
    (
        "train.record_activations",
        lambda value: value is None or all(isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 0 for epoch in value),
        "a list of epoch numbers, 0 = before training (or null)",
    ),
]


# settings that change nothing unless another setting asks for them: (key, whether this run reads it, what it needs)
_IDLE_RULES: tuple[tuple[str, Callable[[RunConfig], bool], str], ...] = (
    ("transfer.discriminative_factor", lambda config: "discriminative" in config.transfer.adaptations, "transfer.adaptations=[discriminative]"),
    ("transfer.random_plus_plus_trains", lambda config: config.transfer.scheme == "pretrand" and config.transfer.random_plus_plus, "transfer.scheme=pretrand with transfer.random_plus_plus=true"),
    ("transfer.random_branch_learning_rate", lambda config: config.transfer.scheme == "pretrand", "transfer.scheme=pretrand"),
    ("transfer.l2sp_weight", lambda config: "l2sp" in config.transfer.adaptations, "transfer.adaptations=[l2sp]"),
    ("transfer.ewc_weight", lambda config: "ewc" in config.transfer.adaptations, "transfer.adaptations=[ewc]"),
    ("transfer.ewc_batches", lambda config: "ewc" in config.transfer.adaptations, "transfer.adaptations=[ewc]"),
    ("transfer.distillation_temperature", lambda config: bool(config.transfer.distill_from), "transfer.distill_from=[RUN, ...]"),
    ("transfer.distillation_weight", lambda config: bool(config.transfer.distill_from), "transfer.distill_from=[RUN, ...]"),
    ("train.adversarial_weight", lambda config: bool(config.train.adversarial_data), "train.adversarial_data=DATASET[:TASK] or a text file"),
    ("train.adversarial_schedule", lambda config: bool(config.train.adversarial_data), "train.adversarial_data=DATASET[:TASK] or a text file"),
    ("model.adapter_size", lambda config: config.model.encoder_adapter == "houlsby", "model.encoder_adapter=houlsby"),
    ("model.lora_rank", lambda config: config.model.encoder_adapter == "lora", "model.encoder_adapter=lora"),
    ("model.lora_alpha", lambda config: config.model.encoder_adapter == "lora", "model.encoder_adapter=lora"),
    ("train.warmup", lambda config: config.train.schedule in ("linear_warmup", "slanted_triangular"), "train.schedule=linear_warmup or slanted_triangular"),
    ("train.learning_rate_decay", lambda config: config.train.schedule in (None, "inverse_time"), "train.schedule=inverse_time"),
    ("model.pair_encoding", lambda config: bool(config.model.encoder), "model.encoder"),
    (
        "model.feature_layers",
        lambda config: (
            config.model.architecture in ("tagger", "sentence_classifier", "sentence_regressor")
            and not config.model.tasks
            and config.model.feature_extractor != "none"
            and not (config.model.encoder and config.model.encoder_mode == "finetune")
        ),
        "the BiLSTM of a tagger or sentence model over word vectors or frozen features (not a parser's, PretRand's or a multi-task branch's)",
    ),
    ("model.bcn_maxout_layers", lambda config: config.model.sentence_reader in ("bcn", "to_tune"), "model.sentence_reader=bcn (or to_tune, which reads single texts of frozen features with it)"),
    ("model.sentence_reader", lambda config: config.model.architecture.startswith(("sentence_", "encoder_classifier", "encoder_regressor")), "a sentence classification or regression task"),
)


def idle_settings(config: RunConfig) -> list[str]:
    """The settings changed from their defaults that nothing in this run reads (its schedule and
    model resolved), each as one line saying what it needs."""
    defaults, idle = RunConfig(), []
    for key, applies, needs in _IDLE_RULES:
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if value != getattr(getattr(defaults, section), name) and not applies(config):
            idle.append(f"{key}={value} does nothing in this run: it needs {needs}")
    return idle


def check_values(config: RunConfig) -> RunConfig:
    """Reject settings no run can train with (a negative learning rate, an odd BiLSTM size...)."""
    for key, test, requirement in _VALUE_RULES:
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if not test(value):
            requirement = requirement() if callable(requirement) else requirement
            raise SeqTransferError(f"config key '{key}' must be {requirement}, got {value!r}", hint=f"set {key}=... to a valid value")
    return config
