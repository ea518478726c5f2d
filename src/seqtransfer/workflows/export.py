"""A run exported for the wider ecosystem (``seqtransfer export``; issue 57).

``hf``: a run whose model is a fine-tuned Transformer encoder under a linear token head (softmax,
each token read at its first sub-word) becomes a Hugging Face ``AutoModelForTokenClassification``
folder: the encoder's weights under the class's base model, our classifier as its ``classifier``,
``id2label`` from the run's labels, the encoder's tokenizer and config, safetensors weights.
``transformers.pipeline("token-classification", aggregation_strategy="first")`` then labels words
as ``seqtransfer predict`` does. LoRA adapters are merged into the encoder first (PEFT's
``merge_and_unload``).

What has no Hugging Face class that predicts the same is refused with one line saying why: a CRF
(transformers' token classifiers score tokens apart), a BiLSTM between encoder and head, the mean
of a token's sub-words, Houlsby adapters, our own recurrent LM, word + character models, parsers,
multi-task models, and sentence classifiers (transformers' sequence classifiers pass [CLS] through
a pooler or dense layer that ours do not have).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from seqtransfer.embeddings.transformer import encoder_path, tokenizer_of
from seqtransfer.errors import SeqTransferError
from seqtransfer.rundir import LoadedRun, load_run

EXPORT_NOTE = "seqtransfer_export.json"  # what was exported, from which run


def refusal(run: LoadedRun) -> str | None:
    """Why this run has no Hugging Face token-classification equivalent, or None."""
    model, config = run.model, run.config.model
    family = getattr(type(model), "encoder_family", None)
    if getattr(model, "task_kind", None) != "tagging":
        kind = getattr(model, "task_kind", "unknown")
        if kind == "sentence" or kind == "regression":
            return (
                "a sentence model reads the raw [CLS] vector (or a mean) with one linear layer, and transformers' sequence classifiers put a pooler or a dense layer first: no class predicts the same"
            )
        return f"a {kind} model has no Hugging Face token-classification equivalent"
    if family != "transformer":
        return f"only a fine-tuned Transformer encoder exports to Hugging Face; this run's encoder is {family or type(model).__name__}"
    if config.classifier == "crf":
        return "a CRF head has no Hugging Face class: transformers' token classifiers score each token apart"
    if model.feature_extractor is not None:
        return "a BiLSTM between the encoder and the classifier has no Hugging Face class"
    if config.encoder_pooling != "first":
        return "the run reads each token as the mean of its sub-words; Hugging Face token classifiers read the first sub-word"
    if config.encoder_adapter == "houlsby":
        return "Houlsby adapters have no place in a plain Hugging Face model (LoRA ones are merged)"
    return None


def merged_encoder(model) -> torch.nn.Module:
    """The run's encoder as a plain Hugging Face model (LoRA merged into its weights)."""
    encoder = model.encoder
    if getattr(model, "adapter", None) == "lora":
        encoder = encoder.merge_and_unload()
    return encoder


def exported_tokenizer(encoder: str):
    """The encoder's tokenizer, adding [CLS] ... [SEP] around a text as seqtransfer's windows do
    (a tokenizer saved without that template gets one: transformers would otherwise feed the model
    inputs it never saw)."""
    import copy

    from tokenizers import processors

    tokenizer = copy.deepcopy(tokenizer_of(encoder))
    cls, sep = tokenizer.cls_token, tokenizer.sep_token
    ids = tokenizer("a")["input_ids"]
    if cls and sep and (ids[0] != tokenizer.cls_token_id or ids[-1] != tokenizer.sep_token_id):
        special = [(cls, tokenizer.cls_token_id), (sep, tokenizer.sep_token_id)]
        tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1", special_tokens=special)
    return tokenizer


def export_huggingface(run_directory: str | Path, output: str | Path) -> dict:
    """Write the Hugging Face folder ``output`` of a run (refused with one line where it has none)."""
    from transformers import AutoConfig, AutoModelForTokenClassification
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    run = load_run(run_directory)
    reason = refusal(run)
    if reason:
        raise SeqTransferError(f"cannot export this run to Hugging Face: {reason}", path=run_directory, hint="export a fine-tuned Transformer tagger with a softmax head")
    labels = run.vocabularies.labels.items
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = encoder_path(run.config.model.encoder)
    config = AutoConfig.from_pretrained(str(folder), local_files_only=True, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id={label: index for index, label in enumerate(labels)})
    exported = AutoModelForTokenClassification.from_config(config)
    encoder_state = {name: tensor for name, tensor in merged_encoder(run.model).state_dict().items() if not name.startswith("pooler.")}
    missing, unexpected = exported.base_model.load_state_dict(encoder_state, strict=False)
    if missing or unexpected:
        raise SeqTransferError(
            f"the encoder's weights do not fit {type(exported).__name__} (missing {missing[:2]}, unexpected {unexpected[:2]})",
            path=run_directory,
            hint="this encoder type is not supported for export yet",
        )
    head = getattr(exported, "classifier", None)
    if not isinstance(head, torch.nn.Linear):
        raise SeqTransferError(f"{type(exported).__name__} has no linear 'classifier' to take the run's head", path=run_directory, hint="this encoder type is not supported for export yet")
    with torch.no_grad():
        head.weight.copy_(run.model.classifier.weight)
        head.bias.copy_(run.model.classifier.bias)
    output = Path(output)
    exported.save_pretrained(str(output), safe_serialization=True)
    exported_tokenizer(run.config.model.encoder).save_pretrained(str(output))
    note = {
        "run": str(run_directory),
        "format": "hf",
        "class": type(exported).__name__,
        "labels": labels,
        "encoder": run.config.model.encoder,
        "aggregation": "first sub-word of each word (pipeline aggregation_strategy='first')",
    }
    (output / EXPORT_NOTE).write_text(json.dumps(note, indent=2), encoding="utf-8")
    return note
