"""The language-model heads a model carries for the auxiliary LM loss (``transfer.auxiliary_lm_weight``).

They are part of the model (``language_model``, sized by ``model.language_model_words``) so that
the run directory reloads; prediction never reads them. The losses that train them are
``transfer/auxiliary_lm.py``'s (the BiLSTM models: next and previous word) and
``transfer/masked_lm.py``'s (a fine-tuned encoder: masked or next sub-words).
"""

from __future__ import annotations

from collections import Counter

import torch
from torch import nn
from torch.nn import functional

from seqtransfer.errors import SeqTransferError

PADDING_CLASS, UNKNOWN_CLASS = 0, 1  # class 0 is never a target (padding); class 1 is every word past the frequent ones


class LanguageModelHead(nn.Module):
    """Next-word and previous-word softmax layers over the states' two halves: (N, H/2) -> (N, words) each."""

    def __init__(self, half: int, words: int, vocabulary_size: int) -> None:
        super().__init__()
        self.next_word = nn.Linear(half, words)
        self.previous_word = nn.Linear(half, words)
        self.words = words
        # (V,) the LM class of each word index; filled from the training sentences (set_word_classes)
        self.register_buffer("word_classes", torch.full((vocabulary_size,), UNKNOWN_CLASS, dtype=torch.long))

    def set_word_classes(self, training_word_ids) -> None:
        """Classes 2.. for the ``words - 2`` most frequent word indices of the training sentences (ties: lower index first)."""
        counts = Counter(int(index) for sentence in training_word_ids for index in sentence if index > UNKNOWN_CLASS)
        frequent = sorted(counts, key=lambda index: (-counts[index], index))[: self.words - 2]
        classes = torch.full_like(self.word_classes, UNKNOWN_CLASS)
        classes[PADDING_CLASS] = PADDING_CLASS
        classes[torch.tensor(frequent, dtype=torch.long, device=classes.device)] = torch.arange(2, 2 + len(frequent), device=classes.device)
        self.word_classes.copy_(classes)

    def targets(self, words: torch.Tensor) -> torch.Tensor:
        """(B, T) word indices -> (B, T) LM classes, -1 for padding."""
        return self.word_classes[words].masked_fill(words == 0, -1)


class MaskedLanguageModelHead(nn.Module):
    """(M, H) encoder states -> (M, V) sub-word scores, the decoder tied to the encoder's input
    embeddings (E, of their own width: ALBERT's and ELECTRA's are narrower than H), or its own
    (``tied=False``: an encoder pretrained with an untied decoder)."""

    def __init__(self, hidden: int, embedding: int, words: int, tied: bool = True) -> None:
        super().__init__()
        self.transform = nn.Linear(hidden, embedding)
        self.norm = nn.LayerNorm(embedding)
        self.decoder = None if tied else nn.Parameter(torch.empty(words, embedding).normal_(0.0, 0.02))  # (V, E), BERT's initialisation
        self.bias = nn.Parameter(torch.zeros(words))
        self.words = words

    def forward(self, states: torch.Tensor, embeddings: torch.Tensor) -> torch.Tensor:
        decoder = embeddings if self.decoder is None else self.decoder  # (V, E)
        return self.norm(functional.gelu(self.transform(states))) @ decoder.t() + self.bias


def language_model_layer(model: nn.Module) -> nn.Module:
    """The first BiLSTM layer of the model's (or a multi-task branch's) feature extractor (its only one for the tagger and PretRand)."""
    extractor = model.feature_extractor
    stacked = getattr(getattr(extractor, "lstm", extractor), "layers", None)
    return stacked[0] if stacked is not None else extractor


def root_tasks(model: nn.Module) -> list[str]:
    """A hierarchical multi-task model's tasks that read no other task: their branches' first layers hold the LM."""
    return [task for task in model.order if not model.hierarchy[task]]


def attach_masked_language_model(model: nn.Module, words: int, own_decoder: bool = False) -> None:
    """Give a fine-tuned encoder's model its masked-LM head (``words``: the encoder's vocabulary
    size), with its own decoder for an encoder pretrained untied (``model.language_model_decoder``;
    runs saved before it existed rebuild the tied head they trained)."""
    embedding = model.encoder.get_input_embeddings().embedding_dim
    model.language_model = MaskedLanguageModelHead(model.encoder.config.hidden_size, embedding, words, tied=not own_decoder)


def attach_language_model(model: nn.Module, words: int, own_decoder: bool = False, masked: bool = False) -> None:
    """Give ``model`` its auxiliary LM layers (``words`` > 0), as the model's config says
    (``masked``: the model fine-tunes a pretrained encoder, ``models.encoders.pretrained_encoder``,
    whose LM head is masked; ``own_decoder``: that head not tied to its input embeddings)."""
    if words > 0 and masked:
        attach_masked_language_model(model, words, own_decoder)
    elif words > 0 and hasattr(model, "hierarchy"):  # one LM per root branch, reading its first layer (every batch runs a root branch)
        vocabulary_size = model.word_representation.word_embedding.num_embeddings
        model.language_model = nn.ModuleDict({task: LanguageModelHead(language_model_layer(model.branches[task]).forward_lstm.hidden_size, words, vocabulary_size) for task in root_tasks(model)})
    elif words > 0:
        if getattr(model, "feature_extractor", None) is None or getattr(model, "word_representation", None) is None:
            raise SeqTransferError(
                f"an auxiliary LM loss reads a BiLSTM feature extractor; this {type(model).__name__} has none",
                hint="drop transfer.auxiliary_lm_weight (it serves the BiLSTM tagger, PretRand and the parser)",
            )
        layer = language_model_layer(model)
        half = layer.forward_lstm.hidden_size
        model.language_model = LanguageModelHead(half, words, model.word_representation.word_embedding.num_embeddings)
