"""A fine-tuned Transformer encoder (To-tune-or-not-to-tune paper, "FT"): the ``transformer``
family of ``models/encoders.py``, under a light head (``models/heads.py``).

    h        = Encoder(sub-word windows)          every window of the batch at once      (W, S, H)
    x_t      = h[first sub-word of token t]       (or the mean of its sub-words)         (B, T, H)
               (model.feature_extractor=bilstm: a BiLSTM of model.hidden units reads x)
    s        = h[the sentence's first window, 0]  its [CLS]: the sentence vector         (B, H)

The encoder's architecture comes from its folder's config.json (``model.encoder``); its
pretrained weights are loaded once, when training starts (``load_pretrained``), and saved with
the run, so a run directory holds the fine-tuned encoder. Trained by default with AdamW and a
linear warm-up then decay (``train.optimizer`` and ``train.schedule``).

With ``model.encoder_adapter=lora`` (PEFT's LoRA on the attention's query and value, rank
``model.lora_rank``) or ``houlsby`` (bottlenecks after each layer's output projections,
``models/adapters.py``), the encoder's own weights stay frozen (``frozen``): only the adapter
(and for Houlsby the layer norms) and the head train, and only they are saved (``stored``);
loading rebuilds the encoder from its folder, checked against the hash the run recorded.
"""

from __future__ import annotations

import os
import re

import torch
from torch import nn
from torch.nn import functional

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.embeddings.transformer import encoder_path, load_encoder
from seqtransfer.models.adapters import ADAPTERS, adapter_weight, pretrained_name
from seqtransfer.models.attention import use_fast_attention
from seqtransfer.models.bilstm import BiLSTM
from seqtransfer.models.dropout import Dropout

# a Hugging Face encoder's layer N inside a model: (its root, under PEFT's LoRA inside base_model.model; the layers'
# container: encoder in BERT-like encoders, transformer in DistilBERT; N)
ENCODER_LAYER = re.compile(r"(encoder\.(?:base_model\.model\.)?)(encoder|transformer)\.layer\.(\d+)(?:\.|$)")


class TransformerEncoder:
    """A Transformer encoder's last layer at each token's first sub-word (or the mean of its sub-words)."""

    word_representation = None  # no word or character tables (nothing to precompute per form)
    feature_extractors = ("bilstm", "none")  # what model.feature_extractor may choose (models/registry.py)

    def build_encoder(self, config: ModelConfig, word_count: int, character_count: int, task_kind: str, vocabularies=None) -> int:
        from transformers import AutoConfig, AutoModel

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.encoder_name = config.encoder
        self.reads_pairs_jointly = config.pair_encoding != "separate"  # a pair is one input, A [SEP] B (token types where the encoder has them); else each text alone
        self.reads_pooler = config.sentence_reader == "pooler"  # the sentence head reads the encoder's own pooler
        self.encoder = AutoModel.from_config(AutoConfig.from_pretrained(str(encoder_path(config.encoder)), local_files_only=True))
        size = self.encoder.config.hidden_size
        # sparse: the sub-word table's gradient lists the batch's rows, made dense in a buffer kept
        # across steps (training/optimizers.py, DenseGradients): about 2 instead of 20-40 ms per step
        self.encoder.get_input_embeddings().sparse = True
        use_fast_dropout(self.encoder)
        use_fast_attention(self.encoder)
        self.adapter = config.encoder_adapter
        if self.adapter:
            self.encoder = ADAPTERS[self.adapter](self.encoder, config)
        self.pooling = config.encoder_pooling  # a token's vector: its first sub-word's, or the mean of its sub-words'
        self.feature_extractor = None
        if config.feature_extractor == "bilstm":  # a BiLSTM between the encoder and the classifier (To-tune paper, Table 5)
            self.feature_extractor, size = BiLSTM(size, config.hidden), config.hidden
        return size

    def load_pretrained(self) -> None:
        """Start from the encoder's pretrained weights (before training; a saved run has its own)."""
        _, pretrained = load_encoder(self.encoder_name)
        state = pretrained.state_dict()
        if self.adapter is None:
            self.encoder.load_state_dict(state)
            return
        base = {name: state[pretrained_name(name)] for name in self.encoder.state_dict() if not adapter_weight(name)}
        self.encoder.load_state_dict(base, strict=False)

    def frozen(self, name: str) -> bool:
        """A parameter that never trains: the encoder's own weights under an adapter (Houlsby's also train the layer norms)."""
        if self.adapter is None or not name.startswith("encoder.") or adapter_weight(name):
            return False
        if self.reads_pooler and ".pooler." in name:  # the sentence head's first layer (model.sentence_reader=pooler)
            return False
        return not (self.adapter == "houlsby" and ("LayerNorm" in name or "layer_norm" in name))  # BERT-like LayerNorm, DistilBERT's sa_/output_layer_norm

    def stored(self, name: str) -> bool:
        """A weight the run directory holds (an adapter's run: not the frozen encoder, rebuilt from its folder)."""
        return not self.frozen(name)

    def encode(self, batch: Batch, subword_ids: torch.Tensor | None = None) -> torch.Tensor:
        """(W, S, H) the encoder's last layer over the batch's windows (token types for pairs, where
        the encoder has them); ``subword_ids``: (W, S) other ids in their place (the masked LM's)."""
        types = {"token_type_ids": batch.subword_types} if batch.subword_types is not None and getattr(self.encoder.config, "type_vocab_size", 0) > 1 else {}
        ids = batch.subword_ids if subword_ids is None else subword_ids
        return self.encoder(input_ids=ids, attention_mask=batch.subword_mask, **types).last_hidden_state

    def features(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, H) token states: the encoder's (``token_states``), through the BiLSTM when
        there is one (``model.feature_extractor=bilstm``; H is then ``model.hidden``)."""
        states = self.token_states(batch)
        return states if self.feature_extractor is None else self.feature_extractor(states, batch.lengths)

    def token_states(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, H) the encoder's last layer at each token's first sub-word, or the mean
        of its sub-words (``model.encoder_pooling=mean``)."""
        states = self.encode(batch)  # (W, S, H)
        flat = states.reshape(-1, states.size(-1))  # (W * S, H)
        if self.pooling == "first":
            return flat[batch.token_index]
        # a token's sub-words are consecutive rows of one window: the mean is a difference of prefix
        # sums taken within each window (a sum over the whole batch would lose precision and tie a
        # token's vector to what else the batch holds)
        sums = functional.pad(states.cumsum(1), (0, 0, 1, 0)).reshape(-1, states.size(-1))  # (W * (S + 1), H): row 0 of each window is 0
        width = states.size(1)
        first = batch.token_index + batch.token_index // width  # the token's first row in the padded layout
        return (sums[first + batch.token_sizes] - sums[first]) / batch.token_sizes.unsqueeze(-1)

    def sentence_vector(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, H) the [CLS] vector of each sentence's first window (its first token lies there)."""
        states = self.encode(batch)  # (W, S, H)
        first_windows = batch.token_index[:, 0] // states.size(1)
        return states[first_windows, 0]

    def pooler(self) -> nn.Module | None:
        """The encoder's own pooler over [CLS] (BERT's and MPNet's dense + tanh; None where it has none)."""
        base = self.encoder.get_base_model() if hasattr(self.encoder, "get_base_model") else self.encoder  # inside PEFT's LoRA
        return getattr(base, "pooler", None)

    def pooled_vector(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, H) the pooler's output over the [CLS] of each sentence's first window: the
        vector transformers' sequence classifiers read (``model.sentence_reader=pooler``)."""
        states = self.encode(batch)  # (W, S, H)
        first_windows = batch.token_index[:, 0] // states.size(1)
        return self.pooler()(states[first_windows, :1])  # the pooler reads position 0 of (B, 1, H)

    def layer_prefixes(self, names: list[str]) -> tuple[list[str], tuple[str, ...]]:
        """Its embeddings, then each of its layers, bottom to top; what the encoder shares across its
        layers (MPNet's relative attention bias) goes with its embeddings."""
        matches = [match for name in names if (match := ENCODER_LAYER.match(name))]
        if not matches:
            return [], ()
        root = min(match.group(1) for match in matches)  # under PEFT's LoRA: inside its base_model.model
        container = next(f"{root}{match.group(2)}." for match in matches if match.group(1) == root)
        layers = sorted({int(match.group(3)) for match in matches if match.group(1) == root})
        shared = tuple(name for name in names if name.startswith(container) and not name.startswith(f"{container}layer."))
        return [f"{root}embeddings.", *(f"{container}layer.{layer}." for layer in layers)], shared


def use_fast_dropout(module: nn.Module) -> None:
    """Replace every ``nn.Dropout`` inside ``module`` by ``models.dropout.Dropout`` of the same rate:
    the same distribution from cheaper random draws (8% of a MiniLM fine-tuning step went to
    ``bernoulli_``, measured). An attention's dropout module only lends its rate (``.p``) to the
    attention function, which draws its own mask."""
    for name, child in module.named_children():
        if type(child) is nn.Dropout:
            setattr(module, name, Dropout(child.p))
        else:
            use_fast_dropout(child)
