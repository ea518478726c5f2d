"""Typed run configuration: dataclasses, YAML files and dotted command-line overrides.

The fully filled configuration is saved as ``config.yaml`` in every run directory, so a saved
model never depends on a default that may change later.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any

import yaml

from seqtransfer.data.tokenize import TOKENIZERS
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import load_yaml, read_yaml_mapping


@dataclass
class DataConfig:
    """Where the sentences come from and which column is predicted."""

    dataset: str | None = "wnut17"  # a registry name; None when train/dev/test paths are given
    task: str | None = None  # a task of the dataset; None = its default task
    train: str | None = None  # paths of a user's own CoNLL / CoNLL-U files
    dev: str | None = None
    test: str | None = None
    columns: list[str] | None = None  # column names of a user's CoNLL files, e.g. [word, pos]
    scheme: str = "auto"  # tag scheme of a user's labels: auto (inferred from the labels) | none | iob1 | iob2 | bioes
    strict: bool = False  # tags out of their scheme's order are an error (default: read as conlleval reads them, with a warning)
    separator: str = "auto"  # column files: auto (TAB if token lines hold TABs, else spaces) | tab | space
    metric: str | None = None  # accuracy | span_f1; None = the dataset's metric
    data_dir: str | None = None  # root holding dataset folders; else $SEQTRANSFER_DATA
    max_train_sentences: int | None = None  # keep the first N training sentences (learning curves)
    train_fraction: float | None = None  # keep a random share (0, 1] of the training sentences, drawn with train.seed (the same subset for every method of a seed)
    exclude_fold: str | None = None  # "k/K": the training split without its k-th of K folds (sentence i, counted from 0, is in fold i mod K + 1); jackknifed input tags
    twitter_normalization: bool = False  # map @user, URLs, numbers to placeholders for the word embedding
    label_map: str | None = None  # YAML file: dataset -> {its label: the shared label}: datasets joined with + whose tag sets differ, or one read in another's tag set
    select_like: str | None = None  # unlabelled target text the training sentences are ranked against (data/selection.py); in an experiment file, 'target' = the target's test_on dataset
    select_by: str = "moore_lewis"  # moore_lewis (cross-entropy difference) | js (Jensen-Shannon to the target's words)
    select_top: float | None = None  # hard selection: keep this percentage (0, 100] of the most target-like training sentences
    select_weighting: bool = False  # soft selection: weight each training sentence's loss by its likeness rank (mean 1)
    select_tokenizer: str = "whitespace"  # how select_like's raw-text lines are split: whitespace | tweet
    select_word_column: int | None = None  # select_like is a column (CoNLL) file: the column (1-based) holding its words
    bootstrap: int | None = None  # train on a bootstrap sample (with replacement, same size) of the training split drawn with this seed (tri-training)
    pseudo_train: str | None = None  # a CoNLL file (word, label) of pseudo-labelled target sentences added to the training split (workflows/selflabel.py)
    pseudo_weight: float = 1.0  # loss weight of each pseudo-labelled sentence (gold sentences weigh 1)
    # Data annealing (Gu & Yu 2020; data/annealing.py): the source's labelled training sentences
    # mixed into each epoch, their share anneal_start * anneal_decay^(epoch - 1).
    anneal_source: str | None = None  # DATASET[:TASK] whose training split is mixed in (the target's tag set, or mapped by label_map)
    anneal_start: float = 0.9  # the first epoch's source share (1 = all the source sentences)
    anneal_decay: float = 0.9  # the share's factor per epoch


@dataclass
class ModelConfig:
    """The base tagger of the PretRand paper (section 3); sizes count both LSTM directions."""

    word_dimension: int = 50
    embeddings: str | None = "glove-6b-50d"  # glove-6b-50d, a vector file path, or None (random)
    lowercase_words: bool = True  # lower-case for the word embedding only; characters keep case
    char_dimension: int = 50
    char_hidden: int = 100
    inputs: str = "both"  # what represents a word: both (word vector and character BiLSTM) | words | characters (co-training's views)
    hidden: int = 200
    # Between the representation and the classifier (To-tune paper, Table 5): None = the model's own
    # (the tagger: a BiLSTM of hidden units; a fine-tuned encoder: nothing) | bilstm | none
    feature_extractor: str | None = None
    dropout: float = 0.5
    classifier: str = "softmax"  # softmax | crf
    architecture: str = "tagger"  # tagger | pretrand (set by the transfer scheme)
    random_hidden: int = 200  # PretRand: units k of the random branch's BiLSTM
    normalize_branches: bool = True  # PretRand: l2-normalise each branch's scores (equation 10)
    normalized_scale: float = 1.0  # PretRand: multiply the normalised scores by this (1 = equation 10; >1 lets the softmax be confident without u, v)
    branch_weighting: bool = True  # PretRand: learnable per-class weights u, v (equation 11)
    # Biaffine parser (dependency tasks). Sizes of Stanza's parser (Qi et al. 2018), which the
    # MuTSPad paper follows (section 5.3): a 3-layer BiLSTM of 400 units per direction, arc MLPs
    # of 400 and relation MLPs of 100 units (Dozat & Manning 2017: 400 per direction, 500, 100).
    parser_hidden: int = 800  # BiLSTM units, both directions
    parser_layers: int = 3
    arc_hidden: int = 400  # arc-dependent and arc-head MLPs
    relation_hidden: int = 100  # relation-dependent and relation-head MLPs
    single_root: bool | None = None  # decode one root per sentence; None = as the training trees (several roots in original Tweebank v2)
    # A tag column read as an input feature (Stanza's parser joins a 50-dimensional UPOS embedding
    # to each word; Qi et al. 2018): gold tags from the data's column, or predicted by a tagging run.
    tag_feature: str | None = None  # the column, e.g. upos (CoNLL-U); None = no tag input
    tag_tagger: str | None = None  # a tagging run directory whose predictions are the tags (every split, and at prediction time)
    tag_dimension: int = 50  # Stanza's UPOS embedding size
    tag_jackknife: int = 0  # with tag_tagger: the training split's tags come from K taggers trained like it on the other K - 1 folds (0 = the tagger tags it)
    tag_count: int = 0  # filled: rows of the tag embedding
    # Hierarchical multi-task model (MuTSPad paper, section 3.3): task -> the lower tasks whose
    # BiLSTM states it reads, e.g. {pos: [], chunk: [pos], ner: [pos, chunk], dp: [pos, chunk]}.
    # None = a single-task model. Each task's branch reads the shared word representation plus a
    # learned projection (T_task, ``projection`` units) of each lower task's states.
    tasks: dict[str, list[str]] | None = None
    task_kinds: dict[str, str] | None = None  # task -> task kind (tagging | dependency); filled from the data
    projection: int = 100  # units of each T_task (our choice: the paper does not give it)
    # A pretrained Transformer's token vectors joined to the word representation (frozen features,
    # a learned scalar mix of its layers; embeddings/transformer.py): a Hugging Face folder or minilm.
    encoder: str | None = None
    # What turns a batch into token states (models/encoders.py): None = as the rest implies (a
    # fine-tuned model.encoder: transformer; otherwise words: word vector + character BiLSTM)
    encoder_family: str | None = None
    encoder_pooling: str = "first"  # a token's vector (features and fine-tuning): its first sub-word | the mean of its sub-words
    sentence_pooling: str = "cls"  # a fine-tuned encoder's sentence vector (classification, regression): its [CLS] | the mean of its token vectors
    encoder_join: bool = True  # features: join the word and character vectors (true) or replace them (false: the encoder's mix alone)
    encoder_mode: str = "features"  # features: frozen, cached, scalar mix joined to the word representation | finetune: the encoder trains, with a light head
    encoder_adapter: str | None = None  # finetune: lora (PEFT) | houlsby (bottlenecks); the encoder's own weights stay frozen, only the adapter's train and are saved
    adapter_size: int = 64  # houlsby: bottleneck units
    lora_rank: int = 8
    lora_alpha: int = 16
    encoder_hash: str | None = None  # filled: a hash of the encoder folder, checked when a run that saved only its adapter loads
    encoder_layers: int = 0  # filled from the encoder: its layers + 1 (embeddings)
    encoder_dimension: int = 0  # filled from the encoder: its hidden size
    center_scores: bool = False  # regression: the head's bias starts at the training scores' mean (score_mean), not at 0
    score_mean: float | None = None  # filled with center_scores: the training scores' mean
    sentence_pairs: bool | None = None  # sentence tasks: the data are pairs (A [SEP] B): the BiLSTM model pools A and B apart; None = from the data
    language_model_words: int = 0  # >0: auxiliary LM softmax layers over this many words, or a fine-tuned encoder's sub-words (filled when transfer.auxiliary_lm_weight is set)
    language_model_decoder: bool = False  # the fine-tuned encoder's masked-LM head has its own decoder: the encoder was pretrained untied (filled with language_model_words)
    discriminator_hidden: int = 0  # >0: a domain discriminator with this many hidden units (adversarial pretraining; filled when train.adversarial_data is set)


@dataclass
class TrainConfig:
    """SGD with momentum (taggers) or Adam (parsers), batches of 16 sentences, early stopping on the dev score."""

    optimizer: str | None = None  # sgd | adam | adamw; None = the task kind's (sgd for tagging, adam for parsing)
    learning_rate: float | None = None  # None = the optimizer's: sgd 0.015 (PretRand paper), adam 0.003 (Stanza)
    momentum: float = 0.9  # sgd
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])  # adam (Stanza's parser)
    learning_rate_decay: float = 0.0  # lr_epoch = lr / (1 + decay * epoch); NCRF++ uses 0.05, the paper none
    schedule: str | None = None  # inverse_time (uses learning_rate_decay) | linear_warmup | slanted_triangular; None = the model's (linear_warmup for fine-tuned encoders)
    warmup: float = 0.1  # linear_warmup: share of all steps spent warming up
    weight_decay: float = 0.0
    gradient_clip: float = 5.0
    batch_size: int = 16
    # tokens: sentences of similar token count share a batch | subwords: of similar sub-word count
    # (a fine-tuned encoder: a third less padding, faster; elsewhere as tokens) | random: no bucketing.
    # Annealed (data.anneal_*) and adversarial runs' batches, and multi-task streams, bucket by tokens.
    batching: str = "tokens"
    max_epochs: int = 100
    patience: int = 10
    min_epochs: int = 0  # early stopping waits until this epoch (data annealing: until the source's share is small)
    seed: int = 1
    threads: int = 2  # at most; fewer when the machine has fewer cores or OMP_NUM_THREADS (Ray) grants fewer
    share_cores: bool = True  # drop to the cores other programs leave free while they run (threads.py); like threads, not part of a run's identity
    device: str = "auto"  # auto (first GPU, else CPU) | cpu | cuda | cuda:N | mps; like threads, not part of a run's identity
    amp: str = "off"  # mixed precision for fine-tuned encoders: off | auto (bf16 or fp16 on a CUDA GPU, else off) | bf16 | fp16 (training/precision.py)
    evaluation_batch_size: int = 512
    adversarial_data: str | None = None  # unlabelled target sentences for adversarial pretraining: DATASET[:TASK] (train split, labels ignored) or a text file
    adversarial_weight: float = 0.1  # lambda of the gradient-reversal layer (transfer/adversarial.py)
    adversarial_tokenizer: str = "whitespace"  # how adversarial_data's raw-text lines are split: whitespace | tweet
    adversarial_word_column: int | None = None  # adversarial_data is a column (CoNLL) file: the column (1-based) holding its words
    record_activations: list[int] | None = None  # epochs whose FE activations on dev are saved (0 = before training); see analysis/activations.py


@dataclass
class TransferConfig:
    """Which transfer scheme trains the model, and from which source run."""

    scheme: str = "scratch"  # scratch | finetune | features | pretrand (see transfer/schemes.py)
    source: str | None = None  # run directory of the source model
    copy_shared_labels: bool = False  # also copy classifier rows of labels the source and target share
    random_plus_plus: bool = True  # PretRand: train the random units alone first, then jointly
    adaptations: list[str] = field(default_factory=list)  # discriminative | gradual_unfreezing | chain_thaw | l2sp | ewc, combinable (transfer/adaptations.py ADAPTATIONS)
    discriminative_factor: float = 2.6  # each layer group below the top trains at 1/factor of the rate above (ULMFiT)
    l2sp_weight: float = 0.01  # alpha of L2-SP, per batch
    ewc_weight: float = 1.0  # lambda of EWC, per batch
    ewc_batches: int = 100  # source training batches the Fisher information is estimated on
    distill_from: list[str] = field(default_factory=list)  # teacher run directories (an ensemble) distilled into this model (transfer/distillation.py)
    distillation_temperature: float = 2.0
    distillation_weight: float = 1.0
    auxiliary_lm_weight: float = 0.0  # > 0: add this times a bidirectional LM loss on the training sentences (transfer/auxiliary_lm.py; fine-tuned encoders: masked_lm.py)
    auxiliary_lm_words: int = 5000  # the LM predicts the most frequent words; the others as unknown


@dataclass
class MultiTaskConfig:
    """Where each task of a multi-task model (``model.tasks``) finds its data, and how tasks share training.

    See ``workflows/multitask.py``: "one task per batch" in the hierarchy's low -> high order
    (MuTSPad paper, section 4.2.1), loss weights doubled every epoch until 1 (section 4.1).
    """

    data: dict[str, str | dict] | None = None  # task -> "dataset", "dataset:task" or {train: PATH, dev: PATH, test: PATH, columns: [...], task: NAME}
    unified: str | None = None  # a folder written by `seqtransfer unify`: train on its train.conllu (every task at every step); dev/test stay ``data``'s
    sampling: str = "round_robin"  # round_robin: one task per batch, low -> high, until every set is used once | proportional: a random task, weighted by its batches left
    loss_weights: dict[str, float] | None = None  # first-epoch weight per task; None = 2^-level (paper: pos 1, chunk 0.5, ner 0.25, dp 0.25)
    weight_schedule: str = "geometric"  # how the loss weights change per epoch (workflows/multitask.py WEIGHT_SCHEDULES): geometric | linear | constant
    weight_growth: float = 2.0  # geometric: weights are multiplied by this every epoch, up to 1 (1.0 = constant)
    weight_ramp_epochs: int = 3  # linear: the epoch at which every weight has risen in equal steps to 1
    early_stopping: str = "mean"  # the dev score early stopping watches: mean of the tasks' main scores | a task's name


@dataclass
class RunConfig:
    """Everything that defines one training run."""

    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    transfer: TransferConfig = field(default_factory=TransferConfig)
    multitask: MultiTaskConfig = field(default_factory=MultiTaskConfig)


def _field_names(instance: Any) -> list[str]:
    return [item.name for item in dataclasses.fields(instance)]


def _check_key(instance: Any, key: str, where: str, path: str | None) -> None:
    names = _field_names(instance)
    if key not in names:
        close = difflib.get_close_matches(key, names, n=1)
        suggestion = f"did you mean '{close[0]}'? " if close else ""
        raise SeqTransferError(
            f"unknown config key '{where}{key}'",
            path=path,
            hint=f"{suggestion}valid keys of '{where.rstrip('.') or 'config'}': {', '.join(names)}",
        )


YAML11_BOOLEANS = {"yes": True, "no": False, "on": True, "off": False}  # what YAML 1.1 read as booleans besides true / false
SCIENTIFIC = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _coerce(value: Any, annotation: Any, key: str, path: str | None) -> Any:
    """Check ``value`` against a field's type annotation (ints are accepted as floats)."""
    origin = typing.get_origin(annotation)
    allowed = typing.get_args(annotation) if origin in (typing.Union, types.UnionType) else (annotation,)
    if value is None and type(None) in allowed:
        return None
    for option in allowed:
        base = typing.get_origin(option) or option
        if base is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if base is float and isinstance(value, str) and SCIENTIFIC.fullmatch(value.strip()):  # YAML 1.1 reads 1e-5 (no dot) as text
            return float(value)
        if base is list and isinstance(value, str):  # "0,1,3" -> [0, 1, 3] for list[int]; "word,pos" stays text
            parts = [part.strip() for part in value.split(",") if part.strip()]
            return parts if typing.get_args(option) == (str,) else [load_yaml(part) for part in parts]
        if base is bool and isinstance(value, str) and value.lower() in YAML11_BOOLEANS:  # a hand-written yes / no / on / off
            return YAML11_BOOLEANS[value.lower()]
        if isinstance(value, base) and not (base is int and isinstance(value, bool)):
            return value
    expected = " or ".join(getattr(option, "__name__", str(option)) for option in allowed)
    raise SeqTransferError(f"config key '{key}' must be {expected}, got {value!r}", path=path)


def _assign(instance: Any, values: dict, where: str, path: str | None) -> None:
    hints = typing.get_type_hints(type(instance))
    for key, value in values.items():
        _check_key(instance, key, where, path)
        current = getattr(instance, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise SeqTransferError(f"config section '{where}{key}' must be a mapping", path=path)
            _assign(current, value, f"{where}{key}.", path)
        else:
            setattr(instance, key, _coerce(value, hints[key], f"{where}{key}", path))


def config_from_dict(values: dict, path: str | None = None) -> RunConfig:
    """Build a :class:`RunConfig` from nested mappings, rejecting unknown keys."""
    config = RunConfig()
    _assign(config, values or {}, "", path)
    return config


def load_config(path: str | Path) -> RunConfig:
    """Read a YAML configuration file (safe loader: nothing in it is executed)."""
    return config_from_dict(read_yaml_mapping(path, "config file"), str(path))


def apply_overrides(config: RunConfig, overrides: list[str]) -> RunConfig:
    """Apply ``section.key=value`` overrides; values are parsed as YAML scalars."""
    for override in overrides:
        key, separator, raw_value = override.partition("=")
        if not separator or "." not in key:
            raise SeqTransferError(
                f"override '{override}' is not of the form section.key=value",
                hint="e.g. train.learning_rate=0.01 or model.classifier=crf",
            )
        section, _, name = key.partition(".")
        _check_key(config, section, "", None)
        name, _, entry = name.partition(".")  # multitask.data.pos=tweebank:upos sets one entry of a mapping
        value = load_yaml(raw_value)
        if entry:
            _check_key(getattr(config, section), name, f"{section}.", None)
            current = getattr(getattr(config, section), name)
            if current is not None and not isinstance(current, dict):
                raise SeqTransferError(f"config key '{section}.{name}' is not a mapping", hint=f"use {section}.{name}=VALUE")
            value = {**(current or {}), entry: value}
        _assign(getattr(config, section), {name: value}, f"{section}.", None)
    return config


def fold_of(value: str) -> tuple[int, int] | None:
    """(k, K) of "k/K" with 1 <= k <= K and K >= 2, else None."""
    number, _, count = str(value).partition("/")
    if not (number.strip().isdigit() and count.strip().isdigit()):
        return None
    number, count = int(number), int(count)
    return (number, count) if count >= 2 and 1 <= number <= count else None


def schedule_names() -> list[str]:
    """The learning-rate schedules' names (training/schedules.py, which imports this module: imported here when asked)."""
    from seqtransfer.training.schedules import SCHEDULES

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
    ("model.encoder_mode", lambda value: value in ("features", "finetune"), "features or finetune"),
    ("model.encoder_adapter", lambda value: value in (None, "lora", "houlsby"), "lora or houlsby (or null)"),
    ("model.adapter_size", lambda value: value >= 1, "at least 1"),
    ("model.lora_rank", lambda value: value >= 1, "at least 1"),
    ("model.lora_alpha", lambda value: value > 0, "positive"),
    ("model.discriminator_hidden", lambda value: value >= 0, "zero (no discriminator) or a positive integer"),
    ("train.adversarial_weight", lambda value: value > 0, "positive"),
    ("transfer.discriminative_factor", lambda value: value >= 1.0, "at least 1"),
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
    ("multitask.loss_weights", lambda value: value is None or all(isinstance(weight, (int, float)) and not isinstance(weight, bool) and weight > 0 for weight in value.values()),
     "a mapping of task -> positive weight (or null)"),
    ("train.learning_rate", lambda value: value is None or value > 0, "positive"),
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
    ("train.amp", lambda value: value in ("off", "auto", "bf16", "fp16"), "off, auto, bf16 or fp16"),
    ("train.threads", lambda value: value >= 1, "at least 1"),
    ("data.pseudo_weight", lambda value: value > 0, "positive"),
    ("data.anneal_start", lambda value: 0 < value <= 1, "a share in (0, 1]"),
    ("data.anneal_decay", lambda value: 0 < value <= 1, "in (0, 1]"),
    ("data.train_fraction", lambda value: value is None or 0 < value <= 1, "a share in (0, 1] (or null for all)"),
    ("data.bootstrap", lambda value: value is None or value >= 0, "a seed, 0 or more (or null)"),
    ("data.select_by", lambda value: value in ("moore_lewis", "js"), "moore_lewis or js"),
    ("data.select_top", lambda value: value is None or 0 < value <= 100, "a percentage in (0, 100] (or null)"),
    ("data.select_tokenizer", lambda value: value in TOKENIZERS, "one of " + ", ".join(TOKENIZERS)),
    ("train.adversarial_tokenizer", lambda value: value in TOKENIZERS, "one of " + ", ".join(TOKENIZERS)),
    ("data.max_train_sentences", lambda value: value is None or value >= 1, "at least 1 (or null for all)"),
    ("data.exclude_fold", lambda value: value is None or fold_of(value) is not None, "k/K with 1 <= k <= K and K >= 2, e.g. 1/5 (or null)"),
    ("model.tag_jackknife", lambda value: value == 0 or value >= 2, "0 (off) or a number of folds, at least 2"),
    ("train.record_activations", lambda value: value is None or all(isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 0 for epoch in value),
     "a list of epoch numbers, 0 = before training (or null)"),
]


# settings that change nothing unless another setting asks for them: (key, whether this run reads it, what it needs)
_IDLE_RULES: tuple[tuple[str, Callable[[RunConfig], bool], str], ...] = (
    ("transfer.discriminative_factor", lambda config: "discriminative" in config.transfer.adaptations, "transfer.adaptations=[discriminative]"),
    ("transfer.l2sp_weight", lambda config: "l2sp" in config.transfer.adaptations, "transfer.adaptations=[l2sp]"),
    ("transfer.ewc_weight", lambda config: "ewc" in config.transfer.adaptations, "transfer.adaptations=[ewc]"),
    ("transfer.ewc_batches", lambda config: "ewc" in config.transfer.adaptations, "transfer.adaptations=[ewc]"),
    ("transfer.distillation_temperature", lambda config: bool(config.transfer.distill_from), "transfer.distill_from=[RUN, ...]"),
    ("transfer.distillation_weight", lambda config: bool(config.transfer.distill_from), "transfer.distill_from=[RUN, ...]"),
    ("model.adapter_size", lambda config: config.model.encoder_adapter == "houlsby", "model.encoder_adapter=houlsby"),
    ("model.lora_rank", lambda config: config.model.encoder_adapter == "lora", "model.encoder_adapter=lora"),
    ("model.lora_alpha", lambda config: config.model.encoder_adapter == "lora", "model.encoder_adapter=lora"),
    ("train.warmup", lambda config: config.train.schedule in ("linear_warmup", "slanted_triangular"), "train.schedule=linear_warmup or slanted_triangular"),
    ("train.learning_rate_decay", lambda config: config.train.schedule in (None, "inverse_time"), "train.schedule=inverse_time"),
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


def config_to_dict(config: RunConfig) -> dict:
    """The filled configuration as plain nested dicts."""
    return dataclasses.asdict(config)


def non_default(values: dict, defaults: dict) -> dict:
    """The entries of nested ``values`` that differ from ``defaults``."""
    result = {}
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(defaults.get(key, {}), dict):  # a section (a mapping-valued setting with a null default is one value)
            nested = non_default(value, defaults.get(key, {}))
            if nested:
                result[key] = nested
        elif key not in defaults or defaults[key] != value:
            result[key] = value
    return result


def result_settings(config: RunConfig | dict) -> dict:
    """The settings that decide a run's result: those that differ from the defaults (so that adding
    a config field changes nothing saved before it), without where the data lives, how many threads
    or which device run it, or whether activations are recorded for analysis."""
    values = copy.deepcopy(config) if isinstance(config, dict) else config_to_dict(config)
    values.get("data", {}).pop("data_dir", None)
    for key in ("threads", "share_cores", "device", "record_activations"):
        values.get("train", {}).pop(key, None)
    return non_default(values, config_to_dict(RunConfig()))


def dump_config(config: RunConfig) -> str:
    """The filled configuration as YAML text."""
    return yaml.safe_dump(config_to_dict(config), sort_keys=False)
