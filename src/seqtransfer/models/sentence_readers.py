"""Sentence readers: how a sentence head turns token states into one vector per sentence (or pair).

``model.sentence_reader`` chooses one (the To-tune paper's heads, §3 and appendix A):

    pooled        the encoder's sentence vector ([CLS], model.sentence_pooling=cls) or the mean of
                  its token states; a pair read apart: [u; v; |u - v|; u * v] (Conneau et al. 2017)
    pooler        a fine-tuned Transformer's own pooler over [CLS] (BERT's dense + tanh), as
                  transformers' sequence classifiers read it: such a run exports to Hugging Face
    max           the maximum of the token states, feature by feature (fine-tuned ELMo, classification)
    biattention   a pair: cross-sentence bi-attention between the two texts' token states, then
                  ESIM's enhanced pooling; no weights of its own (fine-tuned ELMo, pairs)
    esim          a pair: ESIM (Chen et al. 2017): BiLSTM encoding of each text, soft alignment,
                  enhancement, a projection, a composition BiLSTM, average and max pooling, a tanh layer
    bcn           a text: the bi-attentive classification network (McCann et al. 2017), simplified:
                  ReLU layer, BiLSTM, self bi-attention [X; X - C; X * C], integrating BiLSTM, max /
                  min / mean / self-attentive pooling, then model.bcn_maxout_layers maxout layers (1)
                  before the head's linear output layer (AllenNLP's BCN, the paper's: two maxout
                  layers of 1,200 and 600 units, then a maxout output layer)
    ulmfit        ULMFiT's classifier (Howard & Ruder 2018): concat pooling [last state; max; mean]
                  -> batch norm, dropout, a ReLU layer of 50 units -> batch norm, dropout

ESIM and the BCN read the word representation themselves, as published: over word vectors or frozen
features no BiLSTM sits before them (``fill_reader_input`` fills ``model.feature_extractor=none``).
Their layers are ``model.hidden`` wide, both directions of a BiLSTM together (100 units a direction by
default; Chen et al.'s ESIM and AllenNLP's BCN: 300).

``to_tune`` picks the paper's head for the run: frozen features read by ESIM (pairs) or the BCN
(single texts), a fine-tuned encoder by bi-attention (pairs) or max pooling (single texts).

A reader's weights sit under ``reader.``; the head's output layer (``classifier``) reads its vector.
Shapes: B sentences, T tokens, H state size; a pair's texts A and B have Ta and Tb tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as functional
from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.bilstm import BiLSTM
from seqtransfer.models.dropout import Dropout


def lowest(values: torch.Tensor) -> float:
    """The lowest finite value of ``values``' dtype: a masked score or state that no real one is
    under, in any precision (a fixed -1e4 lost to a character CNN's unbounded layer)."""
    return torch.finfo(values.dtype).min


def mean_over(states: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """(B, T, H) states, (B, T) bool -> (B, H) mean of the selected positions (0 where none is)."""
    weights = selected.to(states.dtype).unsqueeze(-1)
    return (states * weights).sum(1) / weights.sum(1).clamp(min=1.0)


def max_over(states: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """(B, T, H), (B, T) bool -> (B, H) maximum over the selected positions (0 where none is)."""
    pooled = states.masked_fill(~selected.unsqueeze(-1), lowest(states)).amax(1)
    return torch.where(selected.any(1, keepdim=True), pooled, torch.zeros_like(pooled))


def split_pair(states: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(B, T, H) states of "A [SEP] B" -> A's (B, Ta, H) and mask (B, Ta), B's (B, Tb, H) and mask,
    each text's tokens moved to the front of its rows."""
    if batch.segments is None:
        raise SeqTransferError(
            "this model reads sentence pairs, and no sentence given to it has a [SEP] between its two parts", hint='give each pair as "A [SEP] B" (tokens of A, then "[SEP]", then tokens of B)'
        )
    parts = []
    for segment in (0, 1):
        chosen = (batch.segments == segment) & batch.mask  # (B, T)
        order = torch.argsort((~chosen).to(torch.int8), dim=1, stable=True)  # the chosen positions first, in order
        width = max(int(chosen.sum(1).max()), 1)
        index = order[:, :width]
        parts += [states.gather(1, index.unsqueeze(-1).expand(-1, -1, states.size(-1))), chosen.gather(1, index)]
    return parts[0], parts[1], parts[2], parts[3]


def bi_attention(first: torch.Tensor, first_mask: torch.Tensor, second: torch.Tensor, second_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Soft alignment (ESIM's local inference): each token of one text attends over the other's:
    (B, Ta, H), (B, Tb, H) -> (B, Ta, H) the second text aligned to each first token, (B, Tb, H) the reverse."""
    scores = first @ second.transpose(1, 2)  # (B, Ta, Tb)
    # a text with no token (B of "A [SEP]") aligns nothing: its weights are zero, not uniform over padding
    to_second = scores.masked_fill(~second_mask.unsqueeze(1), lowest(scores)).softmax(-1) * second_mask.unsqueeze(1)
    to_first = scores.transpose(1, 2).masked_fill(~first_mask.unsqueeze(1), lowest(scores)).softmax(-1) * first_mask.unsqueeze(1)
    return to_second @ second, to_first @ first


def enhanced(states: torch.Tensor, aligned: torch.Tensor) -> torch.Tensor:
    """[a; a~; a - a~; a * a~]: (B, T, H) twice -> (B, T, 4H)."""
    return torch.cat([states, aligned, states - aligned, states * aligned], dim=-1)


def average_and_max(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, F), (B, T) -> (B, 2F): [mean; max] over the real tokens."""
    return torch.cat([mean_over(states, mask), max_over(states, mask)], dim=-1)


class PooledReader(nn.Module):
    """The encoder's sentence vector or the mean of the token states; a pair read apart: [u; v; |u-v|; u*v]."""

    def __init__(self, config: ModelConfig, input_size: int, owner) -> None:
        super().__init__()
        self.pairs = bool(config.sentence_pairs) and not getattr(owner, "reads_pairs_jointly", False)
        # a [CLS] reads one text when the texts of a pair are encoded each alone: the pair is then pooled apart
        # a BiLSTM between encoder and reader (model.feature_extractor=bilstm): its states are read, not the [CLS]
        self.use_sentence_vector = config.sentence_pooling == "cls" and hasattr(owner, "sentence_vector") and not self.pairs and getattr(owner, "feature_extractor", None) is None
        self.output_size = input_size * (4 if self.pairs and not self.use_sentence_vector else 1)

    def forward(self, owner, batch: Batch) -> torch.Tensor:
        if self.use_sentence_vector:
            return owner.sentence_vector(batch)
        states = owner.features(batch)
        if not self.pairs:
            return mean_over(states, batch.mask)  # (B, H) mean over the sentence's tokens
        if batch.segments is None:
            split_pair(states, batch)  # one error line: a pair model given no pair
        first, second = mean_over(states, batch.segments == 0), mean_over(states, batch.segments == 1)
        return torch.cat([first, second, (first - second).abs(), first * second], dim=-1)


class PoolerReader(nn.Module):
    """The encoder's own pooler over [CLS] (dense + tanh): (B, H), as ``BertForSequenceClassification``
    reads it (and MPNet's or RoBERTa's classification head, whose dense + tanh it is); a pair is read
    jointly, "[CLS] A [SEP] B [SEP]"."""

    def __init__(self, config: ModelConfig, input_size: int, owner) -> None:
        super().__init__()
        if not hasattr(owner, "pooled_vector") or owner.pooler() is None or getattr(owner, "feature_extractor", None) is not None:
            raise SeqTransferError(
                "model.sentence_reader=pooler reads a fine-tuned Transformer's own pooler, and this model has none",
                hint="fine-tune a BERT-like encoder (model.encoder_mode=finetune) or use model.sentence_reader=pooled",
            )
        if config.sentence_pairs and not owner.reads_pairs_jointly:
            raise SeqTransferError("model.sentence_reader=pooler reads a pair as one input", hint="drop model.pair_encoding=separate or use model.sentence_reader=pooled")
        self.output_size = input_size

    def forward(self, owner, batch: Batch) -> torch.Tensor:
        return owner.pooled_vector(batch)


class MaxReader(nn.Module):
    """The maximum of the token states, feature by feature (over a whole pair, as one text)."""

    def __init__(self, config: ModelConfig, input_size: int, owner) -> None:
        super().__init__()
        self.output_size = input_size

    def forward(self, owner, batch: Batch) -> torch.Tensor:
        return max_over(owner.features(batch), batch.mask)


class BiattentionReader(nn.Module):
    """A pair: bi-attention between the texts' token states, [a; a~; a-a~; a*a~] and the same for b,
    then [mean; max] of each: (B, 16H); no weights of its own."""

    def __init__(self, config: ModelConfig, input_size: int, owner) -> None:
        super().__init__()
        self.output_size = 16 * input_size

    def forward(self, owner, batch: Batch) -> torch.Tensor:
        first, first_mask, second, second_mask = split_pair(owner.features(batch), batch)
        aligned_first, aligned_second = bi_attention(first, first_mask, second, second_mask)
        return torch.cat([average_and_max(enhanced(first, aligned_first), first_mask), average_and_max(enhanced(second, aligned_second), second_mask)], -1)


class ESIMReader(nn.Module):
    """ESIM: BiLSTM encoding of each text (model.hidden, both directions), soft alignment, enhancement,
    a ReLU projection to model.hidden, a composition BiLSTM, [mean; max] of each text, a tanh layer."""

    def __init__(self, config: ModelConfig, input_size: int, owner) -> None:
        super().__init__()
        hidden = config.hidden
        self.dropout = Dropout(config.dropout)
        self.encoding = BiLSTM(input_size, hidden)
        self.projection = nn.Linear(4 * hidden, hidden)
        self.composition = BiLSTM(hidden, hidden)
        self.output = nn.Linear(4 * hidden, hidden)
        self.output_size = hidden

    def forward(self, owner, batch: Batch) -> torch.Tensor:
        first, first_mask, second, second_mask = split_pair(owner.features(batch), batch)
        first = self.encoding(self.dropout(first), first_mask.sum(1).clamp(min=1))
        second = self.encoding(self.dropout(second), second_mask.sum(1).clamp(min=1))
        aligned_first, aligned_second = bi_attention(first, first_mask, second, second_mask)
        composed = [
            self.composition(functional.relu(self.projection(self.dropout(enhanced(states, aligned)))), mask.sum(1).clamp(min=1))
            for states, aligned, mask in ((first, aligned_first, first_mask), (second, aligned_second, second_mask))
        ]
        pooled = torch.cat([average_and_max(composed[0], first_mask), average_and_max(composed[1], second_mask)], dim=-1)
        return torch.tanh(self.output(self.dropout(pooled)))


class BCNReader(nn.Module):
    """The bi-attentive classification network on one text (X = Y); ``model.bcn_maxout_layers`` maxout
    layers of model.hidden units after the pooling (1 by default; AllenNLP's: two hidden ones of 1,200
    and 600 and a maxout output layer where ours is the head's linear one), each of ``pieces``
    pieces, dropout before each."""

    def __init__(self, config: ModelConfig, input_size: int, owner, pieces: int = 4) -> None:
        super().__init__()
        hidden = config.hidden
        self.dropout = Dropout(config.dropout)
        self.feedforward = nn.Linear(input_size, hidden)
        self.encoder = BiLSTM(hidden, hidden)
        self.integrator = BiLSTM(3 * hidden, hidden)
        self.attention = nn.Linear(hidden, 1)  # self-attentive pooling's scores
        self.maxout = nn.Linear(4 * hidden, hidden * pieces)
        self.more_maxout = nn.ModuleList(nn.Linear(hidden, hidden * pieces) for _ in range(config.bcn_maxout_layers - 1))  # empty: the first layer's names stay
        self.pieces = pieces
        self.output_size = hidden

    def forward(self, owner, batch: Batch) -> torch.Tensor:
        mask, lengths = batch.mask, batch.lengths.to(batch.mask.device)
        encoded = self.encoder(functional.relu(self.feedforward(self.dropout(owner.features(batch)))), lengths)  # (B, T, H)
        context, _ = bi_attention(encoded, mask, encoded, mask)
        integrated = self.integrator(self.dropout(torch.cat([encoded, encoded - context, encoded * context], dim=-1)), lengths)
        scores = self.attention(integrated).squeeze(-1)
        weights = scores.masked_fill(~mask, lowest(scores)).softmax(-1) * mask  # (B, T); an empty sentence pools nothing
        minimum = -max_over(-integrated, mask)
        pooled = torch.cat([max_over(integrated, mask), minimum, mean_over(integrated, mask), (weights.unsqueeze(-1) * integrated).sum(1)], dim=-1)
        vector = self.maxout(self.dropout(pooled)).view(pooled.size(0), -1, self.pieces).amax(-1)
        for layer in self.more_maxout:
            vector = layer(self.dropout(vector)).view(pooled.size(0), -1, self.pieces).amax(-1)
        return vector


class ULMFiTReader(nn.Module):
    """Concat pooling, then ULMFiT's two blocks of batch norm and dropout around a ReLU layer of
    ``HIDDEN`` units; the head's linear layer reads its output (the classifier's second block).
    The last state is the last token's (both directions of a bidirectional encoder at that token)."""

    HIDDEN = 50

    def __init__(self, config: ModelConfig, input_size: int, owner) -> None:
        super().__init__()
        self.first_norm, self.second_norm = nn.BatchNorm1d(3 * input_size), nn.BatchNorm1d(self.HIDDEN)
        self.dropout = Dropout(config.dropout)
        self.hidden = nn.Linear(3 * input_size, self.HIDDEN)
        self.output_size = self.HIDDEN

    def normalized(self, norm: nn.BatchNorm1d, inputs: torch.Tensor) -> torch.Tensor:
        """Batch norm; a training batch of one sentence (no batch statistics) uses the running ones."""
        if self.training and inputs.size(0) == 1:
            return functional.batch_norm(inputs, norm.running_mean, norm.running_var, norm.weight, norm.bias, training=False)
        return norm(inputs)

    def forward(self, owner, batch: Batch) -> torch.Tensor:
        states, mask = owner.features(batch), batch.mask
        last = states[torch.arange(states.size(0), device=states.device), (batch.lengths.to(states.device) - 1).clamp(min=0)]  # (B, H)
        pooled = torch.cat([last, max_over(states, mask), mean_over(states, mask)], dim=-1)  # (B, 3H)
        hidden = functional.relu(self.hidden(self.dropout(self.normalized(self.first_norm, pooled))))
        return self.dropout(self.normalized(self.second_norm, hidden))


OWN_ENCODING = ("esim", "bcn")  # readers whose published models encode the word representation with BiLSTMs of their own


def fill_reader_input(config: ModelConfig) -> str | None:
    """``model.feature_extractor=none`` for ESIM or the BCN over word vectors or frozen features
    (the published models read the representation itself; the words encoder's default BiLSTM
    would put a second one before theirs); None when nothing is filled: the setting is given, a
    BiLSTM stack is asked for (``model.feature_layers``), or the encoder is fine-tuned (it puts
    nothing between by default). Needs ``sentence_pairs``; the caller leaves out runs whose source,
    discriminator or auxiliary LM reads a BiLSTM."""
    name = reader_name(config)
    fine_tuned = bool(config.encoder) and config.encoder_mode == "finetune"
    if config.feature_extractor is not None or config.feature_layers > 1 or name not in OWN_ENCODING or fine_tuned:
        return None
    config.feature_extractor = "none"
    return f"model.feature_extractor=none: the {name} reader encodes the word representation with a BiLSTM of its own, as the published model does"


READERS: dict[str, type[nn.Module]] = {"pooled": PooledReader, "pooler": PoolerReader, "max": MaxReader, "biattention": BiattentionReader, "esim": ESIMReader, "bcn": BCNReader, "ulmfit": ULMFiTReader}
PAIR_READERS = ("biattention", "esim")


def reader_name(config: ModelConfig) -> str:
    """``model.sentence_reader`` (None: pooled; ``to_tune``: the To-tune paper's head for the
    encoder's mode and the data's texts)."""
    if config.sentence_reader != "to_tune":
        return config.sentence_reader or "pooled"
    fine_tuned = bool(config.encoder) and config.encoder_mode == "finetune"
    if config.sentence_pairs:
        return "biattention" if fine_tuned else "esim"
    return "max" if fine_tuned else "bcn"


def build_reader(config: ModelConfig, input_size: int, owner) -> nn.Module:
    """The reader ``model.sentence_reader`` names (``reader_name``); a pair reader needs pairs."""
    name = reader_name(config)
    if name not in READERS:
        raise SeqTransferError(f"unknown sentence reader '{name}'", hint=f"use model.sentence_reader={' or '.join(READERS)} or to_tune")
    if name in PAIR_READERS and config.sentence_pairs is False:
        raise SeqTransferError(f"model.sentence_reader={name} reads sentence pairs, and this data has none", hint="use pooled, max or bcn for single texts")
    return READERS[name](config, input_size, owner)
