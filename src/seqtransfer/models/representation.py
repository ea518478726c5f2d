"""Word Representation Extractor (WRE): word embedding + character BiLSTM.

Shapes: B sentences, T tokens, U distinct word forms in the batch, C characters per form.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from seqtransfer.data.batching import Batch, EncodedSentences, pad_arrays
from seqtransfer.embeddings.transformer import ScalarMix
from seqtransfer.models.bilstm import BiLSTM, reversal_index
from seqtransfer.models.dropout import Dropout

# The cost of one character-LSTM call (both directions), in units of one (form, character)
# cell. Fitted over forms x width grids on this CPU (2 threads, 50 units): forward + backward
# costs about 0.84 ms + 5.8 us per time step + 1.7 us per cell; forward alone 0.17 ms + 3.5 us
# per step + 0.46 us per cell. In cells, a call costs 380-500 and a time step 3-8.
CALL_COST = 400
STEP_COST = 5
FORM_TABLE_LIMIT = 200_000  # forms encoded at once by ``WordRepresentation.forms_of`` (80 MB at 100 units)


def bucket_size(size: int) -> int:
    """The smallest size >= ``size`` on a grid of 8 steps per power of two (at most 12.5% more).

    oneDNN builds and caches one LSTM primitive per input shape. Rounding the number of forms
    and their width cuts the distinct shapes of two training epochs to about a third (WNUT-17:
    170 instead of 433; CoNLL-2003: 227 instead of 680), and the cache with them.
    """
    step = 1 << max(size.bit_length() - 4, 0)
    return -(-size // step) * step


def length_groups(sizes: list[int]) -> list[tuple[int, int]]:
    """Split forms sorted by length into slices ``[start, end)``, one LSTM call each, at least cost.

    Each call pays ``CALL_COST`` plus ``STEP_COST`` per time step plus one per cell of its
    padded (forms x width) block, both sizes rounded up by ``bucket_size``. One long token (a
    URL, a hashtag) then gets a call of its own instead of making every form pay for its
    padding, while a batch of short forms stays in one call. Exact dynamic programming over the
    points where the length changes (about 17 in a WNUT-17 training batch, 60 us).
    """
    ends = list({size: index + 1 for index, size in enumerate(sizes)}.values())  # where each length ends
    cuts = [0, *ends]
    best, previous = [0], [0]  # cheapest cost of forms [0, cuts[j]) and where its last slice starts
    for j in range(1, len(cuts)):
        end = cuts[j]
        width = bucket_size(sizes[end - 1])
        fixed = CALL_COST + STEP_COST * width
        cost, start = min((best[i] + fixed + bucket_size(end - cuts[i]) * width, i) for i in range(j))
        best.append(cost)
        previous.append(start)
    groups, j = [], len(cuts) - 1
    while j:
        groups.append((cuts[previous[j]], cuts[j]))
        j = previous[j]
    return groups[::-1]


class CharacterEncoder(nn.Module):
    """Character embedding and BiLSTM; a form is represented by the final states of both directions."""

    # ``length_groups``' costs were fitted on this CPU, where a call costs as much as a few hundred
    # padded cells. On a GPU a padded cell costs next to nothing, while each call adds its launches
    # and runs its time steps after the previous call's: there every form goes in one call, as wide
    # as the longest form. None: one call on devices other than the CPU; benchmarks/launches.py sets
    # True to count what a GPU runs.
    one_call: bool | None = None

    def __init__(self, character_count: int, dimension: int, hidden: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(character_count, dimension, padding_idx=0)
        bound = math.sqrt(3.0 / dimension)
        nn.init.uniform_(self.embedding.weight, -bound, bound)
        with torch.no_grad():
            self.embedding.weight[0].zero_()
        self.lstm = BiLSTM(dimension, hidden)
        self.output_size = hidden

    def encode(self, characters: torch.Tensor, reversed_characters: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(U, C) character indices, the same with each form's characters reversed, (U,) lengths -> (U, hidden).

        U and C are padded up to ``bucket_size`` (extra forms are one padding character long);
        the padding never reaches the real forms.
        """
        count, width = characters.shape
        extra_forms, extra_width = bucket_size(count) - count, bucket_size(width) - width
        if extra_forms or extra_width:
            characters, reversed_characters = (functional.pad(side, (0, extra_width, 0, extra_forms)) for side in (characters, reversed_characters))
            lengths = functional.pad(lengths, (0, extra_forms), value=1)
        forward_inputs, backward_inputs = self.embedding(torch.cat([characters, reversed_characters])).chunk(2)  # (U, C, D) each
        return self.lstm.final_states(forward_inputs, lengths, reversed_inputs=backward_inputs)[:count]

    def encode_in_one_call(self, characters: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(U, C), (U,) -> (U, hidden) in one LSTM call, in any order: no length groups and no read of
        the lengths on the host (what an exported ONNX graph runs; the padding never reaches the forms)."""
        reversed_characters = characters.gather(1, reversal_index(lengths, characters.size(1)))
        return self.lstm.final_states(self.embedding(characters), lengths, reversed_inputs=self.embedding(reversed_characters))

    def forward(self, characters: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(U, C), (U,) -> (U, hidden), one LSTM call per slice of ``length_groups``.

        Forms sorted by length (as ``make_batch`` gives them) make each group a slice;
        otherwise they are sorted here and put back in order.
        """
        host_lengths = lengths.cpu()  # the slices are chosen on the host (a batch keeps these lengths on the CPU)
        if host_lengths.numel() > 1 and not bool((host_lengths[1:] >= host_lengths[:-1]).all()):
            order = torch.argsort(host_lengths, stable=True)
            return self(characters[order.to(characters.device)], host_lengths[order])[torch.argsort(order).to(characters.device)]
        lengths = host_lengths.to(characters.device, non_blocking=True)
        reversed_characters = characters.gather(1, reversal_index(lengths, characters.size(1)))
        sizes = host_lengths.tolist()
        one_call = characters.device.type != "cpu" if CharacterEncoder.one_call is None else CharacterEncoder.one_call
        groups = [(0, len(sizes))] if one_call else length_groups(sizes)
        pieces = [self.encode(characters[start:end, : sizes[end - 1]], reversed_characters[start:end, : sizes[end - 1]], lengths[start:end]) for start, end in groups]
        return torch.cat(pieces) if len(pieces) > 1 else pieces[0]

    def encode_all(self, form_characters: Sequence[np.ndarray], chunk_size: int = 4096) -> torch.Tensor:
        """Character indices of F forms -> (F, hidden), shortest forms first, ``chunk_size`` per call."""
        lengths = np.fromiter((max(len(characters), 1) for characters in form_characters), np.int64, len(form_characters))
        order = np.argsort(lengths, kind="stable")
        device = self.embedding.weight.device
        table = torch.empty(len(form_characters), self.output_size, device=device)
        for start in range(0, len(order), chunk_size):
            rows = order[start : start + chunk_size]
            characters = pad_arrays([form_characters[row] for row in rows], int(lengths[rows[-1]]))
            table[torch.from_numpy(rows).to(device)] = self(torch.from_numpy(characters).to(device), torch.from_numpy(lengths[rows]))
        return table


class WordRepresentation(nn.Module):
    """x_t = [word_embedding(lower(w_t)); char_bilstm(w_t) (; tag_embedding(tag_t))] with dropout: (B, T) -> (B, T, D + hidden (+ tag dimension))."""

    def __init__(
        self,
        word_count: int,
        word_dimension: int,
        character_count: int,
        char_dimension: int,
        char_hidden: int,
        dropout: float,
        encoder_layers: int = 0,
        encoder_dimension: int = 0,
        encoder_only: bool = False,
        inputs: str = "both",
        tag_count: int = 0,
        tag_dimension: int = 0,
    ) -> None:
        super().__init__()
        # sparse: the gradient lists the batch's rows only; the optimizer updates just those
        self.word_embedding = nn.Embedding(word_count, word_dimension, padding_idx=0, sparse=True)
        self.character_encoder = CharacterEncoder(character_count, char_dimension, char_hidden)
        self.dropout = Dropout(dropout)
        # inputs: both, or one view alone (co-training's two views: words, characters); the unread table stays, unused
        self.inputs = inputs
        self.output_size = {"both": word_dimension + char_hidden, "words": word_dimension, "characters": char_hidden}[inputs]
        if encoder_layers:  # x_t also holds gamma * sum_l s_l h_l of a frozen Transformer's token vectors
            self.encoder_mix = ScalarMix(encoder_layers)
            self.output_size = encoder_dimension if encoder_only else self.output_size + encoder_dimension
        self.encoder_only = bool(encoder_layers) and encoder_only  # the word and character tables stay (tiny) but are not read
        if tag_count:  # an input tag per word (model.tag_feature: Stanza's UPOS embedding), joined last
            self.tag_embedding = nn.Embedding(tag_count, tag_dimension, padding_idx=0)
            self.output_size += tag_dimension
        self.form_table: torch.Tensor | None = None  # (F, hidden) while ``forms_of`` is active

    def forward(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, output_size)."""
        if self.encoder_only:
            parts = [self.encoder_mix(self.require_features(batch))]
        else:
            parts = self.word_parts(batch)
            if hasattr(self, "encoder_mix"):
                parts.append(self.encoder_mix(self.require_features(batch)))  # (B, T, L + 1, H) -> (B, T, H)
        if hasattr(self, "tag_embedding"):
            if batch.tags is None:
                raise RuntimeError("this model reads input tags: encode sentences with the run's vocabularies (they name the tag column or tagger)")
            parts.append(self.tag_embedding(batch.tags))  # (B, T, tag dimension)
        return self.dropout(torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0])

    def word_parts(self, batch: Batch) -> list[torch.Tensor]:
        """The word vector (B, T, D) and the character BiLSTM's (B, T, hidden), or the one of them ``inputs`` names."""
        words = self.word_embedding(batch.words)  # (B, T, D)
        if self.inputs == "words":
            return [words]
        if self.form_table is not None:
            characters = self.form_table[batch.form_ids]  # (B, T, hidden)
        else:
            forms = self.character_encoder(batch.characters, batch.character_lengths)  # (U, hidden)
            characters = forms[batch.form_index]  # (B, T, hidden)
        return [characters] if self.inputs == "characters" else [words, characters]

    @staticmethod
    def require_features(batch: Batch) -> torch.Tensor:
        if batch.features is None:
            raise RuntimeError("this model reads encoder features: encode sentences with the run's vocabularies (they name the encoder)")
        return batch.features

    def load_vectors(self, matrix: np.ndarray) -> None:
        """Copy a (V, D) embedding matrix into the word embedding."""
        with torch.no_grad():
            self.word_embedding.weight.copy_(torch.from_numpy(matrix))

    @contextmanager
    def forms_of(self, data: EncodedSentences) -> Iterator[None]:
        """Encode every distinct form of ``data`` once; its batches then look their forms up.

        For decoding a whole set (no gradients): batches of 512 sentences encode a form once
        per batch it appears in, the table once in all (WNUT-17 test: 6,348 forms instead of
        8,021 at batch size 512; CoNLL-2003: 9,488 instead of 15,457), in fuller length groups.
        Sets of more than ``FORM_TABLE_LIMIT`` forms keep the per-batch encoding.
        """
        if self.training or torch.is_grad_enabled():
            raise RuntimeError("forms_of is for decoding: call model.eval() and use torch.inference_mode()")
        if len(data.form_characters) > FORM_TABLE_LIMIT:
            yield
            return
        self.form_table = self.character_encoder.encode_all(data.form_characters)
        try:
            yield
        finally:
            self.form_table = None


def word_representation_of(config, word_count: int, character_count: int) -> WordRepresentation:
    """The WRE a model config describes (words, characters, and a Transformer's layers when ``config.encoder`` is set)."""
    layers = config.encoder_layers if config.encoder else 0
    return WordRepresentation(
        word_count,
        config.word_dimension,
        character_count,
        config.char_dimension,
        config.char_hidden,
        config.dropout,
        layers,
        config.encoder_dimension if layers else 0,
        encoder_only=not config.encoder_join,
        inputs=config.inputs,
        tag_count=config.tag_count if config.tag_feature else 0,
        tag_dimension=config.tag_dimension,
    )
