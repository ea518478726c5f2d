"""A run exported for the wider ecosystem (``seqtransfer export``; issue 57).

``hf``: a run whose model is a fine-tuned Transformer encoder becomes a Hugging Face folder (the
encoder's weights under the class's base model, the encoder's tokenizer and config, safetensors
weights, ``id2label`` from the run's labels):

- a tagger under a linear token head (softmax, each token read at its first sub-word): an
  ``AutoModelForTokenClassification`` whose ``classifier`` is ours;
  ``transformers.pipeline("token-classification", aggregation_strategy="first")`` then labels
  words as ``seqtransfer predict`` does;
- a sentence classifier or regressor that reads the encoder's own pooler
  (``model.sentence_reader=pooler``): an ``AutoModelForSequenceClassification``, our classifier
  as its ``classifier`` (BERT: pooler -> classifier) or as the ``out_proj`` after the pooler's
  dense layer (MPNet, RoBERTa: dense + tanh -> out_proj); ``pipeline("text-classification")``
  then gives our labels (a regressor: ``problem_type="regression"``, one score).

LoRA adapters are merged into the encoder first (PEFT's ``merge_and_unload``). What has no Hugging
Face class that predicts the same is refused with one line saying why: a CRF (transformers' token
classifiers score tokens apart), a BiLSTM between encoder and head, the mean of a token's
sub-words, Houlsby adapters, our own recurrent LM, word + character models, parsers, multi-task
models, a sentence head that reads anything but the pooler (transformers' sequence classifiers
all start with one), and a pair encoded one text at a time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from seqtransfer.embeddings.transformer import encoder_path, tokenizer_of
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.sentence_readers import reader_name
from seqtransfer.rundir import LoadedRun, load_run

EXPORT_NOTE = "seqtransfer_export.json"  # what was exported, from which run


def refusal(run: LoadedRun) -> str | None:
    """Why this run has no Hugging Face token- or sequence-classification equivalent, or None."""
    model, config = run.model, run.config.model
    family = getattr(type(model), "encoder_family", None)
    kind = getattr(model, "task_kind", None)
    if kind not in ("tagging", "sentence", "regression"):
        return f"a {kind or 'unknown'} model has no Hugging Face token- or sequence-classification equivalent"
    if family != "transformer":
        return f"only a fine-tuned Transformer encoder exports to Hugging Face; this run's encoder is {family or type(model).__name__}"
    if config.encoder_adapter == "houlsby":
        return "Houlsby adapters have no place in a plain Hugging Face model (LoRA ones are merged)"
    if model.feature_extractor is not None:
        return "a BiLSTM between the encoder and the classifier has no Hugging Face class"
    if kind != "tagging":
        if reader_name(config) != "pooler":
            reads = reader_name(config)
            return f"a sentence head that reads '{reads}' has no Hugging Face class: transformers' sequence classifiers read the encoder's pooler over [CLS] (train with model.sentence_reader=pooler)"
        return None
    if config.classifier == "crf":
        return "a CRF head has no Hugging Face class: transformers' token classifiers score each token apart"
    if config.encoder_pooling != "first":
        return "the run reads each token as the mean of its sub-words; Hugging Face token classifiers read the first sub-word"
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


def save_tokenizer(encoder: str, output: Path, typed: bool) -> None:
    """Save the exported tokenizer in ``output``; ``typed``: it gives token types (a pair's B is
    type 1, as our encoder reads it wherever the encoder has them; a tokenizer saved without
    ``token_type_ids`` among its inputs would give BERT type 0 throughout). What only this
    machine's loading meant (local files only) is left out of its config."""
    tokenizer = exported_tokenizer(encoder)
    tokenizer.save_pretrained(str(output))
    path = output / "tokenizer_config.json"
    settings = {key: value for key, value in json.loads(path.read_text(encoding="utf-8")).items() if key not in ("is_local", "local_files_only")}
    names = settings.get("model_input_names") or tokenizer.model_input_names
    if typed and "token_type_ids" not in names:
        settings["model_input_names"] = [names[0], "token_type_ids", *names[1:]]
    path.write_text(json.dumps(settings, indent=2), encoding="utf-8")


def exported_class(run: LoadedRun):
    """The Hugging Face auto class of the run's task kind, and the label maps of its config."""
    from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification

    labels = run.vocabularies.labels.items
    if run.model.task_kind == "regression":
        return AutoModelForSequenceClassification, {"num_labels": 1, "problem_type": "regression", "id2label": {0: "score"}, "label2id": {"score": 0}}
    maps = {"num_labels": len(labels), "id2label": dict(enumerate(labels)), "label2id": {label: index for index, label in enumerate(labels)}}
    if run.model.task_kind == "sentence":
        return AutoModelForSequenceClassification, {**maps, "problem_type": "single_label_classification"}
    return AutoModelForTokenClassification, maps


def copy_linear(target: torch.nn.Module | None, source: torch.nn.Linear, what: str, run_directory) -> None:
    """Copy ``source``'s weight and bias into the Linear ``target`` (one line where there is none)."""
    if not isinstance(target, torch.nn.Linear) or target.weight.shape != source.weight.shape:
        raise SeqTransferError(
            f"the exported model has no linear {what} of shape {tuple(source.weight.shape)} to take the run's", path=run_directory, hint="this encoder type is not supported for export yet"
        )
    with torch.no_grad():
        target.weight.copy_(source.weight)
        target.bias.copy_(source.bias)


def copy_head(exported: torch.nn.Module, run: LoadedRun, run_directory) -> None:
    """Our classifier into the exported class's head: a token or BERT sequence classifier's
    ``classifier``, or (MPNet, RoBERTa: dense + tanh, then ``out_proj``) our pooler's dense layer
    and our classifier."""
    head = getattr(exported, "classifier", None)
    if run.model.task_kind != "tagging" and hasattr(head, "out_proj"):
        copy_linear(getattr(head, "dense", None), run.model.pooler().dense, "classifier.dense", run_directory)
        head = head.out_proj
    copy_linear(head, run.model.classifier, "classifier", run_directory)


def export_huggingface(run_directory: str | Path, output: str | Path) -> dict:
    """Write the Hugging Face folder ``output`` of a run (refused with one line where it has none)."""
    from transformers import AutoConfig
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    run = load_run(run_directory)
    reason = refusal(run)
    if reason:
        raise SeqTransferError(
            f"cannot export this run to Hugging Face: {reason}",
            path=run_directory,
            hint="export a fine-tuned Transformer tagger with a softmax head, or a sentence model with model.sentence_reader=pooler",
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    auto_class, label_maps = exported_class(run)
    exported = auto_class.from_config(AutoConfig.from_pretrained(str(encoder_path(run.config.model.encoder)), local_files_only=True, **label_maps))
    keeps_pooler = getattr(exported.base_model, "pooler", None) is not None  # BERT's sequence classifier reads it; token classifiers have none
    encoder_state = {name: tensor for name, tensor in merged_encoder(run.model).state_dict().items() if keeps_pooler or not name.startswith("pooler.")}
    missing, unexpected = exported.base_model.load_state_dict(encoder_state, strict=False)
    if missing or unexpected:
        raise SeqTransferError(
            f"the encoder's weights do not fit {type(exported).__name__} (missing {missing[:2]}, unexpected {unexpected[:2]})",
            path=run_directory,
            hint="this encoder type is not supported for export yet",
        )
    copy_head(exported, run, run_directory)
    output = Path(output)
    exported.save_pretrained(str(output), safe_serialization=True)
    save_tokenizer(run.config.model.encoder, output, getattr(exported.config, "type_vocab_size", 0) > 1)
    note = {"run": str(run_directory), "format": "hf", "class": type(exported).__name__, "labels": list(label_maps["id2label"].values()), "encoder": run.config.model.encoder}
    if run.model.task_kind == "tagging":
        note["aggregation"] = "first sub-word of each word (pipeline aggregation_strategy='first')"
    else:
        note["reads"] = "the pooler over [CLS] of '[CLS] text [SEP]' (a pair: '[CLS] A [SEP] B [SEP]'), texts up to the encoder's positions"
    (output / EXPORT_NOTE).write_text(json.dumps(note, indent=2), encoding="utf-8")
    return note
