"""The one place a single-task run's configuration is filled in (issue 49, point 4).

``resolve_run`` turns the user's configuration, the data and the source run into the fully filled
configuration the run trains with, then freezes it (``RunConfig.freeze``: any later assignment
raises, ``tests/test_resolved_config.py``), so ``config.yaml`` says exactly what trained:

1. the source's model sizes and input tagger (``workflows/sources.py`` ``adopt_source_settings``);
2. the data's tag scheme and metric, inferred or declared;
3. the architecture the scheme builds for the task kind, a fine-tuned encoder's defaults (AdamW,
   linear warm-up), the discriminator of adversarial training, the optimizer and its rate;
4. the training split (subsets, selection, pseudo labels, annealing, jackknifed input tags) and
   what the task kind fills in from it (labels, score range);
5. the vocabularies, with the encoder's shape and hash (``training/vocabularies.py``), and an
   auxiliary LM's words and decoder.

A multi-task run resolves its own settings (``workflows/multitask.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from seqtransfer import rundir
from seqtransfer.config import RunConfig, idle_settings
from seqtransfer.corpora.annealing import add_annealing_sentences
from seqtransfer.corpora.selection import training_sentences
from seqtransfer.corpora.task_data import TaskData
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.sentence_readers import fill_reader_input
from seqtransfer.tasks.regression import check_centred_scores
from seqtransfer.training.optimizers import fill_optimizer
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies
from seqtransfer.transfer.adversarial import unlabelled_target
from seqtransfer.transfer.auxiliary_lm import language_model_decoder, language_model_words
from seqtransfer.transfer.schemes import Scheme
from seqtransfer.workflows.checks import check_adapter, check_causal_encoder, check_fine_tuned_encoder
from seqtransfer.workflows.sources import adopt_source_settings

Log = Callable[[str], None]


FoldTags = Callable[[RunConfig, TaskData, Path, Log], tuple[list, float]]  # workflows/jackknife.py jackknife_tags


def resolve_run(config: RunConfig, scheme: Scheme, data: TaskData, source: rundir.LoadedRun | None, directory: Path, log: Log, fold_tags: FoldTags) -> tuple[Vocabularies, np.ndarray, float]:
    """Fill in and freeze the run's configuration; (its vocabularies, the word vectors' matrix, the
    seconds fold taggers trained by an earlier start of this run took). ``fold_tags`` gives the
    training split's jackknifed input tags (``model.tag_jackknife``): its fold taggers train through
    the run path this module is part of, so the caller hands it in rather than this module importing it."""
    if source is not None:
        adopt_source_settings(config, source)
    check_adapter(config)  # after the source's encoder set-up is taken
    config.data.scheme, config.data.metric = data.scheme, data.metric
    resolve_model_settings(config, scheme, data, log)
    earlier_seconds = prepare_training_split(config, data, directory, log, fold_tags)
    if source is None and not config.model.discriminator_hidden and not config.transfer.auxiliary_lm_weight:  # each reads a BiLSTM
        reads_itself = fill_reader_input(config.model)  # after the task filled model.sentence_pairs (to_tune's choice reads it)
        if reads_itself:
            log(reads_itself)
    vocabularies, matrix = prepare_vocabularies(config, data, log, base=source.vocabularies if source else None, extra_tokens=unlabelled_target(config))
    if config.transfer.auxiliary_lm_weight:  # saved with the run: the LM layers are part of the model
        config.model.language_model_words = language_model_words(config, vocabularies)
        config.model.language_model_decoder = language_model_decoder(config)
    config.freeze()
    return vocabularies, matrix, earlier_seconds


def model_architecture(scheme: Scheme, data: TaskData) -> str:
    """The model a scheme builds for this task kind (a tagger, PretRand, a parser)."""
    architectures = data.kind.architectures
    if scheme.architecture not in architectures:
        raise SeqTransferError(
            f"scheme '{scheme.name}' does not apply to {data.kind.name} task '{data.task}'",
            hint=f"use a scheme that builds one of: {', '.join(name for name in architectures if name != 'encoder')} (e.g. --method finetune or features)",
        )
    return architectures[scheme.architecture]


def resolve_model_settings(config: RunConfig, scheme: Scheme, data: TaskData, log: Log) -> None:
    """The model's architecture, a fine-tuned encoder's defaults, the optimizer and its rate (saved
    with the run); a warning for each setting nothing will read."""
    config.model.architecture = model_architecture(scheme, data)
    if config.model.encoder and config.model.encoder_mode == "finetune":
        check_fine_tuned_encoder(data, scheme)
        fill_fine_tuning(config, data.kind)
        check_causal_encoder(config)
    if config.train.adversarial_data and not config.model.discriminator_hidden:
        config.model.discriminator_hidden = 100  # saved with the run: the discriminator is part of the model
    fill_optimizer(config.train, data.kind.optimizer)
    for idle in idle_settings(config):  # the model and schedule resolved: what the run will not read
        log(f"warning: {idle}")


def prepare_training_split(config: RunConfig, data: TaskData, directory: Path, log: Log, fold_tags: FoldTags) -> float:
    """The training sentences and their weights (subsets, selection, pseudo labels, annealed source
    sentences), jackknifed input tags, and what the task fills in from them; the seconds fold
    taggers trained by an earlier start of this run took."""
    data.train_weights = training_sentences(config, data, log)  # subsets, selection, pseudo labels (corpora/selection.py)
    data.target_count = add_annealing_sentences(config, data, log)  # data annealing: source sentences after the target's
    earlier_seconds = 0.0
    if config.model.tag_jackknife:  # input tags of the training split from fold taggers (workflows/jackknife.py)
        data.train_tags, earlier_seconds = fold_tags(config, data, directory, log)
        seed_everything(config.train.seed, config.train.threads)  # the fold taggers drew random numbers (or, resumed, did not): start from the seed either way
    check_centred_scores(config.model, data.kind)
    filled = data.kind.fill_config(config.model, data.gold("train"), data.splits["train"])
    if filled:
        log(filled)
    return earlier_seconds


# A fine-tuned encoder's parser: its biaffine MLPs (hundreds of units, from random) learn at SuPar's rate for them
# (lr 5e-5 x lr_rate 20); at the encoder's 5e-5 they had learnt little after 3 epochs (TweeBank, 600 sentences: UAS 28.63).
PARSER_HEAD_RATE = 1e-3


def fill_fine_tuning(config: RunConfig, kind) -> None:
    """A fine-tuned encoder's defaults: the task kind's encoder model, AdamW and a linear warm-up
    then decay, and a parser's head rate (each unless set)."""
    config.model.architecture = kind.architectures["encoder"]
    fill_optimizer(config.train, "adamw")
    if config.model.architecture == "encoder_parser" and config.train.head_learning_rate is None:
        config.train.head_learning_rate = PARSER_HEAD_RATE
    config.train.schedule = config.train.schedule or "linear_warmup"
