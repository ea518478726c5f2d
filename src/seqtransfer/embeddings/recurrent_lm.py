"""Our own ELMo-style recurrent language model (Peters et al. 2018; Jozefowicz et al. 2016).

    c_t       characters of token t between begin- and end-of-word marks            (U, C) per distinct token
    e_t       max over positions of relu(conv_k(char_embedding(c_t))), each width k   (U, F)
    x_t       projection(highway^H(e_t))                                             (B, T, P)
    f1, f2    forward LSTM layers (N cells, outputs projected to P); f2 += f1        (B, T, P) each
    b1, b2    the same right to left (each sentence's own steps, padding after them)
    p(w_t+1 | w_<=t) = softmax(f2_t),  p(w_t-1 | w_>=t) = softmax(b2_t)              one softmax over V words, both directions
    layers    [x; x], [f1; b1], [f2; b2]: what a scalar mix reads                   (B, T, 3, 2P)

A sentence is read as <S> w_1 ... w_n </S>. The softmax is over the V most frequent training
words plus <unk>, <S> and </S>: an adaptive softmax (Grave et al. 2017) by default, or a full
one. Everything else is characters, so any token gets a vector.

A pretrained LM is a folder (``seqtransfer pretrain-lm --architecture bilstm``):
``config.json`` (``"seqtransfer_architecture": "bilstm_lm"`` and the sizes), ``model.safetensors``
and ``vocabulary.json`` (the softmax's words, the character set). ``model.encoder=FOLDER``
reads it as the Transformer folders are read: frozen features of its three layers.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn
from torch.nn import functional

from seqtransfer.embeddings.tokenization import PAIR_SEPARATOR
from seqtransfer.errors import SeqTransferError
from seqtransfer.padding import reversal_index, reverse_padded

# torch warns that oneDNN has no LSTM with projections and falls back to its own kernel; that kernel
# is still faster than an LSTM of N outputs followed by a linear layer to P (measured on this CPU,
# one thread, B=64, T=22, forward + backward: 87 against 141 ms at N=512, P=128; 718 against
# 1,840 ms at N=2048, P=256), so the warning says nothing a user can act on.
ONEDNN_WARNING = "LSTM with projections is not supported with oneDNN"

ARCHITECTURE = "bilstm_lm"  # config.json's "seqtransfer_architecture"
WEIGHTS = "model.safetensors"
VOCABULARY = "vocabulary.json"
# character ids: 0 padding, then the marks; a token's characters sit between BEGIN_WORD and END_WORD
PAD, UNKNOWN_CHARACTER, BEGIN_WORD, END_WORD, BEGIN_SENTENCE, END_SENTENCE = range(6)
FIRST_CHARACTER = 6
# word ids of the softmax
UNKNOWN_WORD, SENTENCE_START, SENTENCE_END = 0, 1, 2
SPECIAL_WORDS = ["<unk>", "<S>", "</S>"]


def softmax_word_ids(words: Sequence[str]) -> dict[str, int]:
    """The softmax's id of each of its words, the sentence marks left out: a literal "<S>" or "</S>"
    token of a text is a word the softmax does not have (<unk>), not the mark (the marks' ids are
    placed by position only)."""
    return {word: index for index, word in enumerate(words) if word not in SPECIAL_WORDS[SENTENCE_START:]}


# Two sizes that differ as ELMo-small and ELMo-large do (Peters et al.: 2048 filters, 1 or 2 highway
# layers, cells of 1024 or 4096 projected to 128 or 512), scaled to pretrain on this CPU.
SIZES: dict[str, dict] = {
    "tiny": {"character_dimension": 8, "filters": [[1, 8], [2, 8], [3, 16]], "highway": 1, "projection": 16, "cell": 32},  # smoke tests
    "small": {"character_dimension": 16, "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256]], "highway": 1, "projection": 128, "cell": 512},
    "large": {"character_dimension": 16, "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]], "highway": 2, "projection": 256, "cell": 2048},
}
DEFAULTS = {"max_characters": 50, "dropout": 0.1, "softmax": "adaptive"}


class Highway(nn.Module):
    """y = g * relu(W x) + (1 - g) * x, g = sigmoid(V x); the gate starts closed (bias -2: carry x)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.transform = nn.Linear(size, 2 * size)
        with torch.no_grad():
            self.transform.bias[size:].fill_(-2.0)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        hidden, gate = self.transform(inputs).chunk(2, dim=-1)
        gate = torch.sigmoid(gate)
        return gate * functional.relu(hidden) + (1 - gate) * inputs


class CharacterConvolution(nn.Module):
    """(U, C) character ids -> (U, P): convolutions of several widths, max-pooled, highway, projection."""

    def __init__(self, characters: int, dimension: int, filters: Sequence[Sequence[int]], highway: int, projection: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(characters, dimension, padding_idx=PAD)
        self.convolutions = nn.ModuleList(nn.Conv1d(dimension, count, width) for width, count in filters)
        size = sum(count for _, count in filters)
        self.highways = nn.ModuleList(Highway(size) for _ in range(highway))
        self.projection = nn.Linear(size, projection)
        self.widest = max(width for width, _ in filters)

    def forward(self, characters: torch.Tensor) -> torch.Tensor:
        """A token's vector depends on its characters alone, not on the longest token of its batch:
        a window that starts past the token's last full window is left out of the max (the
        padding's zero embedding is read only by the one window of a token shorter than the width)."""
        if characters.size(1) < self.widest:  # every width needs at least one position
            characters = functional.pad(characters, (0, self.widest - characters.size(1)))
        lengths = (characters != PAD).sum(1, keepdim=True)  # (U, 1)
        embedded = self.embedding(characters).transpose(1, 2)  # (U, D, C)
        pooled = torch.cat([self.pooled(convolution, embedded, lengths) for convolution in self.convolutions], dim=-1)  # (U, F)
        for highway in self.highways:
            pooled = highway(pooled)
        return self.projection(pooled)

    @staticmethod
    def pooled(convolution: nn.Conv1d, embedded: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(U, D, C) -> (U, count): the max of relu(convolution) over each token's own windows."""
        outputs = functional.relu(convolution(embedded))  # (U, count, C - width + 1); relu: >= 0, so a zeroed window never wins over a real one
        starts = torch.arange(outputs.size(-1), device=outputs.device)
        last_start = (lengths - convolution.kernel_size[0]).clamp(min=0)  # (U, 1)
        return outputs.masked_fill((starts > last_start).unsqueeze(1), 0.0).amax(-1)


class LSTMLayer(nn.Module):
    """One layer of both directions: a forward and a backward LSTM of N cells, each projected to P."""

    def __init__(self, projection: int, cell: int) -> None:
        super().__init__()
        self.forward_lstm = nn.LSTM(projection, cell, proj_size=projection, batch_first=True)
        self.backward_lstm = nn.LSTM(projection, cell, proj_size=projection, batch_first=True)


def at_positions(vectors: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(U, P) vectors of the batch's distinct forms, (B, T) each position's form -> (B, T, P).

    index_select, not vectors[index]: the advanced index's backward (index_put_ with accumulate)
    sums a form's gradients in an order that depends on the thread count; index_select's sums in
    index order whatever the threads (the same sums as the advanced index's at 1 thread), and its
    backward measured 10x faster here (0.44 against 4.35 ms for 768 forms x 2,112 positions)."""
    return vectors.index_select(0, index.reshape(-1)).view(*index.shape, vectors.size(-1))


class RecurrentLanguageModel(nn.Module):
    """The character CNN token encoder, a forward and a backward two-layer LSTM, one softmax."""

    def __init__(self, settings: dict, with_softmax: bool = True) -> None:
        """``with_softmax=False``: the encoder alone (a fine-tuned encoder reads its layers, never its softmax)."""
        super().__init__()
        self.settings = dict(settings)
        projection = settings["projection"]
        self.tokens = CharacterConvolution(settings["characters"], settings["character_dimension"], settings["filters"], settings["highway"], projection)
        self.lstm_layers = nn.ModuleList(LSTMLayer(projection, settings["cell"]) for _ in range(2))  # layer-major: a layer group holds both directions
        self.dropout = nn.Dropout(settings["dropout"])
        words = settings["words"]
        if not with_softmax:
            self.softmax = None
        elif settings["softmax"] == "adaptive":
            self.softmax = nn.AdaptiveLogSoftmaxWithLoss(projection, words, adaptive_cutoffs(words), div_value=4.0)
        else:
            self.softmax = nn.Linear(projection, words)

    def layers(self, forms: torch.Tensor, form_index: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(U, C) characters of the batch's distinct tokens, (B, T) each position's token, (B,) lengths
        -> x, f1, f2, b1, b2, each (B, T, P) (padded positions hold junk)."""
        inputs = at_positions(self.tokens(forms), form_index)  # (B, T, P)
        index = reversal_index(lengths.to(inputs.device), inputs.size(1))
        forward_first, forward_second = self.direction(inputs, "forward_lstm")
        backward_first, backward_second = self.direction(reverse_padded(inputs, index), "backward_lstm")
        return inputs, forward_first, forward_second, reverse_padded(backward_first, index), reverse_padded(backward_second, index)

    def direction(self, inputs: torch.Tensor, side: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T, P) -> one direction's two layer outputs (B, T, P); the second has the first added (residual)."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=ONEDNN_WARNING)
            first, _ = getattr(self.lstm_layers[0], side)(self.dropout(inputs))
            second, _ = getattr(self.lstm_layers[1], side)(self.dropout(first))
        return first, second + first

    def token_layers(self, forms: torch.Tensor, form_index: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The same inputs -> (B, T, 3, 2P): [x; x], [f1; b1], [f2; b2] at every position."""
        inputs, forward_first, forward_second, backward_first, backward_second = self.layers(forms, form_index, lengths)
        return torch.stack([torch.cat([inputs, inputs], -1), torch.cat([forward_first, backward_first], -1), torch.cat([forward_second, backward_second], -1)], dim=2)

    def negative_log_likelihood(self, states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """(N, P) states, (N,) word ids -> summed -log p(target), in fp32 (outside any bf16 autocast:
        the softmax is a small share of the step, and a bf16 log-probability is off by up to 0.05)."""
        states = self.dropout(states).float()
        device_type = states.device.type  # torch before 2.5 has no autocast for mps: nothing to turn off there
        with torch.autocast(device_type, enabled=False) if device_type in ("cpu", "cuda") else nullcontext():
            if isinstance(self.softmax, nn.AdaptiveLogSoftmaxWithLoss):
                return -self.softmax(states, targets).output.sum()
            return functional.cross_entropy(self.softmax(states), targets, reduction="sum")

    def losses(self, forms: torch.Tensor, form_index: torch.Tensor, lengths: torch.Tensor, words: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Sentences <S> w_1 .. w_n </S> (B, T) -> (the forward and backward LMs' summed -log p, words predicted).

        Forward: the state at position t predicts word t + 1; backward: word t - 1."""
        _, _, forward_states, _, backward_states = self.layers(forms, form_index, lengths)
        positions = torch.arange(words.size(1), device=words.device)
        predicting = positions[None, :-1] < (lengths[:, None] - 1)  # (B, T - 1): pairs (t, t + 1) inside the sentence
        forward = self.negative_log_likelihood(forward_states[:, :-1][predicting], words[:, 1:][predicting])
        backward = self.negative_log_likelihood(backward_states[:, 1:][predicting], words[:, :-1][predicting])
        count = int(predicting.sum())
        return forward + backward, 2 * count


def adaptive_cutoffs(words: int) -> list[int]:
    """Cluster bounds of the adaptive softmax: the head holds the 2,000 most frequent words (fewer in a
    small vocabulary), then tails of up to 8,000 and the rest."""
    bounds = [bound for bound in (2000, 10000) if bound < words - 1]
    return bounds or [max(1, words // 2)]


def character_ids(token: str, characters: dict[str, int], limit: int) -> list[int]:
    """BEGIN_WORD, the token's characters (unknown ones: UNKNOWN_CHARACTER), END_WORD; cut to ``limit``."""
    inner = [characters.get(character, UNKNOWN_CHARACTER) for character in token[: limit - 2]]
    return [BEGIN_WORD, *inner, END_WORD]


# the sentence marks' forms, keyed apart from any token (a literal "<S>" in the text is spelled out, as fine-tuning spells it)
SENTENCE_START_FORM, SENTENCE_END_FORM = ("<S>",), ("</S>",)
SENTENCE_MARKS = {SENTENCE_START_FORM: [BEGIN_WORD, BEGIN_SENTENCE, END_WORD], SENTENCE_END_FORM: [BEGIN_WORD, END_SENTENCE, END_WORD]}


def encode_batch(sentences: Sequence[Sequence[str]], characters: dict[str, int], limit: int, words: dict[str, int] | None = None) -> dict[str, torch.Tensor]:
    """Sentences (tokens, without the marks) -> tensors of <S> tokens </S>: ``forms`` (U, C) the
    distinct tokens' characters, ``form_index`` (B, T + 2), ``lengths`` (B,), and with ``words``
    the softmax's ``words`` (B, T + 2) (an unknown word: <unk>)."""
    distinct: dict[str | tuple, int] = {SENTENCE_START_FORM: 0, SENTENCE_END_FORM: 1}
    rows = [[distinct.setdefault(token, len(distinct)) for token in (SENTENCE_START_FORM, *sentence, SENTENCE_END_FORM)] for sentence in sentences]
    width = max(len(row) for row in rows)
    form_index = np.zeros((len(rows), width), dtype=np.int64)
    for number, row in enumerate(rows):
        form_index[number, : len(row)] = row
    encoded = [SENTENCE_MARKS.get(token) or character_ids(token, characters, limit) for token in distinct]
    forms = np.zeros((len(encoded), max(map(len, encoded))), dtype=np.int64)
    for number, ids in enumerate(encoded):
        forms[number, : len(ids)] = ids
    batch = {"forms": torch.from_numpy(forms), "form_index": torch.from_numpy(form_index), "lengths": torch.tensor([len(row) for row in rows])}
    if words is not None:
        ids = np.zeros((len(rows), width), dtype=np.int64)
        for number, sentence in enumerate(sentences):
            ids[number, : len(sentence) + 2] = [SENTENCE_START, *(words.get(token, UNKNOWN_WORD) for token in sentence), SENTENCE_END]
        batch["words"] = torch.from_numpy(ids)
    return batch


def folder_architecture(folder: Path) -> str | None:
    """config.json's ``seqtransfer_architecture`` (one of our own LMs: ``bilstm_lm``, ``awd_lstm``), or None."""
    config = Path(folder) / "config.json"
    if not config.is_file():
        return None
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("seqtransfer_architecture")
    except (ValueError, AttributeError):
        return None


def is_recurrent_lm(folder: Path) -> bool:
    """Whether an encoder folder holds one of our recurrent LMs (its config.json says so)."""
    return folder_architecture(folder) == ARCHITECTURE


def save_recurrent_lm(folder: Path, model: RecurrentLanguageModel, words: Sequence[str], characters: Sequence[str]) -> None:
    """Write ``config.json``, ``model.safetensors`` and ``vocabulary.json`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"seqtransfer_architecture": ARCHITECTURE, **model.settings}
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (folder / VOCABULARY).write_text(json.dumps({"words": list(words), "characters": list(characters)}, ensure_ascii=False), encoding="utf-8")
    save_file({name: tensor.detach().cpu().contiguous() for name, tensor in model.state_dict().items()}, str(folder / WEIGHTS))


def read_settings(folder: Path) -> dict:
    """config.json of a recurrent LM folder, checked to hold the sizes the model needs."""
    folder = Path(folder)
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise SeqTransferError(
            "the recurrent LM's config.json cannot be read as JSON", path=folder / "config.json", hint="use a folder written by seqtransfer pretrain-lm --architecture bilstm"
        ) from None
    needed = ("characters", "character_dimension", "filters", "highway", "projection", "cell", "words", "max_characters", "dropout", "softmax")
    missing = [key for key in needed if key not in config]
    if missing:
        raise SeqTransferError(f"the recurrent LM's config.json lacks {', '.join(missing)}", path=folder / "config.json", hint="use a folder written by seqtransfer pretrain-lm --architecture bilstm")
    return config


def read_vocabulary(folder: Path) -> tuple[list[str], list[str]]:
    """(the softmax's words, the characters) of a recurrent LM folder, checked against its config.json."""
    settings = read_settings(folder)
    if not (folder / VOCABULARY).is_file():
        raise SeqTransferError(f"the recurrent LM folder has no {VOCABULARY}", path=folder, hint="use the whole folder seqtransfer pretrain-lm wrote")
    try:
        vocabulary = json.loads((folder / VOCABULARY).read_text(encoding="utf-8"))
        words, characters = list(vocabulary["words"]), list(vocabulary["characters"])
    except (ValueError, KeyError, TypeError):
        raise SeqTransferError(f"{VOCABULARY} is not a vocabulary (JSON with words and characters)", path=folder / VOCABULARY, hint="put this LM's own vocabulary.json in the folder") from None
    if len(words) != settings["words"] or len(characters) + FIRST_CHARACTER != settings["characters"]:
        raise SeqTransferError(
            f"vocabulary.json ({len(words)} words, {len(characters)} characters) does not fit config.json ({settings['words']} words, {settings['characters'] - FIRST_CHARACTER} characters)",
            path=folder / VOCABULARY,
            hint="put this LM's own vocabulary.json in the folder",
        )
    return words, characters


def load_recurrent_lm(folder: Path) -> tuple[RecurrentLanguageModel, dict[str, int], dict[str, int]]:
    """(model in eval mode, word -> id, character -> id) of a recurrent LM folder; a missing or
    mismatched file is one error line."""
    folder = Path(folder)
    settings = read_settings(folder)
    if not (folder / WEIGHTS).is_file():
        raise SeqTransferError(f"the recurrent LM folder has no {WEIGHTS}", path=folder, hint="use the whole folder seqtransfer pretrain-lm wrote")
    words, characters = read_vocabulary(folder)
    model = with_saved_weights(RecurrentLanguageModel, settings, folder / WEIGHTS, "the recurrent LM's weights")
    return model, softmax_word_ids(words), {character: index + FIRST_CHARACTER for index, character in enumerate(characters)}


def with_saved_weights(build: Callable[[dict], nn.Module], settings: dict, weights: Path, what: str) -> nn.Module:
    """``build(settings)`` in eval mode with the weights of the safetensors file ``weights``; a mismatch is one error line."""
    with torch.random.fork_rng(devices=[]):  # building draws initial weights: a run's random numbers stay as they were
        model = build(settings)
    try:
        model.load_state_dict(load_file(str(weights)))
    except Exception as error:  # noqa: BLE001 - safetensors raises its own errors for a truncated or garbled file
        raise SeqTransferError(f"cannot load {what} ({str(error).splitlines()[0][:160]})", path=weights, hint="the weights must be those pretrain-lm saved with this config.json") from None
    return model.eval()


def recurrent_features(folder: Path, sentences: Sequence[Sequence[str]], batch_size: int = 64, separate: bool = False) -> list[np.ndarray]:
    """Per sentence, (T, 3, 2P) float16 vectors of its tokens in the LM's three layers; ``separate``:
    each text of a pair read as a sentence of its own (``texts_apart_arrays``)."""
    model, _, characters = load_recurrent_lm(folder)
    if separate:
        return texts_apart_arrays(model, characters, sentences, batch_size)
    return token_layer_arrays(model, characters, sentences, batch_size)


def pair_segments_of(tokens: Sequence[str]) -> np.ndarray:
    """(T,) each token's part of a pair "A [SEP] B": 0 before the first [SEP], 2 for a [SEP], 1 for any
    other token after it (as the batches' ``segments`` mark them: data/batching.pair_segments)."""
    separators = np.array([token == PAIR_SEPARATOR for token in tokens], dtype=bool)
    segments = (np.cumsum(separators) > 0).astype(np.int64)
    segments[separators] = 2
    return segments


def texts_apart_arrays(model: RecurrentLanguageModel, characters: dict[str, int], sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[np.ndarray]:
    """Per sentence, (T, 3, 2P) float16: each text of a pair read by the LM as a sentence of its own,
    between its own <S> and </S> (the To-tune paper's ELMo features, appendix A.1: "each sentence was
    handled separately"); a [SEP] reads zeros. Text B is every token after the first [SEP] but the
    [SEP]s (a fine-tuned LM reads it so: models/recurrent_encoder.texts_apart_states)."""
    segments = [pair_segments_of(tokens) for tokens in sentences]
    texts = [[token for token, part in zip(tokens, parts) if part == segment] for tokens, parts in zip(sentences, segments) for segment in (0, 1)]
    arrays = iter(token_layer_arrays(model, characters, [text for text in texts if text], batch_size))
    width = 2 * int(model.settings["projection"])
    result = []
    for tokens, parts in zip(sentences, segments):
        vectors = np.zeros((len(tokens), 3, width), dtype=np.float16)
        for segment in (0, 1):
            if (parts == segment).any():
                vectors[parts == segment] = next(arrays)
        result.append(vectors)
    return result


def token_layer_arrays(model: RecurrentLanguageModel, characters: dict[str, int], sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[np.ndarray]:
    """Per sentence, (T, 3, 2P) float16 vectors of its tokens in ``model``'s three layers (a
    pretrained LM's, or the one a run fine-tuned), shortest sentences batched together."""
    model.eval()
    limit = model.settings["max_characters"]
    order = sorted(range(len(sentences)), key=lambda index: len(sentences[index]))
    result: list[np.ndarray | None] = [None] * len(sentences)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = encode_batch([sentences[row] for row in rows], characters, limit)
            device = next(model.parameters()).device
            layers = model.token_layers(batch["forms"].to(device), batch["form_index"].to(device), batch["lengths"]).float().cpu().numpy()  # (B, T + 2, 3, 2P)
            for number, row in enumerate(rows):
                result[row] = layers[number, 1 : len(sentences[row]) + 1].astype(np.float16)
    return result


def recurrent_shape(folder: Path) -> tuple[int, int]:
    """(3 layers, 2P) of a recurrent LM folder."""
    return 3, 2 * int(read_settings(Path(folder))["projection"])


def recurrent_parameters(folder: Path) -> int:
    """Parameters of the LM's encoder part (the softmax, which features never read, left out)."""
    with torch.device("meta"):
        model = RecurrentLanguageModel(read_settings(Path(folder)))
    return sum(parameter.numel() for name, parameter in model.named_parameters() if not name.startswith("softmax."))
