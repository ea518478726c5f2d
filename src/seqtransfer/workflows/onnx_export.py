"""A word-and-character model exported to ONNX (``seqtransfer export RUN --format onnx``; issue 57).

The graph holds what scores a batch: the word and character representation, the BiLSTM(s) and
the classifier (a tagger's emissions, PretRand's combined branches), or a parser's arc scores and
relation factors. What chooses among the scores stays in Python, as in seqtransfer: the CRF's
Viterbi (the run's own ``CRF.decode``, with its transitions from ``decoding.json``) and the
parser's maximum spanning trees. ``OnnxModel`` runs the folder with onnxruntime and seqtransfer's
own batching, and predicts what the run predicts (tests/test_onnx_export.py).

Graph inputs (int64): ``words`` (B, T), ``lengths`` (B,), ``characters`` (U, C) of the batch's
distinct forms, ``character_lengths`` (U,), ``form_index`` (B, T); every size is dynamic. Outputs:
a tagger's ``emissions`` (B, T, L); a parser's ``arc_scores`` (B, T, T+1), ``relation_left``
(B, T, O, R+1) and ``relation_right`` (B, T+1, R+1), whose product at each token's chosen head
gives its relation scores.

Refused with one line: fine-tuned encoders (``--format hf``), frozen encoder features, input tags,
multi-task models and sentence models.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from seqtransfer.data.batching import Batch, encode_sentences, evaluation_batches
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.biaffine import with_bias
from seqtransfer.rundir import VOCABULARY, LoadedRun, load_run

INPUTS = ("words", "lengths", "characters", "character_lengths", "form_index")
GRAPH, DECODING, NOTE = "model.onnx", "decoding.json", "seqtransfer_export.json"
OPSET = 17
EXAMPLE = [["Export", "me", ",", "please", "!"], ["A", "second", "sentence"], ["x"]]  # the sentences the graph is traced on


def refusal(run: LoadedRun) -> str | None:
    """Why this run has no ONNX export, or None."""
    model = run.model
    kind = getattr(model, "task_kind", None)
    if kind not in ("tagging", "dependency"):
        return f"a {kind} model is not exported to ONNX (taggers, PretRand and parsers are)"
    if getattr(type(model), "encoder_family", "words") != "words":
        return "a fine-tuned encoder's run exports to Hugging Face (--format hf), not to ONNX"
    representation = model.word_representation
    if hasattr(representation, "encoder_mix"):
        return "the run reads a frozen Transformer's features, which the ONNX graph does not compute"
    if hasattr(representation, "tag_embedding"):
        return "the run reads input tags from a tagger of its own, which the ONNX graph does not hold"
    return None


def batch_of(words, lengths, characters, character_lengths, form_index) -> Batch:
    """The graph's inputs as the model's Batch (no labels)."""
    return Batch(words=words, targets={}, mask=None, lengths=lengths, characters=characters, character_lengths=character_lengths, form_index=form_index, form_ids=form_index, indices=None)


class ScoreGraph(nn.Module):
    """The traced module: a run's scoring, its characters encoded in one call (``encode_in_one_call``)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model.eval()

    def forward(self, words, lengths, characters, character_lengths, form_index):
        representation = self.model.word_representation
        representation.form_table = representation.character_encoder.encode_in_one_call(characters, character_lengths)  # (U, hidden)
        try:
            batch = batch_of(words, lengths, characters, character_lengths, form_index)
            if self.model.task_kind == "tagging":
                return self.model.emissions(batch)  # (B, T, L)
            return self.parser_scores(batch)
        finally:
            representation.form_table = None

    def parser_scores(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T, T+1) arc scores; relation factors (B, T, O, R+1) and (B, T+1, R+1)."""
        classifier = self.model.classifier
        states = self.model.states(batch)  # (B, T+1, H), ROOT first
        dependents = with_bias(classifier.relation_dependent(states[:, 1:]))  # (B, T, R+1)
        left = torch.einsum("bti,oij->btoj", dependents, classifier.relation_scorer.weight)
        return classifier.arc_scores(states, batch.lengths), left, with_bias(classifier.relation_head(states))


def feeds(batch: Batch) -> dict[str, np.ndarray]:
    """A batch as the graph's inputs."""
    return {name: getattr(batch, name).numpy() for name in INPUTS}


def export_onnx(run_directory: str | Path, output: str | Path) -> dict:
    """Write ``output``/model.onnx (+ the run's vocabularies, the decoding's settings, a note); refused with one line where it has no export."""
    import onnxruntime

    run = load_run(run_directory)
    reason = refusal(run)
    if reason:
        raise SeqTransferError(f"cannot export this run to ONNX: {reason}", path=run_directory, hint="export a BiLSTM(-CRF) tagger, PretRand or a parser")
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    graph = ScoreGraph(run.model).eval()
    batch = next(evaluation_batches(encode_sentences(EXAMPLE, run.vocabularies), len(EXAMPLE)))
    example = tuple(getattr(batch, name) for name in INPUTS)
    outputs = ["emissions"] if run.model.task_kind == "tagging" else ["arc_scores", "relation_left", "relation_right"]
    axes = {
        "words": {0: "sentences", 1: "tokens"},
        "lengths": {0: "sentences"},
        "characters": {0: "forms", 1: "width"},
        "character_lengths": {0: "forms"},
        "form_index": {0: "sentences", 1: "tokens"},
    } | {name: {0: "sentences", 1: "tokens"} for name in outputs}
    # The TorchScript exporter, not torch.export's (dynamo=True): that one decomposes nn.LSTM into
    # one operator group per time step and fixes the sentence and form widths to the traced ones
    # (measured: its dynamic-shape check fails on both); this one writes ONNX's LSTM operator.
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # its deprecation notice, and the tracer's notes on Python values
        torch.onnx.export(graph, example, str(output / GRAPH), dynamo=False, input_names=list(INPUTS), output_names=outputs, dynamic_axes=axes, opset_version=OPSET)
    shutil.copyfile(Path(run_directory) / VOCABULARY, output / VOCABULARY)
    (output / DECODING).write_text(json.dumps(decoding_settings(run.model)), encoding="utf-8")
    difference = largest_difference(graph, example, onnxruntime.InferenceSession(str(output / GRAPH), providers=["CPUExecutionProvider"]))
    note = {
        "run": str(run_directory),
        "format": "onnx",
        "task_kind": run.model.task_kind,
        "inputs": list(INPUTS),
        "outputs": outputs,
        "largest_difference_to_torch": difference,
        "decoding": json.loads((output / DECODING).read_text())["kind"],
    }
    (output / NOTE).write_text(json.dumps(note, indent=2), encoding="utf-8")
    return note


def decoding_settings(model: nn.Module) -> dict:
    """What chooses among the scores: softmax arg-max, the CRF's parameters, or trees (single root or not)."""
    if model.task_kind == "dependency":
        return {"kind": "tree", "single_root": bool(model.single_root)}
    crf = getattr(model.output, "crf", None)
    if crf is None:
        return {"kind": "softmax"}
    return {"kind": "crf", **{name: getattr(crf, name).detach().tolist() for name in ("transitions", "start", "end")}}


def largest_difference(graph: ScoreGraph, example: tuple, session) -> float:
    """The largest absolute difference between torch's and onnxruntime's outputs on the traced sentences."""
    with torch.inference_mode():
        expected = graph(*example)
    expected = expected if isinstance(expected, tuple) else (expected,)
    found = session.run(None, dict(zip(INPUTS, (tensor.numpy() for tensor in example))))
    return max(float(np.nanmax(np.abs(np.where(np.isinf(want.numpy()), 0, want.numpy() - np.where(np.isinf(got), 0, got))))) for want, got in zip(expected, found))
