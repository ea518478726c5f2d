"""The auxiliary LM loss of a fine-tuned encoder: its pretraining objective kept beside the task's.

The tutorial's multi-task fine-tuning for a Transformer (``transfer.auxiliary_lm_weight``; the
BiLSTM models' next/previous-word loss is ``auxiliary_lm.py``). A bidirectional encoder's state
at a sub-word has read the next one, so it cannot predict it; it predicts masked sub-words as in
its pretraining instead. Each training step masks 15 % of the batch's real sub-words (never a
special one such as [CLS], [SEP] or padding) as BERT does (80 % become [MASK], 10 % a random
sub-word, 10 % stay), runs the encoder again on the masked windows and predicts the originals:

    h      = Encoder(masked windows)                                  (W, S, H)
    logits = LayerNorm(GELU(W_t h_m)) E^T + b                         (M, V)  at the M masked positions
    loss   = weight * sum_m CE(logits_m, original sub-word_m)

E is the encoder's own input embedding matrix (tied, as in BERT's pretraining head), or the
head's own decoder matrix D for an encoder pretrained with an untied one (``tie_word_embeddings:
false`` in its config, as our ``pretrain-lm`` folders): then logits = LayerNorm(GELU(W_t h_m)) D^T + b
and the loss reaches E only through the encoder's input, as in that pretraining. The transform
W_t, its layer norm, D and the bias b (V = ``model.language_model_words``, the encoder's vocabulary)
are the model's ``language_model``, saved with the run; prediction never reads them. They start
from the encoder folder's own pretraining head where it has one of the same shapes (BERT-like
``cls.predictions.``, RoBERTa's and MPNet's ``lm_head.``; the bias the decoder adds), so the loss
continues the pretraining; otherwise (the packaged MiniLM and MPNet ship without theirs) from
random. A random head's scores over all V sub-words move every row of a tied table at each step:
on the adaptation grid (seed 1, ``seqtransfer analyze drift``) it moved MiniLM's embeddings by
21-57 %, against under 1 % under plain fine-tuning. (The layer norm keeps torch's eps, 1e-5, where
BERT's has 1e-12: on inputs of variance near 1 the two differ by about 1e-5 of a unit.)
Masks draw from torch's generator, which the run's seed fixes. The scores hold M x V floats:
for a batch of 16 sentences of 40 sub-words (M = 96) and MiniLM's 30,522 sub-words that is
96 x 30,522 x 4 bytes, about 12 MB (arithmetic, not a measurement); eight times that for a
250,000-sub-word vocabulary.

A left-to-right encoder (a causal LM, as ``pretrain-lm --objective causal`` trains) was pretrained
to predict each next sub-word, and its state at a sub-word has not read the next one: its term
(``CausalLanguageModelLoss``) runs the encoder again on the unmasked windows and predicts every
real sub-word after a window's first from the state before it, through the same head (its folder's
``cls.predictions.`` head, which BertLMHeadModel shares with the masked one; a decoder-only model
such as GPT-2 has no such transform, and its head starts random, as the run's log says):

    h      = Encoder(windows)                                                     (W, S, H)
    loss   = weight * sum over real pairs (s, s + 1) CE(head(h_s), sub-word_{s+1})

A [SEP] predicts nothing: pretraining sequences end there, and in a sentence pair the next
sub-word is the second text's. The term scores nearly every sub-word, against the masked term's
15 %, so the same ``transfer.auxiliary_lm_weight`` weighs about six times more, and its scores hold
about six times as many floats (P x V).
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from torch import nn
from torch.nn import functional

from seqtransfer.data.batching import Batch
from seqtransfer.embeddings.transformer import stored_weights
from seqtransfer.models.language_model_heads import MaskedLanguageModelHead

MASKED_SHARE, REPLACED_BY_MASK, REPLACED_BY_RANDOM = 0.15, 0.8, 0.1  # BERT's recipe


# the pretraining head's weights in a Hugging Face folder, per part of MaskedLanguageModelHead
# (BERT-like: "cls.predictions."; RoBERTa, MPNet: "lm_head."). The bias is the one the decoder
# adds: "decoder.bias" where the folder has it (an untied head's "cls.predictions.bias" may be an
# unused zero vector), else the head's own; "decoder" only for a head with its own decoder.
PRETRAINING_HEADS = (
    {
        "transform.weight": ["cls.predictions.transform.dense.weight"],
        "transform.bias": ["cls.predictions.transform.dense.bias"],
        "norm.weight": ["cls.predictions.transform.LayerNorm.weight"],
        "norm.bias": ["cls.predictions.transform.LayerNorm.bias"],
        "bias": ["cls.predictions.decoder.bias", "cls.predictions.bias"],
        "decoder": ["cls.predictions.decoder.weight"],
    },
    {
        "transform.weight": ["lm_head.dense.weight"],
        "transform.bias": ["lm_head.dense.bias"],
        "norm.weight": ["lm_head.layer_norm.weight"],
        "norm.bias": ["lm_head.layer_norm.bias"],
        "bias": ["lm_head.decoder.bias", "lm_head.bias"],
        "decoder": ["lm_head.decoder.weight"],
    },
)


def load_pretraining_head(head: MaskedLanguageModelHead, folder: Path) -> bool:
    """Start ``head`` from the encoder folder's pretraining head, when the folder's safetensors
    (one file or shards) hold all of its parts with the same shapes; returns whether they did (if
    not, the head stays as it was: random)."""
    own = head.state_dict()
    files = stored_weights(folder)
    for names in PRETRAINING_HEADS:
        chosen = {part: next((name for name in candidates if name in files), None) for part, candidates in names.items() if part in own}
        if None in chosen.values():
            continue
        found = {}
        for part, name in chosen.items():
            with safe_open(str(files[name]), "pt") as weights:
                found[part] = weights.get_tensor(name)
        if all(found[part].shape == own[part].shape for part in own):
            head.load_state_dict(found)
            return True
    return False


def mask_subwords(ids: torch.Tensor, maskable: torch.Tensor, mask_id: int, vocabulary_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(W, S) sub-word ids and where masking may fall -> (masked ids, (W, S) bool chosen positions).

    At least one position is chosen when any may be (a batch of short sentences still teaches)."""
    chosen = (torch.rand(ids.shape, device=ids.device) < MASKED_SHARE) & maskable
    if not chosen.any() and maskable.any():
        candidates = maskable.flatten().nonzero().squeeze(1)
        chosen.view(-1)[candidates[torch.randint(len(candidates), (1,), device=ids.device)]] = True
    draw = torch.rand(ids.shape, device=ids.device)
    masked = ids.masked_fill(chosen & (draw < REPLACED_BY_MASK), mask_id)
    randomised = chosen & (draw >= REPLACED_BY_MASK) & (draw < REPLACED_BY_MASK + REPLACED_BY_RANDOM)
    masked = torch.where(randomised, torch.randint_like(ids, vocabulary_size), masked)
    return masked, chosen


class CausalLanguageModelLoss:
    """The extra loss term of a left-to-right encoder: a second encoder pass over the batch's windows,
    each sub-word predicting the next, as in its pretraining."""

    def __init__(self, weight: float, separator: int | None) -> None:
        self.weight, self.separator = weight, separator

    def __call__(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        ids, real = batch.subword_ids, batch.subword_mask.bool()  # (W, S)
        states = model.encode(batch)  # (W, S, H)
        predicted = real[:, :-1] & real[:, 1:] & (ids[:, :-1] != self.separator)  # (W, S - 1): s and s + 1 both real, s not a [SEP]
        scores = model.language_model(states[:, :-1][predicted], model.encoder.get_input_embeddings().weight)  # (P, V)
        return self.weight * functional.cross_entropy(scores.float(), ids[:, 1:][predicted], reduction="sum")


class MaskedLanguageModelLoss:
    """The extra loss term: a second encoder pass over the batch's windows with sub-words masked."""

    def __init__(self, model: nn.Module, weight: float, tokenizer) -> None:
        self.weight = weight
        self.mask_id = tokenizer.mask_token_id
        special = torch.zeros(model.language_model.words, dtype=torch.bool)
        special[[index for index in tokenizer.all_special_ids if index < len(special)]] = True
        self.special = special  # (V,) sub-word ids never masked

    def __call__(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        ids = batch.subword_ids  # (W, S)
        self.special = self.special.to(ids.device)
        maskable = batch.subword_mask.bool() & ~self.special[ids]
        masked, chosen = mask_subwords(ids, maskable, self.mask_id, model.language_model.words)
        states = model.encode(batch, masked)  # (W, S, H)
        scores = model.language_model(states[chosen], model.encoder.get_input_embeddings().weight)  # (M, V)
        return self.weight * functional.cross_entropy(scores.float(), ids[chosen], reduction="sum")
