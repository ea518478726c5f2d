"""Predict with an exported ONNX folder (``seqtransfer export RUN --format onnx``) through onnxruntime.

seqtransfer's own batching feeds the graph (workflows/onnx_export.py names its inputs), and what
chooses among its scores is seqtransfer's too: the arg-max, the CRF's Viterbi (``CRF.decode`` with
the exported transitions) or the parser's maximum spanning trees. The predictions are those of
the run (tests/test_onnx_export.py); the folder needs no weights file and no model class.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from seqtransfer.data.batching import Batch, EncodedSentences, encode_sentences, evaluation_batches
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.crf import CRF
from seqtransfer.models.spanning_tree import maximum_spanning_tree
from seqtransfer.rundir import read_vocabularies
from seqtransfer.tasks import get_task_kind
from seqtransfer.workflows.onnx_export import DECODING, GRAPH, NOTE, feeds


def crf_of(settings: dict) -> CRF:
    """The exported CRF's parameters in seqtransfer's CRF (its Viterbi decodes)."""
    crf = CRF(len(settings["start"]))
    with torch.no_grad():
        for name in ("transitions", "start", "end"):
            getattr(crf, name).copy_(torch.tensor(settings[name]))
    return crf


class OnnxModel:
    """An exported folder, predicting with onnxruntime: ``OnnxModel(folder).predict([["I", "love", "NYC"]])``."""

    def __init__(self, folder: str | Path, threads: int = 2) -> None:
        import onnxruntime

        folder = Path(folder)
        if not (folder / GRAPH).is_file():
            raise SeqTransferError("no model.onnx in this folder", path=folder, hint="make one with seqtransfer export RUN --format onnx --output FOLDER")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = onnxruntime.InferenceSession(str(folder / GRAPH), options, providers=["CPUExecutionProvider"])
        self.vocabularies = read_vocabularies(folder)
        self.decoding = json.loads((folder / DECODING).read_text(encoding="utf-8"))
        self.kind = get_task_kind(json.loads((folder / NOTE).read_text(encoding="utf-8"))["task_kind"])
        self.crf = crf_of(self.decoding) if self.decoding["kind"] == "crf" else None

    def predict(self, sentences: Sequence[Sequence[str]], batch_size: int = 256) -> list:
        """Per sentence, one label per token (taggers) or one (head, relation) pair per token (parsers), as ``seqtransfer.load(run).predict`` gives them."""
        return self.predict_encoded(encode_sentences([list(sentence) for sentence in sentences], self.vocabularies), batch_size)

    def predict_encoded(self, encoded: EncodedSentences, batch_size: int = 256) -> list:
        """``predict`` of sentences already encoded with this folder's vocabularies."""
        predictions: list = [None] * len(encoded.lengths)
        for batch in evaluation_batches(encoded, batch_size):
            decoded = self.kind.read_decoded(self.decode(batch), encoded.lengths[batch.indices], self.vocabularies.labels)
            for index, prediction in zip(batch.indices, decoded):
                predictions[index] = self.kind.for_user(prediction)
        return predictions

    def decode(self, batch: Batch) -> torch.Tensor | dict[str, torch.Tensor]:
        """The batch's labels (B, T), or a parser's {"heads", "labels"}."""
        outputs = self.session.run(None, feeds(batch))
        mask = torch.from_numpy(np.arange(batch.words.shape[1]) < batch.lengths.numpy()[:, None])
        if self.decoding["kind"] == "tree":
            return self.trees(*outputs, batch.lengths.numpy(), mask)
        emissions = torch.from_numpy(outputs[0])
        if self.crf is not None:
            with torch.inference_mode():
                return self.crf.decode(emissions, mask)
        return emissions.argmax(-1) * mask.long()

    def trees(self, arc_scores: np.ndarray, left: np.ndarray, right: np.ndarray, lengths: np.ndarray, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Maximum spanning trees over the arcs' log-probabilities, then each token's best relation at its head."""
        log_probabilities = torch.from_numpy(arc_scores).log_softmax(-1).numpy()
        heads = np.zeros(mask.shape, dtype=np.int64)
        for row, length in enumerate(lengths.tolist()):
            heads[row, :length] = maximum_spanning_tree(log_probabilities[row, :length, : length + 1], self.decoding["single_root"])
        chosen = np.take_along_axis(right, heads[:, :, None], axis=1)  # (B, T, R+1): each token's head's factor
        labels = np.einsum("btoj,btj->bto", left, chosen).argmax(-1)
        return {"heads": torch.from_numpy(heads), "labels": torch.from_numpy(labels) * mask.long()}
