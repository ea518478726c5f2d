"""The base sequence tagger of the PretRand paper, section 3: Psi(Phi(Upsilon(w))), and a model's size.

    word_representation (WRE, Upsilon): (B, T) -> (B, T, D_word + D_char)
    feature_extractor   (FE, Phi):      BiLSTM -> (B, T, H)
    classifier          (Cl, Psi):      linear -> (B, T, L) emissions
    output:                             softmax or CRF: loss and decoding

The tagger is the word encoder under the tagging head (``models/encoders.py``, ``models/heads.py``);
a fine-tuned Transformer under the same head is ``EncoderTagger``. Parameter names start with
these four module names; transfer schemes select parameters by them.
"""

from __future__ import annotations

from torch import nn

from seqtransfer.embeddings.transformer import encoder_parameters
from seqtransfer.models.encoders import model_class

Tagger = model_class("words", "tagging")  # word+char BiLSTM tagger with a softmax or CRF output (model.feature_extractor=none: no BiLSTM)
EncoderTagger = model_class("transformer", "tagging")  # a fine-tuned Transformer + linear (+ CRF) on each token's first sub-word (or mean)


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters (optionally only those with requires_grad)."""
    return sum(parameter.numel() for parameter in model.parameters() if parameter.requires_grad or not trainable_only)


def size_metrics(model: nn.Module, config) -> dict[str, int]:
    """A run's ``parameters`` for metrics.json: the model's own, plus the frozen encoder its
    features come from (``frozen_encoder_parameters``, also recorded by itself) where it has one."""
    frozen = frozen_encoder_parameters(config)
    return {"parameters": count_parameters(model) + frozen, **({"frozen_encoder_parameters": frozen} if frozen else {})}


def shared_frozen_encoder_parameters(configs) -> int:
    """Parameters of the frozen encoders that several models' features come from, each encoder
    counted once (members of an ensemble that read one frozen encoder share it)."""
    frozen = {config.encoder: count for config in configs if (count := frozen_encoder_parameters(config))}
    return sum(frozen.values())


def frozen_encoder_parameters(config) -> int:
    """Parameters of a frozen encoder that computes the model's features outside it
    (``model.encoder_mode=features``): part of what a run needs, never trained; 0 otherwise."""
    if not config.encoder or config.encoder_mode != "features":
        return 0

    return encoder_parameters(config.encoder)
