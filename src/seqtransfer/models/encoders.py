"""Encoders: what turns a batch into token states (B, T, D), one registry line per family.

A model is one encoder and one head (``models/heads.py``, keyed by task kind). ``model_class``
joins them into one ``nn.Module`` class: the encoder's modules and the head's sit side by side on
the model, so parameter names stay flat (``word_representation.``, ``feature_extractor.``,
``encoder.``, ``classifier.``, ``output.``), which is what transfer schemes select and saved runs
hold. An encoder family is a class with:

    build_encoder(config, word_count, character_count, task_kind,       its modules, on self
                  vocabularies) -> D
    features(batch) -> (B, T, D)                                        token states
    layer_prefixes(names) -> [prefix, ...], shared names                its layer groups, bottom to top
    word_representation                                                 the word tables (None: it has none)
and where it has them: ``sentence_vector(batch) -> (B, D)`` (a [CLS]), ``reads_root`` and
``rooted_features(batch) -> (B, T+1, D)`` (a ROOT of its own for the parser), ``load_pretrained()``, ``frozen(name)`` and
``stored(name)`` (adapters), ``feature_extractors`` (the ``model.feature_extractor`` choices).

    words         word vector + character BiLSTM (+ frozen encoder features) -> BiLSTM
    transformer   a fine-tuned Hugging Face encoder (models/transformer_encoder.py)
    bilstm_lm     our ELMo-style recurrent LM, fine-tuned (models/recurrent_encoder.py)
    awd_lstm      our AWD-LSTM LM, fine-tuned (models/awd_encoder.py; ULMFiT's classifier)
"""

from __future__ import annotations

import re
from functools import cache

import torch
from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.embeddings.awd_lstm import is_awd_lstm
from seqtransfer.embeddings.recurrent_lm import is_recurrent_lm
from seqtransfer.embeddings.transformer import encoder_path
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.awd_encoder import AwdLstmEncoder
from seqtransfer.models.biaffine import RootedBiLSTM
from seqtransfer.models.bilstm import BiLSTM, NoFeatureExtractor, StackedBiLSTM
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.heads import HEADS
from seqtransfer.models.recurrent_encoder import RecurrentEncoder
from seqtransfer.models.representation import word_representation_of
from seqtransfer.models.transformer_encoder import TransformerEncoder


def bilstm_layer_prefixes(names: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """The word representation, then each layer of the BiLSTM (a parser's stacked layers), bottom
    to top; the BiLSTM's own inputs outside its layers (the parser's learned ROOT vector) go with
    the word representation."""
    stacked = sorted({int(match.group(1)) for name in names if (match := re.match(r"feature_extractor\.(?:lstm\.)?layers\.(\d+)\.", name))})
    inner = "feature_extractor.lstm." if any(name.startswith("feature_extractor.lstm.") for name in names) else "feature_extractor."
    extractor = [f"{inner}layers.{layer}." for layer in stacked] or ["feature_extractor."]
    shared = tuple(name for name in names if name.startswith("feature_extractor.") and not name.startswith(tuple(extractor)))
    return ["word_representation.", *extractor], shared


class WordEncoder:
    """x_t = [word vector; character BiLSTM (; frozen encoder mix; tag)] -> BiLSTM of ``model.hidden``
    (``model.feature_layers`` of them stacked; ``model.feature_extractor=none``: no BiLSTM); for a parser, a learned ROOT input, then
    ``model.parser_layers`` stacked BiLSTMs of ``model.parser_hidden`` (Stanza's sizes)."""

    feature_extractors = ("bilstm", "none")

    def build_encoder(self, config: ModelConfig, word_count: int, character_count: int, task_kind: str, vocabularies=None) -> int:
        self.word_representation = word_representation_of(config, word_count, character_count)
        size = self.word_representation.output_size
        self.reads_root = task_kind == "dependency"  # the parser's BiLSTM reads a learned ROOT input first
        if self.reads_root:
            self.feature_extractor = RootedBiLSTM(size, config.parser_hidden, config.parser_layers, config.dropout)
            return config.parser_hidden
        if config.feature_extractor == "none":  # the representation feeds the head (To-tune paper: FE + CRF)
            self.feature_extractor = NoFeatureExtractor()
            return size
        if config.feature_layers > 1:  # the To-tune paper's NER feature extraction: two BiLSTM layers (appendix A.1)
            self.feature_extractor = StackedBiLSTM(size, config.hidden, config.feature_layers, Dropout(config.dropout))
        else:
            self.feature_extractor = BiLSTM(size, config.hidden)
        return config.hidden

    def features(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, H) feature extractor states (before dropout)."""
        states = self.feature_extractor(self.word_representation(batch), batch.lengths)
        return states[:, 1:] if self.reads_root else states

    def layer_prefixes(self, names: list[str]) -> tuple[list[str], tuple[str, ...]]:
        return bilstm_layer_prefixes(names)

    def load_word_vectors(self, matrix) -> None:
        """Copy a (V, D) embedding matrix into the word embedding."""
        self.word_representation.load_vectors(matrix)

    def rooted_features(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T+1, H) a parser's BiLSTM states, its ROOT first (``reads_root``)."""
        return self.feature_extractor(self.word_representation(batch), batch.lengths)


ENCODERS: dict[str, type] = {"words": WordEncoder, "transformer": TransformerEncoder, "bilstm_lm": RecurrentEncoder, "awd_lstm": AwdLstmEncoder}


def encoder_family(config: ModelConfig) -> str:
    """The encoder a model config describes: ``model.encoder_family`` when set; a fine-tuned
    encoder folder's family (``bilstm_lm`` for our recurrent LM, else ``transformer``); otherwise ``words``."""
    if config.encoder_family:
        return config.encoder_family
    if not config.encoder or config.encoder_mode != "finetune":
        return "words"
    folder = encoder_path(config.encoder)
    if is_recurrent_lm(folder):
        return "bilstm_lm"
    return "awd_lstm" if is_awd_lstm(folder) else "transformer"


@cache
def model_class(family: str, task_kind: str) -> type[nn.Module]:
    """The ``nn.Module`` class of one encoder family and one task kind's head."""
    if family not in ENCODERS:
        raise SeqTransferError(f"unknown encoder family '{family}'", hint=f"use model.encoder_family={' or '.join(ENCODERS)}")
    if task_kind not in HEADS:
        raise SeqTransferError(f"no head for task kind '{task_kind}'", hint=f"the heads are: {', '.join(HEADS)}")
    encoder, head = ENCODERS[family], HEADS[task_kind]

    def __init__(self, config: ModelConfig, word_count: int, character_count: int, label_count: int, vocabularies=None) -> None:
        """``vocabularies``: the run's (an encoder that reads the run's characters maps them to its own)."""
        nn.Module.__init__(self)
        self.check_head(config)
        size = self.build_encoder(config, word_count, character_count, self.task_kind, vocabularies)
        self.build_head(config, size, label_count)

    name = f"{family.title().replace('_', '')}{task_kind.title()}Model"
    choices = encoder.feature_extractors if head.chooses_feature_extractor else ()
    return type(name, (head, encoder, nn.Module), {"__init__": __init__, "from_vocabularies": classmethod(from_vocabularies), "feature_extractors": choices, "encoder_family": family})


def pretrained_encoder(model: nn.Module) -> bool:
    """The model fine-tunes a pretrained Transformer encoder (L2-SP can pull it towards its pretrained weights)."""
    return getattr(model, "encoder", None) is not None and hasattr(model, "load_pretrained")


def from_vocabularies(cls, config: ModelConfig, vocabularies) -> nn.Module:
    """A model sized for ``vocabularies`` (words, characters, labels)."""
    return cls(config, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels), vocabularies)
