"""The source run a transfer starts from: loaded and checked against what the target asks for
(``load_source``), then its model sizes given to the target when the run's configuration is
resolved (``adopt_source_settings``, workflows/resolution.py)."""

from __future__ import annotations

from pathlib import Path

from seqtransfer import rundir
from seqtransfer.config import ModelConfig, RunConfig
from seqtransfer.errors import SeqTransferError
from seqtransfer.transfer.schemes import Scheme

# Model settings a transferred model takes from its source run (the copied weights' shapes).
SOURCE_SIZES = (
    "word_dimension",
    "char_dimension",
    "char_hidden",
    "hidden",
    "embeddings",
    "parser_hidden",
    "parser_layers",
    "arc_hidden",
    "relation_hidden",
    "encoder",
    "encoder_pooling",
    "encoder_layers",
    "encoder_dimension",
    "tag_feature",
    "tag_dimension",
    "feature_extractor",
    "feature_layers",
    "encoder_mode",
    "encoder_adapter",
    "lora_rank",
    "lora_alpha",
    "adapter_size",
    "inputs",
)


def load_source(config: RunConfig, scheme: Scheme) -> rundir.LoadedRun | None:
    """The source run a scheme transfers from (a self-labelling run's first final model), checked
    against the set-up the target asks for; the configuration is left as it is."""
    if not scheme.uses_source:
        return None
    if not config.transfer.source:
        raise SeqTransferError(f"scheme '{scheme.name}' needs a source run", hint="pass --source RUN_DIR (a run trained on the source data)")
    if rundir.is_ensemble(config.transfer.source):
        raise SeqTransferError(
            "an ensemble is not a source: its runs hold different weights",
            path=config.transfer.source,
            hint=f"transfer from one of its runs, or distil it into the new model: transfer.distill_from=[{config.transfer.source}]",
        )
    directory = config.transfer.source
    if (Path(directory) / rundir.MEMBERS).is_file():  # a self-labelling run: its first final model
        directory = str(rundir.first_member(directory))
    source = rundir.load_run(directory)
    if source.model.task_kind == "multitask" and not config.model.tasks:
        raise SeqTransferError(
            "the source run is a multi-task model; a mono-task model cannot take its weights",
            path=config.transfer.source,
            hint="fine-tune it as a multi-task model (model.tasks and multitask.data), or pass a mono-task source run",
        )
    check_source_tags(config, source)
    check_source_set_up(config, source)
    return source


def adopt_source_settings(config: RunConfig, source: rundir.LoadedRun) -> None:
    """The target takes its source's path (a self-labelling run's first final model), model sizes
    (``SOURCE_SIZES``: the copied weights' shapes) and input tagger, unless it names its own."""
    if (Path(config.transfer.source) / rundir.MEMBERS).is_file():
        config.transfer.source = str(rundir.first_member(config.transfer.source))
    for name in SOURCE_SIZES:
        setattr(config.model, name, getattr(source.config.model, name))
    if source.config.model.tag_feature and not config.model.tag_tagger:
        config.model.tag_tagger = source.config.model.tag_tagger


SOURCE_SET_UP = ("encoder_mode", "encoder_adapter", "inputs")  # of SOURCE_SIZES: a target that asks for other values is told, not overruled


def check_source_set_up(config: RunConfig, source: rundir.LoadedRun) -> None:
    """The target takes its source's set-up; one it asks for otherwise (a fine-tuned encoder over a
    frozen-features source, LoRA over a fully fine-tuned one, characters over a words-only source:
    co-training's views) is one line, not silently dropped."""
    defaults = ModelConfig()
    for name in SOURCE_SET_UP:
        wanted, had = getattr(config.model, name), getattr(source.config.model, name)
        if wanted != getattr(defaults, name) and wanted != had:
            raise SeqTransferError(
                f"the source run has model.{name}={had}; this run asks for {wanted}",
                path=config.transfer.source,
                hint=f"drop model.{name} (a target takes its source's set-up), or transfer from a source trained with it",
            )


def check_source_tags(config: RunConfig, source: rundir.LoadedRun) -> None:
    """The target reads the tags its source read (the copied input layer's size depends on them)."""
    wanted, had = config.model.tag_feature, source.config.model.tag_feature
    if wanted is not None and wanted != had:
        raise SeqTransferError(
            f"the source run reads {f'{had!r} tags' if had else 'no input tags'}; this run asks for model.tag_feature={wanted}",
            path=config.transfer.source,
            hint="drop model.tag_feature (the target reads what its source read), or transfer from a source trained with it",
        )
