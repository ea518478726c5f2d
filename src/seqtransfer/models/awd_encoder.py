"""Our AWD-LSTM LM fine-tuned as a model's encoder: the ``awd_lstm`` family of ``models/encoders.py``
(ULMFiT's third stage: the classifier on the LM, Howard & Ruder 2018).

    w_t      = the LM's id of token t's word (its own form, else its lower-cased form, else <unk>)   (B, T)
    h_t      = AWD-LSTM(w_1 .. w_t): the last layer's outputs, left to right                          (B, T, E)
               (model.feature_extractor=bilstm: a BiLSTM of model.hidden units reads h)

``model.encoder`` names the LM's folder (``seqtransfer pretrain-lm --architecture awd-lstm``, or one
continued by ``finetune-lm``); its weights are loaded once, when training starts (``load_pretrained``),
and saved with the run. Its dropouts (embedding, input, weight, hidden) stay on in training, as
ULMFiT's classifier keeps them. Its layer groups, bottom to top, are the embedding and each LSTM
layer, which discriminative rates and gradual unfreezing read (ULMFiT's unfreezing order). The run's
words are mapped once to the LM's; the run's word vocabulary holds the LM's words too
(``training/vocabularies.py``), so a test word the LM knows is read as itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from seqtransfer.config import ModelConfig
from seqtransfer.data.vocabulary import UNKNOWN
from seqtransfer.embeddings.awd_lstm import AwdLstmLanguageModel, load_awd_lstm, read_awd_settings, read_awd_words
from seqtransfer.embeddings.recurrent_lm import UNKNOWN_WORD, softmax_word_ids
from seqtransfer.embeddings.transformer import encoder_path
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.bilstm import BiLSTM

if TYPE_CHECKING:
    from seqtransfer.data.batching import Batch


class AwdLstmEncoder:
    """Our AWD-LSTM LM, fine-tuned: its last layer's states at each token."""

    word_representation = None  # its own embedding table, inside the LM
    feature_extractors = ("bilstm", "none")

    def build_encoder(self, config: ModelConfig, word_count: int, character_count: int, task_kind: str, vocabularies=None) -> int:
        if config.pair_encoding == "separate":
            raise SeqTransferError("model.pair_encoding=separate encodes a pair's texts in a Transformer's windows; the AWD-LSTM reads a pair as one sequence", hint="drop model.pair_encoding")
        folder = encoder_path(config.encoder)
        settings = read_awd_settings(folder)
        self.encoder_name = config.encoder
        self.encoder = AwdLstmLanguageModel(settings)
        run_words = vocabularies.words.items if vocabularies is not None else [""] * word_count
        self.register_buffer("word_map", word_map(run_words, read_awd_words(folder)), persistent=False)
        size = int(settings["embedding"])
        self.feature_extractor = None
        if config.feature_extractor == "bilstm":
            self.feature_extractor, size = BiLSTM(size, config.hidden), config.hidden
        return size

    def load_pretrained(self) -> None:
        """Start from the LM's pretrained weights (before training; a saved run has its own)."""
        pretrained, _ = load_awd_lstm(encoder_path(self.encoder_name))
        self.encoder.load_state_dict(pretrained.state_dict())

    def token_states(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, E) the LM's last layer at each token (padding after a sentence's end is read after it: causal, it changes nothing before)."""
        outputs, _, _ = self.encoder(self.word_map[batch.words])
        return outputs

    def features(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, H) token states, through the BiLSTM when there is one."""
        states = self.token_states(batch)
        return states if self.feature_extractor is None else self.feature_extractor(states, batch.lengths)

    def layer_prefixes(self, names: list[str]) -> tuple[list[str], tuple[str, ...]]:
        """The embedding (with the tied decoder's bias, which no head reads), then each LSTM layer, bottom to top."""
        layers = sorted({int(name.split(".")[2]) for name in names if name.startswith("encoder.lstm_layers.")})
        return ["encoder.embedding.", *(f"encoder.lstm_layers.{layer}." for layer in layers)], ("encoder.decoder_bias",)


def word_map(run_words: list[str], lm_words: list[str]) -> torch.Tensor:
    """(run words,) the LM's id of each of the run's words: its own form, else the first LM word of
    the same lower-cased form, else the LM's <unk> (the run's padding and unknown word included)."""
    exact = softmax_word_ids(lm_words)
    lowered: dict[str, int] = {}
    for word, index in exact.items():  # the sentence marks left out: a run's "<s>" is not the LM's <S>
        lowered.setdefault(word.lower(), index)
    ids = [UNKNOWN_WORD if word == UNKNOWN else exact.get(word, lowered.get(word.lower(), UNKNOWN_WORD)) for word in run_words]
    return torch.tensor(ids, dtype=torch.long)
