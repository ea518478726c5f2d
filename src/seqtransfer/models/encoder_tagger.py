"""A fine-tuned Transformer encoder with a light tagging head (To-tune-or-not-to-tune paper, "FT").

    h        = Encoder(sub-word windows)          every window of the batch at once      (W, S, H)
    x_t      = h[first sub-word of token t]       tokens of long sentences span windows  (B, T, H)
    y        = softmax or CRF(Linear(dropout(x)))                                        (B, T, L)

The encoder's architecture comes from its folder's config.json (``model.encoder``); its
pretrained weights are loaded once, when training starts (``load_pretrained``), and saved with
the run, so a run directory holds the fine-tuned encoder. Trained by default with AdamW and a
linear warm-up then decay (``train.optimizer`` and ``train.schedule``).
"""

from __future__ import annotations

import os

import torch
from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.outputs import OUTPUTS
from seqtransfer.models.tagger import SequenceLabeller, check_classifier


class EncoderTagger(SequenceLabeller):
    """Transformer encoder + linear (+ CRF) on each token's first sub-word."""

    word_representation = None  # no word or character tables (nothing to precompute per form)

    def __init__(self, config: ModelConfig, word_count: int, character_count: int, label_count: int) -> None:
        super().__init__()
        check_classifier(config)
        from transformers import AutoConfig, AutoModel

        from seqtransfer.embeddings.transformer import encoder_path

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.encoder_name = config.encoder
        self.encoder = AutoModel.from_config(AutoConfig.from_pretrained(str(encoder_path(config.encoder)), local_files_only=True))
        size = self.encoder.config.hidden_size
        self.dropout = Dropout(config.dropout)
        self.classifier = nn.Linear(size, label_count)
        self.output = OUTPUTS[config.classifier](label_count)

    def load_pretrained(self) -> None:
        """Start from the encoder's pretrained weights (before training; a saved run has its own)."""
        from seqtransfer.embeddings.transformer import load_encoder

        _, pretrained = load_encoder(self.encoder_name)
        self.encoder.load_state_dict(pretrained.state_dict())

    def encode(self, batch: Batch) -> torch.Tensor:
        """(W, S, H) the encoder's last layer over the batch's windows (token types for pairs, where the encoder has them)."""
        types = {"token_type_ids": batch.subword_types} if batch.subword_types is not None and getattr(self.encoder.config, "type_vocab_size", 0) > 1 else {}
        return self.encoder(input_ids=batch.subword_ids, attention_mask=batch.subword_mask, **types).last_hidden_state

    def features(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, H) the encoder's last layer at each token's first sub-word."""
        states = self.encode(batch)  # (W, S, H)
        return states.reshape(-1, states.size(-1))[batch.token_index]

    def emissions(self, batch: Batch) -> torch.Tensor:
        return self.classifier(self.dropout(self.features(batch)))
