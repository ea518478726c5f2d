"""Model architectures by name: one line per architecture."""

from __future__ import annotations

from seqtransfer.config import ModelConfig
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.pretrand import PretRand
from seqtransfer.models.tagger import SequenceLabeller, Tagger

ARCHITECTURES: dict[str, type[SequenceLabeller]] = {"tagger": Tagger, "pretrand": PretRand}


def build_model(config: ModelConfig, vocabularies: Vocabularies) -> SequenceLabeller:
    """A freshly initialised model sized for ``vocabularies``."""
    if config.architecture not in ARCHITECTURES:
        raise SeqTransferError(f"unknown architecture '{config.architecture}'", hint=f"use one of: {', '.join(ARCHITECTURES)}")
    architecture = ARCHITECTURES[config.architecture]
    return architecture(config, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))
