"""A Transformer encoder continued as a language model on target-domain text: domain-adaptive
pretraining (Gururangan et al. 2020), the Transformer version of ULMFiT's second stage
(``seqtransfer finetune-lm``; issue 56, points 2 and 4).

The encoder keeps its tokenizer and trains on the target text with its own pretraining objective:
masked sub-words for a bidirectional encoder (BERT's 15 % masking, 80/10/10, drawn from the run's
seed as ``pretrain-lm`` draws them), each next sub-word for a causal one (our ``pretrain-lm
--objective causal``). Rates are discriminative (the head at the peak rate, the top layer the same,
each layer below ``discriminative_factor`` times slower, the embeddings slowest) and slanted
triangular, with early stopping on the pseudo-perplexity of held-out target text (masked: of its
masked positions, masked once so that every epoch is scored on the same ones), measured before and
after.

**The pretraining head.** A folder saved with its LM head (ours: ``cls.predictions.``) continues
from it. The packaged MiniLM and MPNet ship without one: transformers' ``*ForMaskedLM`` then draws a
new transform (dense + layer norm) at random, from the run's seed, and ties the decoder to the
input embeddings (``tie_word_embeddings``); the log and ``pretraining.json`` say so
(``head``: ``pretrained`` or ``new``). The continued folder holds the whole LM, head included: a
tagger fine-tuned on it reads its encoder (``model.encoder=FOLDER``), and an auxiliary masked-LM
loss starts from its head.
"""

from __future__ import annotations

from pathlib import Path

from torch import nn

from seqtransfer.embeddings.transformer import encoder_config
from seqtransfer.errors import SeqTransferError

MAX_SUBWORDS = 128  # sub-words per sentence, [CLS] and [SEP] included (a tweet or a news sentence fits)


def load_language_model(folder: Path, causal: bool) -> tuple[nn.Module, str]:
    """(the folder's LM with its pretraining head, ``pretrained`` or ``new``: whether the head was in
    the folder or drawn now). Draws from torch's generator for a new head (the run is seeded)."""
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    loader = AutoModelForCausalLM if causal else AutoModelForMaskedLM
    try:
        language_model, loading = loader.from_pretrained(str(folder), output_loading_info=True)
    except (ValueError, OSError) as error:
        raise SeqTransferError(f"this Transformer cannot be continued as a {'causal' if causal else 'masked'} LM ({str(error).splitlines()[0]})", path=folder) from None
    head_missing = [name for name in loading["missing_keys"] if not name.startswith(language_model.base_model_prefix + ".")]
    return language_model, "new" if head_missing else "pretrained"


def transformer_groups(language_model: nn.Module, learning_rate: float, factor: float) -> list[dict]:
    """Parameter groups bottom to top: the embeddings (and what no layer owns, such as MPNet's shared
    relative-position bias), each layer, then the head with the top layer's rate; each group below
    the top ``factor`` times slower than the one above. Every trained parameter is in one group."""
    base = language_model.base_model_prefix
    layers = language_model.config.num_hidden_layers
    buckets: list[list[nn.Parameter]] = [[] for _ in range(layers + 2)]  # embeddings, layers 0 .. L-1, head
    for name, parameter in language_model.named_parameters():  # a tied decoder is the embeddings' matrix: listed once, there
        inner = name.removeprefix(base + ".")
        layer = inner.split(".layer.")[1].split(".")[0] if ".layer." in inner else ""
        if inner == name:  # outside the base model: the head
            buckets[layers + 1].append(parameter)
        elif layer.isdigit():
            buckets[int(layer) + 1].append(parameter)
        else:
            buckets[0].append(parameter)
    rates = [learning_rate / factor ** (layers - depth) for depth in range(layers + 1)] + [learning_rate]  # the top layer and the head at the peak
    return [{"params": parameters, "lr": rate} for parameters, rate in zip(buckets, rates) if parameters]


def unknown_share(tokenizer, sequences: list) -> float:
    """Share of the training sub-words that are the tokenizer's unknown one."""
    total = sum(len(sequence) for sequence in sequences)
    unknown = sum(int((sequence == tokenizer.unk_token_id).sum()) for sequence in sequences) if tokenizer.unk_token_id is not None else 0
    return unknown / max(total, 1)


def is_transformer_folder(folder: str) -> bool:
    """A Hugging Face Transformer folder (or a packaged one's name): a ``config.json`` with a model type."""
    try:
        return bool(encoder_config(folder).get("model_type"))
    except (SeqTransferError, OSError, ValueError):
        return False
