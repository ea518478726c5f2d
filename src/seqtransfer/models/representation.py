"""Word Representation Extractor (WRE): word embedding + character BiLSTM.

Shapes: B sentences, T tokens, U distinct word forms in the batch, C characters per form.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seqtransfer.data.batching import Batch
from seqtransfer.models.bilstm import BiLSTM
from seqtransfer.models.dropout import Dropout

# Forms longer than this (URLs, hashtags) are encoded in a separate call so that one long
# token does not make every form in the batch pay for its padding.
SHORT_FORM_LENGTH = 12


class CharacterEncoder(nn.Module):
    """Character embedding and BiLSTM; a form is represented by the final states of both directions."""

    def __init__(self, character_count: int, dimension: int, hidden: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(character_count, dimension, padding_idx=0)
        bound = math.sqrt(3.0 / dimension)
        nn.init.uniform_(self.embedding.weight, -bound, bound)
        with torch.no_grad():
            self.embedding.weight[0].zero_()
        self.lstm = BiLSTM(dimension, hidden)
        self.output_size = hidden

    def encode(self, characters: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(U, C) character indices, (U,) lengths -> (U, hidden)."""
        return self.lstm.final_states(self.embedding(characters), lengths)

    def forward(self, characters: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(U, C), (U,) -> (U, hidden), encoding short and long forms separately."""
        short = lengths <= SHORT_FORM_LENGTH
        if bool(short.all()) or not bool(short.any()):
            return self.encode(characters, lengths)
        output = characters.new_zeros((characters.size(0), self.output_size), dtype=torch.float)
        output = output.index_put((short.nonzero().squeeze(1),), self.encode(characters[short, :SHORT_FORM_LENGTH], lengths[short]))
        long_rows = (~short).nonzero().squeeze(1)
        return output.index_put((long_rows,), self.encode(characters[long_rows], lengths[long_rows]))


class WordRepresentation(nn.Module):
    """x_t = [word_embedding(lower(w_t)); char_bilstm(w_t)] with dropout: (B, T) -> (B, T, D + hidden)."""

    def __init__(self, word_count: int, word_dimension: int, character_count: int, char_dimension: int, char_hidden: int, dropout: float) -> None:
        super().__init__()
        self.word_embedding = nn.Embedding(word_count, word_dimension, padding_idx=0)
        self.character_encoder = CharacterEncoder(character_count, char_dimension, char_hidden)
        self.dropout = Dropout(dropout)
        self.output_size = word_dimension + char_hidden

    def forward(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, output_size)."""
        words = self.word_embedding(batch.words)  # (B, T, D)
        forms = self.character_encoder(batch.characters, batch.character_lengths)  # (U, hidden)
        characters = forms[batch.form_index]  # (B, T, hidden)
        return self.dropout(torch.cat([words, characters], dim=-1))
