"""Our AWD-LSTM language model (Merity et al. 2018), as fastai's ``AWD_LSTM`` with its ``LinearDecoder``.

    w_t      a word id of a stream of concatenated sentences, each ended by </S>      (B, T)
    e_t      embedding(w_t), whole rows of the table dropped (embedding dropout)         (B, T, E)
    x_t      e_t with one input-dropout mask per sequence (variational)                  (B, T, E)
    h1, h2   LSTM layers of H units, their hidden-to-hidden matrices dropped (DropConnect),
             one hidden-dropout mask per sequence after each                             (B, T, H)
    h3       the last LSTM layer, of E units (so that the decoder can share the table)   (B, T, E)
    p(w_t+1 | w_<=t) = softmax(embedding.weight @ dropout_out(h3_t) + bias)            over V words

A causal (left-to-right) LM read over chunks of a stream (truncated back-propagation through
time): each chunk starts from the previous chunk's last states, detached. The input and output
tables are one tensor (weight tying, Inan et al. 2017; Press and Wolf 2017).

A pretrained LM is a folder (``seqtransfer pretrain-lm --architecture awd-lstm``): ``config.json``
(``"seqtransfer_architecture": "awd_lstm"`` and the sizes), ``model.safetensors`` and
``vocabulary.json`` (its words). Such a folder is also an encoder (``model.encoder=FOLDER``,
fine-tuned: ``models/awd_encoder.py``); frozen features of it are refused in one line.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn
from torch.func import functional_call
from torch.nn import functional

from seqtransfer.embeddings.recurrent_lm import folder_architecture, with_saved_weights
from seqtransfer.errors import SeqTransferError

ARCHITECTURE = "awd_lstm"  # config.json's "seqtransfer_architecture"
WEIGHTS = "model.safetensors"
VOCABULARY = "vocabulary.json"
INITIAL_RANGE = 0.1  # fastai's: the table uniform in [-0.1, 0.1], the decoder's bias zero

# Layer sizes: fastai's ``awd_lstm_lm_config`` (E 400, H 1152, 3 layers) is ``large``, pretrain-lm's
# default; ``small`` halves both for this CPU; ``tiny`` is for smoke tests.
SIZES: dict[str, dict] = {"tiny": {"embedding": 16, "hidden": 32, "layers": 3}, "small": {"embedding": 200, "hidden": 576, "layers": 3}, "large": {"embedding": 400, "hidden": 1152, "layers": 3}}
# fastai's awd_lstm_lm_config dropouts (drop_mult 1) and language_model_learner's AR and TAR weights
DEFAULTS = {"output_dropout": 0.1, "hidden_dropout": 0.15, "input_dropout": 0.25, "embedding_dropout": 0.02, "weight_dropout": 0.2, "activation_regularization": 2.0, "temporal_regularization": 1.0}
NEEDED = ("words", "embedding", "hidden", "layers", *DEFAULTS)

LayerState = tuple[torch.Tensor, torch.Tensor]  # an LSTM layer's (h, c), each (1, B, units)


def variational_dropout(inputs: torch.Tensor, rate: float, training: bool) -> torch.Tensor:
    """(B, T, D) -> the same with one mask per sequence, shared by its T steps (fastai's RNNDropout)."""
    if not training or rate == 0.0:
        return inputs
    mask = inputs.new_empty(inputs.size(0), 1, inputs.size(2)).bernoulli_(1 - rate).div_(1 - rate)
    return inputs * mask


class WeightDroppedLSTM(nn.Module):
    """One LSTM layer whose hidden-to-hidden matrix is dropped element-wise (DropConnect) once per
    forward pass in training; the stored weight itself is never changed (fastai's WeightDropout)."""

    def __init__(self, inputs: int, units: int, rate: float) -> None:
        super().__init__()
        self.lstm = nn.LSTM(inputs, units, batch_first=True)
        self.rate = rate

    def recurrent_weight(self) -> torch.Tensor:
        """(4U, U): weight_hh as this pass reads it (a fresh mask in training, the weight itself in evaluation)."""
        weight = self.lstm.weight_hh_l0
        return functional.dropout(weight, self.rate, training=True) if self.training and self.rate else weight

    def forward(self, inputs: torch.Tensor, state: LayerState | None) -> tuple[torch.Tensor, LayerState]:
        """(B, T, I), the last (h, c) or None -> (B, T, U) outputs, the new (h, c)."""
        if not (self.training and self.rate):
            return self.lstm(inputs, state)
        with warnings.catch_warnings():  # on a GPU: the dropped matrix is not in the LSTM's flattened buffer
            warnings.simplefilter("ignore", UserWarning)
            return functional_call(self.lstm, {"weight_hh_l0": self.recurrent_weight()}, (inputs, state))


class AwdLstmLanguageModel(nn.Module):
    """The embedding, the weight-dropped LSTM layers and the tied decoder; ``settings`` are config.json's."""

    def __init__(self, settings: dict) -> None:
        super().__init__()
        self.settings = dict(settings)
        words, embedding, hidden, layers = settings["words"], settings["embedding"], settings["hidden"], settings["layers"]
        self.embedding = nn.Embedding(words, embedding)
        nn.init.uniform_(self.embedding.weight, -INITIAL_RANGE, INITIAL_RANGE)
        sizes = [embedding] + [hidden] * (layers - 1) + [embedding]  # the last layer gives E units: the tied decoder reads them
        self.lstm_layers = nn.ModuleList(WeightDroppedLSTM(sizes[index], sizes[index + 1], settings["weight_dropout"]) for index in range(layers))
        self.decoder_bias = nn.Parameter(torch.zeros(words))

    @property
    def decoder_weight(self) -> torch.Tensor:
        """(V, E): the decoder's matrix, which is the embedding table (tied)."""
        return self.embedding.weight

    def embed(self, words: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, E); in training whole rows of the table are dropped, the rest scaled up."""
        weight = self.embedding.weight
        rate = self.settings["embedding_dropout"]
        if self.training and rate:
            weight = weight * weight.new_empty(weight.size(0), 1).bernoulli_(1 - rate).div_(1 - rate)
        return functional.embedding(words, weight)

    def forward(self, words: torch.Tensor, states: Sequence[LayerState] | None = None) -> tuple[torch.Tensor, torch.Tensor, list[LayerState]]:
        """(B, T) ids and each layer's last (h, c) (None: zeros) -> (B, T, E) the last layer's outputs,
        (B, T, E) the same after the output dropout (what the decoder reads), each layer's new (h, c)."""
        settings, training = self.settings, self.training
        outputs = variational_dropout(self.embed(words), settings["input_dropout"], training)
        new_states = []
        for index, layer in enumerate(self.lstm_layers):
            outputs, state = layer(outputs, states[index] if states else None)
            new_states.append(state)
            if index < len(self.lstm_layers) - 1:
                outputs = variational_dropout(outputs, settings["hidden_dropout"], training)
        return outputs, variational_dropout(outputs, settings["output_dropout"], training), new_states

    def logits(self, outputs: torch.Tensor) -> torch.Tensor:
        """(..., E) -> (..., V) scores of the next word."""
        return functional.linear(outputs, self.decoder_weight, self.decoder_bias)


def is_awd_lstm(folder: Path) -> bool:
    """Whether an encoder folder holds our AWD-LSTM LM (its config.json says so)."""
    return folder_architecture(folder) == ARCHITECTURE


def read_awd_settings(folder: Path) -> dict:
    """config.json of an AWD-LSTM folder (one error line where it cannot be read or lacks a size)."""
    try:
        settings = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise SeqTransferError("the AWD-LSTM folder's config.json cannot be read", path=folder, hint="use the whole folder seqtransfer pretrain-lm --architecture awd-lstm wrote") from None
    missing = [key for key in NEEDED if key not in settings]
    if missing:
        raise SeqTransferError(f"config.json lacks {', '.join(missing)}", path=folder, hint="use the whole folder seqtransfer pretrain-lm --architecture awd-lstm wrote")
    return settings


def read_awd_words(folder: Path) -> list[str]:
    """The words of an AWD-LSTM folder's vocabulary.json, in id order."""
    try:
        return list(json.loads((Path(folder) / VOCABULARY).read_text(encoding="utf-8"))["words"])
    except (OSError, ValueError, KeyError, TypeError):
        raise SeqTransferError("the AWD-LSTM folder's vocabulary.json cannot be read", path=folder, hint="use the whole folder seqtransfer pretrain-lm --architecture awd-lstm wrote") from None


def awd_shape(folder: Path) -> tuple[int, int]:
    """(layers + 1, E) of an AWD-LSTM folder: its embedding and LSTM layers, the last one's units."""
    settings = read_awd_settings(folder)
    return int(settings["layers"]) + 1, int(settings["embedding"])


def awd_parameters(folder: Path) -> int:
    """Parameters of an AWD-LSTM folder's network (the tied decoder's bias included)."""
    with torch.device("meta"):
        model = AwdLstmLanguageModel(read_awd_settings(folder))
    return sum(parameter.numel() for parameter in model.parameters())


def refuse_frozen_features(folder: Path, mode: str) -> None:
    """One error line for frozen features of an AWD-LSTM: it is read fine-tuned only."""
    if mode != "finetune" and is_awd_lstm(folder):
        raise SeqTransferError(
            "an AWD-LSTM language model is read as a fine-tuned encoder, not as frozen features",
            path=folder,
            hint="add model.encoder_mode=finetune (ULMFiT's classifier: model.sentence_reader=ulmfit)",
        )


def save_awd_lstm(folder: Path, model: AwdLstmLanguageModel, words: Sequence[str]) -> None:
    """Write ``config.json``, ``model.safetensors`` and ``vocabulary.json`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"seqtransfer_architecture": ARCHITECTURE, **model.settings}
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (folder / VOCABULARY).write_text(json.dumps({"words": list(words)}, ensure_ascii=False), encoding="utf-8")
    save_file({name: tensor.detach().cpu().contiguous() for name, tensor in model.state_dict().items()}, str(folder / WEIGHTS))


def load_awd_lstm(folder: Path) -> tuple[AwdLstmLanguageModel, list[str]]:
    """(model in eval mode, its words) of an AWD-LSTM folder; a missing or mismatched file is one error line."""
    folder = Path(folder)
    hint = "use the whole folder seqtransfer pretrain-lm --architecture awd-lstm wrote"
    try:
        settings = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        words = list(json.loads((folder / VOCABULARY).read_text(encoding="utf-8"))["words"])
    except (OSError, ValueError, KeyError, TypeError):
        raise SeqTransferError("the AWD-LSTM folder's config.json or vocabulary.json cannot be read", path=folder, hint=hint) from None
    missing = [key for key in NEEDED if key not in settings]
    if missing or len(words) != settings["words"]:
        raise SeqTransferError(f"config.json lacks {', '.join(missing)}" if missing else f"vocabulary.json ({len(words)} words) does not fit config.json", path=folder, hint=hint)
    return with_saved_weights(AwdLstmLanguageModel, settings, folder / WEIGHTS, "the AWD-LSTM's weights"), words
