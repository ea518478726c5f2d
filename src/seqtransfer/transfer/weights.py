"""Copying a source model's weights into a target model.

The target's word and character vocabularies extend the source's (same indices first, new
entries appended), so an embedding row copies over as long as its index exists in the source;
rows of new entries keep their fresh initialisation (GloVe or random).
"""

from __future__ import annotations

import torch
from torch import nn

from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.errors import SeqTransferError


def transfer_weights(target: nn.Module, source_state: dict[str, torch.Tensor], prefixes: tuple[str, ...]) -> list[str]:
    """Copy every source tensor whose name starts with one of ``prefixes``; returns the names.

    Shapes must match, except that a target tensor may have more rows (extended vocabulary).
    """
    target_state = target.state_dict()
    copied = []
    with torch.no_grad():
        for name, tensor in source_state.items():
            if not name.startswith(prefixes):
                continue
            if name not in target_state:
                raise SeqTransferError(f"source weight '{name}' has no counterpart in the target model", hint="use a source run of the same architecture")
            destination = target_state[name]
            if destination.shape[1:] != tensor.shape[1:] or destination.shape[0] < tensor.shape[0]:
                raise SeqTransferError(
                    f"source weight '{name}' has shape {tuple(tensor.shape)}, target {tuple(destination.shape)}",
                    hint="the source run must use the same model sizes (model.hidden, model.char_hidden, ...)",
                )
            destination[: tensor.shape[0]].copy_(tensor)
            copied.append(name)
    return copied


def copy_shared_label_rows(target: nn.Module, source_state: dict[str, torch.Tensor], target_labels: Vocabulary, source_labels: Vocabulary) -> list[str]:
    """Copy classifier rows (and CRF scores) of labels present in both tag sets."""
    pairs = [(target_labels.index[label], source_labels.index[label]) for label in target_labels.items if label in source_labels.index]
    if not pairs:
        return []
    target_rows = torch.tensor([pair[0] for pair in pairs])
    source_rows = torch.tensor([pair[1] for pair in pairs])
    state = target.state_dict()
    with torch.no_grad():
        for name in ("classifier.weight", "classifier.bias", "output.crf.start", "output.crf.end"):
            if name in source_state and name in state:
                state[name][target_rows] = source_state[name][source_rows]
        if "output.crf.transitions" in source_state and "output.crf.transitions" in state:
            transitions = source_state["output.crf.transitions"]
            state["output.crf.transitions"][target_rows.unsqueeze(1), target_rows] = transitions[source_rows.unsqueeze(1), source_rows]
    return [target_labels.items[pair[0]] for pair in pairs]
