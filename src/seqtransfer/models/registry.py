"""Model architectures by name: one line per architecture."""

from __future__ import annotations

from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.biaffine import BiaffineParser
from seqtransfer.models.encoder_tagger import EncoderTagger
from seqtransfer.models.sentence import EncoderClassifier, EncoderRegressor, SentenceClassifier, SentenceRegressor
from seqtransfer.models.multitask import HierarchicalMultiTask
from seqtransfer.models.pretrand import PretRand
from seqtransfer.models.tagger import Tagger
from seqtransfer.transfer.adversarial import attach_discriminator
from seqtransfer.transfer.auxiliary_lm import attach_language_model

ARCHITECTURES: dict[str, type[nn.Module]] = {"tagger": Tagger, "pretrand": PretRand, "parser": BiaffineParser, "multitask": HierarchicalMultiTask, "encoder_tagger": EncoderTagger,
                                               "sentence_classifier": SentenceClassifier, "encoder_classifier": EncoderClassifier,
                                               "sentence_regressor": SentenceRegressor, "encoder_regressor": EncoderRegressor}


def build_model(config: ModelConfig, vocabularies: Vocabularies) -> nn.Module:
    """A freshly initialised model sized for ``vocabularies``."""
    if config.architecture not in ARCHITECTURES:
        raise SeqTransferError(f"unknown architecture '{config.architecture}'", hint=f"use one of: {', '.join(ARCHITECTURES)}")
    if config.feature_extractor is not None and config.architecture not in ("tagger", "encoder_tagger"):
        raise SeqTransferError(f"model.feature_extractor chooses a tagger's layer between representation and classifier; a {config.architecture} keeps its own",
                               hint="drop model.feature_extractor for this model")
    model = ARCHITECTURES[config.architecture].from_vocabularies(config, vocabularies)
    attach_discriminator(model, config.discriminator_hidden)
    attach_language_model(model, config.language_model_words)
    return model
