"""An auxiliary language-model loss while training (the tutorial's multi-task fine-tuning).

This file: the BiLSTM models (tagger, PretRand, parser); a fine-tuned encoder's is masked (``masked_lm.py``).

The task keeps its loss; ``transfer.auxiliary_lm_weight`` times a bidirectional language-model
loss on the same sentences is added (Rei 2017's auxiliary objective for sequence labelling): the
forward half of the first BiLSTM layer's state at token t predicts word t+1, its backward half
predicts word t-1. The first layer, because above it a "forward" state has read the lower
layer's backward states, which have seen word t+1 (a stacked parser would learn to copy).

The LM predicts the ``transfer.auxiliary_lm_words`` words most frequent in the run's own
training sentences (not the source's, whose words come first in a transferred vocabulary);
the others are one unknown class. ``word_classes`` maps the word vocabulary to those classes;
it and the two softmax layers are part of the model (``language_model``, sized by
``model.language_model_words``: models/language_model_heads.py) so that the run directory
reloads; prediction never reads them.

    states (B, T, H) = [forward (B, T, H/2); backward (B, T, H/2)]      first BiLSTM layer
    loss = weight * (sum_t CE(W_f forward_t, c(w_{t+1})) + sum_t CE(W_b backward_t, c(w_{t-1})))
"""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch.nn import functional

from seqtransfer.data.batching import Batch
from seqtransfer.embeddings.recurrent_lm import folder_architecture
from seqtransfer.embeddings.transformer import encoder_config, encoder_path, is_causal_encoder, tokenizer_of
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.encoders import pretrained_encoder  # a fine-tuned encoder's model: its auxiliary LM is masked (masked_lm.py)
from seqtransfer.models.language_model_heads import LanguageModelHead, language_model_layer, root_tasks
from seqtransfer.transfer.masked_lm import CausalLanguageModelLoss, MaskedLanguageModelLoss


def language_model_heads(model: nn.Module) -> list[tuple[nn.Module, LanguageModelHead]]:
    """(BiLSTM layer, LM head) pairs: the model's one, or one per root branch of a multi-task model."""
    if hasattr(model, "hierarchy"):
        return [(language_model_layer(model.branches[task]), model.language_model[task]) for task in root_tasks(model)]
    return [(language_model_layer(model), model.language_model)]


def language_model_words(config, vocabularies) -> int:
    """The LM's classes: the ``transfer.auxiliary_lm_words`` most frequent words (+ padding and
    unknown), or a fine-tuned encoder's whole sub-word vocabulary (a masked one's tokenizer must have
    a mask token: else one line, before anything is written; so is one of our own recurrent LMs, which
    has no masked LM head)."""
    if config.model.encoder and config.model.encoder_mode == "finetune" and folder_architecture(encoder_path(config.model.encoder)):
        raise SeqTransferError(
            "an auxiliary LM loss on a fine-tuned encoder is a masked LM over its sub-words, and our own recurrent LMs have no masked LM head",
            path=config.model.encoder,
            hint="drop transfer.auxiliary_lm_weight, or continue the LM on the target's text first (seqtransfer finetune-lm)",
        )
    if config.model.architecture.startswith("encoder_"):
        if not is_causal_encoder(config.model.encoder) and tokenizer_of(config.model.encoder).mask_token_id is None:
            raise SeqTransferError(
                "an auxiliary LM loss on a fine-tuned encoder masks sub-words, and this encoder's tokenizer has no mask token",
                path=config.model.encoder,
                hint="drop transfer.auxiliary_lm_weight, or use an encoder trained with a masked LM (BERT, MiniLM, MPNet)",
            )
        return int(encoder_config(config.model.encoder)["vocab_size"])
    return min(config.transfer.auxiliary_lm_words, len(vocabularies.words))


def language_model_decoder(config) -> bool:
    """Whether a fine-tuned encoder's masked-LM head needs its own decoder: the encoder was pretrained
    with one untied from its input embeddings (``tie_word_embeddings: false``, as our pretrain-lm's)."""
    if not config.model.architecture.startswith("encoder_"):
        return False
    from transformers import AutoConfig

    # the built config: a model class's own default where config.json leaves the setting out
    return not AutoConfig.from_pretrained(str(encoder_path(config.model.encoder)), local_files_only=True).tie_word_embeddings


class AuxiliaryLanguageModelLoss:
    """The extra loss term: reads the first BiLSTM layer's states of the batch through a forward hook
    (a multi-task model: of each root branch the batch ran, each with its own LM layers).

    Only the first call of a training step is kept (the model's own batch): other terms may run the
    feature extractor again on other sentences (adversarial training's unlabelled batch)."""

    def __init__(self, model: nn.Module, weight: float) -> None:
        self.weight = weight
        self.states: dict[int, torch.Tensor] = {}  # head number -> its layer's states in this step
        pairs = language_model_heads(model)
        self.heads = [head for _, head in pairs]
        for number, (layer, _) in enumerate(pairs):
            layer.register_forward_hook(functools.partial(self.keep, number))

    def keep(self, number: int, module: nn.Module, inputs, output: torch.Tensor) -> None:  # noqa: ANN001 - hook signature
        if module.training and number not in self.states:
            self.states[number] = output

    def __call__(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """weight x the LM loss (a multi-task model: its mean over the root branches the batch ran, as its task losses are averaged)."""
        states, self.states = self.states, {}
        losses = [self.head_loss(self.heads[number], layer_states, batch) for number, layer_states in states.items()]
        return self.weight * sum(losses) / max(len(losses), 1)

    @staticmethod
    def head_loss(head: LanguageModelHead, states: torch.Tensor, batch: Batch) -> torch.Tensor:
        """Summed next- and previous-word cross-entropy of (B, T[+1], H) states (a parser's ROOT first)."""
        if states.size(1) == batch.mask.size(1) + 1:  # a parser's ROOT first
            states = states[:, 1:]
        forward, backward = states.chunk(2, dim=-1)  # (B, T, H/2) each
        targets = head.targets(batch.words)  # (B, T)
        next_loss = functional.cross_entropy(head.next_word(forward[:, :-1]).flatten(0, 1), targets[:, 1:].flatten(), ignore_index=-1, reduction="sum")
        previous_targets = targets[:, :-1].masked_fill(batch.words[:, 1:] == 0, -1)  # a padding state predicts nothing
        previous_loss = functional.cross_entropy(head.previous_word(backward[:, 1:]).flatten(0, 1), previous_targets.flatten(), ignore_index=-1, reduction="sum")
        return next_loss + previous_loss


def auxiliary_language_model(config, model: nn.Module, training_word_ids, log) -> tuple:
    """The extra loss term when ``transfer.auxiliary_lm_weight`` is set (its classes set from the training sentences), else nothing."""
    if not config.transfer.auxiliary_lm_weight:
        return ()
    if pretrained_encoder(model):
        return (masked_language_model_loss(config, model, log),)
    heads = [head for _, head in language_model_heads(model)]
    for head in heads:
        head.set_word_classes(training_word_ids)
    where = f" (first layers of {', '.join(root_tasks(model))})" if hasattr(model, "hierarchy") else ""
    log(f"auxiliary LM loss: weight {config.transfer.auxiliary_lm_weight:g}, the {heads[0].words - 2} most frequent training words (+ unknown){where}")
    return (AuxiliaryLanguageModelLoss(model, config.transfer.auxiliary_lm_weight),)


def masked_language_model_loss(config, model: nn.Module, log):
    """A fine-tuned encoder's LM term: masked sub-words (its tokenizer's mask token checked by
    :func:`language_model_words`), or each next sub-word for a left-to-right encoder."""
    if is_causal_encoder(config.model.encoder):
        log(f"auxiliary LM loss: weight {config.transfer.auxiliary_lm_weight:g}, each next sub-word (a causal LM's objective) over the encoder's {model.language_model.words} sub-words")
        return CausalLanguageModelLoss(config.transfer.auxiliary_lm_weight, tokenizer_of(config.model.encoder).sep_token_id)
    tokenizer = tokenizer_of(config.model.encoder)
    log(f"auxiliary LM loss: weight {config.transfer.auxiliary_lm_weight:g}, masked sub-words (15 %) over the encoder's {model.language_model.words} sub-words")
    return MaskedLanguageModelLoss(model, config.transfer.auxiliary_lm_weight, tokenizer)
