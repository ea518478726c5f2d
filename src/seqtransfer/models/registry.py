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
    check_feature_extractor(config)
    model = ARCHITECTURES[config.architecture].from_vocabularies(config, vocabularies)
    attach_discriminator(model, config.discriminator_hidden)
    attach_language_model(model, config.language_model_words, config.language_model_decoder)
    return model


def check_feature_extractor(config: ModelConfig) -> None:
    """``model.feature_extractor`` serves the models that offer a choice, and ``none`` leaves no
    BiLSTM for a domain discriminator or an auxiliary LM to read: one line each."""
    if config.feature_extractor is None:
        return
    if config.feature_extractor not in getattr(ARCHITECTURES[config.architecture], "feature_extractors", ()):
        raise SeqTransferError(f"model.feature_extractor chooses a tagger's layer between representation and classifier; a {config.architecture} keeps its own",
                               hint="drop model.feature_extractor for this model")
    if config.feature_extractor == "none" and (config.discriminator_hidden or config.language_model_words):
        raise SeqTransferError("model.feature_extractor=none leaves no BiLSTM for the domain discriminator or the auxiliary LM to read",
                               hint="drop model.feature_extractor, or train.adversarial_data / transfer.auxiliary_lm_weight")
