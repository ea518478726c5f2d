"""Our recurrent LM fine-tuned as a model's encoder: the ``bilstm_lm`` family of ``models/encoders.py``.

    c        = the batch's distinct tokens in the LM's characters, <S> and </S> added     (U + 2, C + 2)
    layers   = LM(<S> w_1 .. w_n </S>) at w_1 .. w_n: [x; x], [f1; b1], [f2; b2]         (B, T, 3, 2P)
    h_t      = gamma * sum_l softmax(s)_l layers_t,l  (a learned scalar mix)             (B, T, 2P)
               (model.feature_extractor=bilstm: a BiLSTM of model.hidden units reads h)

``model.encoder`` names the LM's folder (``seqtransfer pretrain-lm --architecture bilstm``); its
weights are loaded once, when training starts (``load_pretrained``), and saved with the run. Its
layer groups, bottom to top, are the character CNN, LSTM layer 1 and LSTM layer 2 (both
directions of a layer together), which discriminative rates and gradual unfreezing read. The run's
characters (those of its training data) are mapped once to the LM's; a character the LM never saw
reads as its unknown character.
"""

from __future__ import annotations

import torch

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.embeddings.recurrent_lm import (
    BEGIN_SENTENCE,
    BEGIN_WORD,
    END_SENTENCE,
    END_WORD,
    FIRST_CHARACTER,
    PAD,
    UNKNOWN_CHARACTER,
    RecurrentLanguageModel,
    load_recurrent_lm,
    read_settings,
    read_vocabulary,
)
from seqtransfer.embeddings.transformer import ScalarMix, encoder_path
from seqtransfer.models.bilstm import BiLSTM

SENTENCE_FORMS = ((BEGIN_WORD, BEGIN_SENTENCE, END_WORD), (BEGIN_WORD, END_SENTENCE, END_WORD))  # the forms of <S> and </S>


class RecurrentEncoder:
    """An ELMo-style BiLSTM LM of our own, fine-tuned, its three layers mixed."""

    word_representation = None  # no word tables: the LM reads characters
    feature_extractors = ("bilstm", "none")

    def build_encoder(self, config: ModelConfig, word_count: int, character_count: int, task_kind: str, vocabularies=None) -> int:
        self.reads_texts_apart = config.pair_encoding == "separate"  # each text of a pair its own sentence (texts_apart_states)
        folder = encoder_path(config.encoder)
        settings = read_settings(folder)
        self.encoder_name = config.encoder
        self.encoder = RecurrentLanguageModel(settings, with_softmax=False)
        self.encoder_mix = ScalarMix(3)
        self.character_limit = int(settings["max_characters"])
        self.register_buffer("character_map", character_map(character_count, vocabularies, read_vocabulary(folder)[1]), persistent=False)
        size = 2 * int(settings["projection"])
        self.feature_extractor = None
        if config.feature_extractor == "bilstm":
            self.feature_extractor, size = BiLSTM(size, config.hidden), config.hidden
        return size

    def load_pretrained(self) -> None:
        """Start from the LM's pretrained weights (before training; a saved run has its own)."""
        pretrained, _, _ = load_recurrent_lm(encoder_path(self.encoder_name))
        self.encoder.load_state_dict({name: tensor for name, tensor in pretrained.state_dict().items() if not name.startswith("softmax.")})

    def token_states(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, 2P) the scalar mix of the LM's three layers at each token."""
        if self.reads_texts_apart and batch.segments is not None:
            return self.texts_apart_states(batch)
        return self.mixed_layers(batch, batch.form_index, batch.lengths)

    def mixed_layers(self, batch: Batch, form_index: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The LM reading <S> the tokens ``form_index`` (B, T) names </S>, ``lengths`` (B,) of them
        a row -> (B, T, 2P) the scalar mix of its three layers at each token."""
        forms, index, lengths = self.sentence_inputs(batch, form_index, lengths)
        layers = self.encoder.token_layers(forms, index, lengths)  # (B, T + 2, 3, 2P)
        return self.encoder_mix(layers[:, 1:-1])

    def texts_apart_states(self, batch: Batch) -> torch.Tensor:
        """Batch of pairs "A [SEP] B" -> (B, T, 2P): each text read by the LM as a sentence of its own
        (``model.pair_encoding=separate``, as the To-tune paper read ELMo), its states put back at its
        positions; the [SEP]'s are zeros."""
        states = None
        for segment in (0, 1):
            chosen = (batch.segments == segment) & batch.mask  # (B, T)
            width = max(int(chosen.sum(1).max()), 1)
            positions = torch.argsort((~chosen).to(torch.int8), dim=1, stable=True)[:, :width]  # the text's positions first, in order
            kept = chosen.gather(1, positions)  # (B, W)
            text_states = self.mixed_layers(batch, batch.form_index.gather(1, positions).masked_fill(~kept, 0), kept.sum(1))
            text_states = text_states * kept.unsqueeze(-1).to(text_states.dtype)  # (B, W, 2P), zeros past the text
            states = text_states.new_zeros(*chosen.shape, text_states.size(-1)) if states is None else states
            states = states.scatter_add(1, positions.unsqueeze(-1).expand_as(text_states), text_states)
        return states

    def features(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, H) token states, through the BiLSTM when there is one."""
        states = self.token_states(batch)
        return states if self.feature_extractor is None else self.feature_extractor(states, batch.lengths)

    def sentence_inputs(self, batch: Batch, form_index: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The LM's inputs for <S> tokens </S> (the batch's forms, ``form_index`` (B, T) and ``lengths``
        (B,) of its rows): forms (U + 2, C') in its characters, the form of each position (B, T + 2)
        and the lengths (B,) + 2."""
        characters = self.character_map[batch.characters][:, : self.character_limit - 2]  # (U, C)
        word_lengths = batch.character_lengths.to(characters.device).clamp(max=characters.size(1))
        count, width = characters.shape
        words = torch.zeros(count, width + 2, dtype=torch.long, device=characters.device)
        words[:, 0] = BEGIN_WORD
        words[:, 1 : width + 1] = characters
        words[torch.arange(count, device=characters.device), word_lengths + 1] = END_WORD
        marks = torch.zeros(2, width + 2, dtype=torch.long, device=characters.device)
        marks[:, :3] = torch.tensor(SENTENCE_FORMS, device=characters.device)
        sentence_lengths = lengths.to(characters.device)
        index = torch.zeros(form_index.size(0), form_index.size(1) + 2, dtype=torch.long, device=characters.device)
        index[:, 1:-1] = form_index + 2
        index[torch.arange(index.size(0), device=characters.device), sentence_lengths + 1] = 1  # </S> after each sentence's last token
        return torch.cat([marks, words]), index, sentence_lengths + 2

    def layer_prefixes(self, names: list[str]) -> tuple[list[str], tuple[str, ...]]:
        """The character CNN, then LSTM layer 1 and layer 2 (both directions each), bottom to top."""
        return ["encoder.tokens.", "encoder.lstm_layers.0.", "encoder.lstm_layers.1."], ()


def character_map(character_count: int, vocabularies, lm_characters: list[str]) -> torch.Tensor:
    """(character_count,) the LM's id of each of the run's characters: padding stays padding, a
    character the LM does not have (or every one, without ``vocabularies``) is its unknown one."""
    table = torch.full((character_count,), UNKNOWN_CHARACTER, dtype=torch.long)
    table[0] = PAD
    if vocabularies is not None:
        known = {character: index + FIRST_CHARACTER for index, character in enumerate(lm_characters)}
        for index, character in enumerate(vocabularies.characters.items[1:], start=1):
            table[index] = known.get(character, UNKNOWN_CHARACTER)
    return table
