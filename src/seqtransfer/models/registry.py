"""Model architectures by name: an encoder family and a head, or one of the composite models.

Most architectures are a task kind's head on the encoder ``model.encoder_family`` names (or the
config implies: ``models/encoders.py``). PretRand and the hierarchical multi-task model compose
the word encoder's parts with heads of their own.
"""

from __future__ import annotations

from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.discriminator import attach_discriminator
from seqtransfer.models.encoders import encoder_family, model_class, pretrained_encoder
from seqtransfer.models.language_model_heads import attach_language_model
from seqtransfer.models.multitask import HierarchicalMultiTask
from seqtransfer.models.pretrand import PretRand

# architecture -> the task kind whose head it puts on the encoder (the encoder_* names: a fine-tuned encoder's)
HEADED: dict[str, str] = {
    "tagger": "tagging",
    "encoder_tagger": "tagging",
    "parser": "dependency",
    "encoder_parser": "dependency",
    "sentence_classifier": "sentence",
    "encoder_classifier": "sentence",
    "sentence_regressor": "regression",
    "encoder_regressor": "regression",
}
COMPOSITES: dict[str, type[nn.Module]] = {"pretrand": PretRand, "multitask": HierarchicalMultiTask}
ARCHITECTURES = (*HEADED, *COMPOSITES)


def architecture_class(config: ModelConfig) -> type[nn.Module]:
    """The model class ``config`` describes."""
    if config.architecture in COMPOSITES:
        return COMPOSITES[config.architecture]
    if config.architecture not in HEADED:
        raise SeqTransferError(f"unknown architecture '{config.architecture}'", hint=f"use one of: {', '.join(ARCHITECTURES)}")
    return model_class(encoder_family(config), HEADED[config.architecture])


def build_model(config: ModelConfig, vocabularies: Vocabularies) -> nn.Module:
    """A freshly initialised model sized for ``vocabularies``."""
    model_type = architecture_class(config)
    check_feature_extractor(config, model_type)
    model = model_type.from_vocabularies(config, vocabularies)
    attach_discriminator(model, config.discriminator_hidden)
    attach_language_model(model, config.language_model_words, config.language_model_decoder, masked=pretrained_encoder(model))
    return model


def check_feature_extractor(config: ModelConfig, model_type: type[nn.Module]) -> None:
    """``model.feature_extractor`` serves the models that offer a choice, and ``none`` leaves no
    BiLSTM for a domain discriminator or an auxiliary LM to read: one line each."""
    if config.feature_layers > 1 and config.architecture == "pretrand":  # a source's stack would find no layers to fill
        raise SeqTransferError(
            f"PretRand's branches are one BiLSTM layer each, and model.feature_layers is {config.feature_layers} (its source's, when it transfers from one)",
            hint="train the source with model.feature_layers=1, or fine-tune it (--method finetune)",
        )
    if config.feature_extractor is None:
        return
    if config.feature_extractor not in getattr(model_type, "feature_extractors", ()):
        raise SeqTransferError(
            f"model.feature_extractor chooses a tagger's layer between representation and classifier; a {config.architecture} keeps its own", hint="drop model.feature_extractor for this model"
        )
    if config.feature_extractor == "none" and (config.discriminator_hidden or config.language_model_words):
        raise SeqTransferError(
            "model.feature_extractor=none leaves no BiLSTM for the domain discriminator or the auxiliary LM to read",
            hint="drop model.feature_extractor, or train.adversarial_data / transfer.auxiliary_lm_weight",
        )
