"""Hierarchical multi-task model (MuTSPad paper, section 3.3, Figure 1), built from ``model.tasks``.

    x         = WRE_shared(w)                                    words + character BiLSTM   (B, T, D)
    h_t       = FE_t([x; T_s(h_s) for s in inputs(t)])            one BiLSTM branch per task  (B, T, H_t)
    y_t       = C_t(h_t)                                          the task's head

``inputs(t)`` are the lower tasks task t reads (the paper: CK reads POS; NER and DP read POS and
CK). ``T_s`` is one learned linear projection per lower task (``model.projection`` units), shared
by every task that reads it. A tagging branch is the tagger's BiLSTM + linear + softmax/CRF; a
dependency branch is the biaffine parser's ROOT + stacked BiLSTM + biaffine scorers (its token
states, without ROOT, are what higher tasks would read).

Targets of task t are ``batch.targets["t.labels"]`` (and ``"t.heads"``). A batch trains the tasks
whose targets it holds: only their branches, the branches below them and the shared WRE take
part in the loss, so only they receive gradients ("one task per batch", section 4.2.1). The loss
is the weighted mean over those tasks, sum_t alpha_t * L_t / N (equation 6); ``loss_weights``
is set each epoch by the training loop's hook (``workflows/multitask.py``).
"""

from __future__ import annotations

import torch
from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.biaffine import BiaffineClassifier, RootedBiLSTM
from seqtransfer.models.bilstm import BiLSTM
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.heads import check_classifier
from seqtransfer.models.outputs import OUTPUTS
from seqtransfer.models.representation import word_representation_of

TARGET_SEPARATOR = "."


def target_name(task: str, name: str) -> str:
    """The batch target ``name`` (labels, heads) of ``task``: ``pos.labels``."""
    return f"{task}{TARGET_SEPARATOR}{name}"


class TaggingBranch(nn.Module):
    """BiLSTM -> dropout -> linear -> softmax or CRF (the tagger's FE, classifier and output)."""

    def __init__(self, config: ModelConfig, input_size: int, label_count: int) -> None:
        super().__init__()
        check_classifier(config)
        self.feature_extractor = BiLSTM(input_size, config.hidden)
        self.dropout = Dropout(config.dropout)
        self.classifier = nn.Linear(config.hidden, label_count)
        self.output = OUTPUTS[config.classifier](label_count)
        self.output_size = config.hidden

    def states(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T, D) -> (B, T, H)."""
        return self.feature_extractor(inputs, lengths)

    def token_states(self, states: torch.Tensor) -> torch.Tensor:
        return states

    def loss(self, states: torch.Tensor, targets: dict[str, torch.Tensor], batch: Batch) -> torch.Tensor:
        return self.output.loss(self.classifier(self.dropout(states)), targets["labels"], batch.mask)

    def decode(self, states: torch.Tensor, batch: Batch) -> torch.Tensor:
        """(B, T) label indices."""
        return self.output.decode(self.classifier(self.dropout(states)), batch.mask)


class DependencyBranch(nn.Module):
    """ROOT + stacked BiLSTM -> biaffine arcs and relations (the biaffine parser without its WRE)."""

    def __init__(self, config: ModelConfig, input_size: int, label_count: int) -> None:
        super().__init__()
        self.feature_extractor = RootedBiLSTM(input_size, config.parser_hidden, config.parser_layers, config.dropout)
        self.dropout = Dropout(config.dropout)
        self.classifier = BiaffineClassifier(config.parser_hidden, config.arc_hidden, config.relation_hidden, label_count, config.dropout)
        self.single_root = config.single_root is not False
        self.output_size = config.parser_hidden

    def states(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T, D) -> (B, T+1, H), ROOT first."""
        return self.feature_extractor(inputs, lengths)

    def token_states(self, states: torch.Tensor) -> torch.Tensor:
        return states[:, 1:]

    def loss(self, states: torch.Tensor, targets: dict[str, torch.Tensor], batch: Batch) -> torch.Tensor:
        return self.classifier.loss(self.dropout(states), targets["heads"], targets["labels"], batch.mask, batch.lengths)

    def decode(self, states: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        """{"heads": (B, T), "labels": (B, T)}."""
        return self.classifier.decode(self.dropout(states), batch.mask, batch.lengths, self.single_root)


BRANCHES: dict[str, type[nn.Module]] = {"tagging": TaggingBranch, "dependency": DependencyBranch}


def task_order(hierarchy: dict[str, list[str]]) -> list[str]:
    """The tasks low -> high: each after every task it reads (listed order among equals).

    An input that is not a task, a task reading itself, or a cycle is a one-line error.
    """
    for task, inputs in hierarchy.items():
        if not isinstance(inputs, list) or not all(isinstance(source, str) for source in inputs):
            raise SeqTransferError(f"model.tasks.{task} must be a list of the tasks it reads, got {inputs!r}", hint=f"e.g. model.tasks.{task}=[] or [pos]")
        for source in inputs:
            if source not in hierarchy:
                raise SeqTransferError(f"task '{task}' reads unknown task '{source}' in model.tasks", hint=f"the tasks are: {', '.join(hierarchy)}")
    order: list[str] = []
    remaining = list(hierarchy)
    while remaining:
        ready = [task for task in remaining if all(source in order for source in hierarchy[task])]
        if not ready:
            raise SeqTransferError(f"model.tasks has a cycle among {', '.join(remaining)}", hint="a task may only read tasks below it (e.g. {pos: [], chunk: [pos]})")
        order.append(ready[0])
        remaining.remove(ready[0])
    return order


def task_levels(hierarchy: dict[str, list[str]]) -> dict[str, int]:
    """Level of each task: 0 reads no task, else one more than the highest task it reads."""
    levels: dict[str, int] = {}
    for task in task_order(hierarchy):
        levels[task] = 1 + max((levels[source] for source in hierarchy[task]), default=-1)
    return levels


class HierarchicalMultiTask(nn.Module):
    """Shared WRE, then one branch per task fed with the WRE output and projections of lower branches."""

    task_kind = "multitask"

    def __init__(self, config: ModelConfig, word_count: int, character_count: int, label_counts: dict[str, int]) -> None:
        super().__init__()
        if not config.tasks or not config.task_kinds:
            raise SeqTransferError("a multi-task model needs model.tasks and model.task_kinds", hint="e.g. model.tasks={pos: [], chunk: [pos]}")
        self.hierarchy = {task: list(inputs) for task, inputs in config.tasks.items()}
        self.order = task_order(self.hierarchy)
        self.kinds = dict(config.task_kinds)
        self.word_representation = word_representation_of(config, word_count, character_count)
        self.branches = nn.ModuleDict()
        for task in self.order:
            if self.kinds[task] not in BRANCHES:
                raise SeqTransferError(f"task {task} is a {self.kinds[task]} task, which a multi-task branch cannot serve yet", hint=f"branches serve: {', '.join(BRANCHES)}")
            input_size = self.word_representation.output_size + config.projection * len(self.hierarchy[task])
            self.branches[task] = BRANCHES[self.kinds[task]](config, input_size, label_counts[task])
        read = [task for task in self.order if any(task in inputs for inputs in self.hierarchy.values())]
        self.projections = nn.ModuleDict({task: nn.Linear(self.branches[task].output_size, config.projection) for task in read})
        self.projection_dropout = Dropout(config.dropout)
        self.loss_weights = {task: 1.0 for task in self.order}

    @classmethod
    def from_vocabularies(cls, config: ModelConfig, vocabularies) -> HierarchicalMultiTask:
        if not vocabularies.task_labels:
            raise SeqTransferError("a multi-task model needs one label vocabulary per task", hint="train it with model.tasks set")
        return cls(config, len(vocabularies.words), len(vocabularies.characters), {task: len(labels) for task, labels in vocabularies.task_labels.items()})

    def needed(self, tasks: list[str]) -> list[str]:
        """``tasks`` and every task below them, low -> high."""
        wanted = set(tasks)
        for task in reversed(self.order):
            if task in wanted:
                wanted.update(self.hierarchy[task])
        return [task for task in self.order if task in wanted]

    def branch_states(self, batch: Batch, tasks: list[str]) -> dict[str, torch.Tensor]:
        """Branch states of ``tasks`` (and of what they read): task -> (B, T[+1], H_t)."""
        shared = self.word_representation(batch)  # (B, T, D), dropout applied
        states: dict[str, torch.Tensor] = {}
        projected: dict[str, torch.Tensor] = {}
        for task in self.needed(tasks):
            inputs = [shared, *(projected[source] for source in self.hierarchy[task])]
            branch = self.branches[task]
            states[task] = branch.states(torch.cat(inputs, dim=-1) if len(inputs) > 1 else shared, batch.lengths)
            if task in self.projections:
                projected[task] = self.projections[task](self.projection_dropout(branch.token_states(states[task])))  # (B, T, P)
        return states

    def weights_used_by(self, batch: Batch) -> tuple[str, ...]:
        """Name prefixes of the weights a batch's loss reads: the shared representation, the branches
        of its tasks and of those below them, and the projections they read (L2-SP and EWC pull only these)."""
        tasks = self.needed([task for task in self.order if task in self.targets_of(batch)])
        read = {source for task in tasks for source in self.hierarchy[task]}
        return ("word_representation.", *(f"branches.{task}." for task in tasks), *(f"projections.{task}." for task in read))

    def grouped_layers(self, names: list[str]) -> list[tuple[str, list[str]]]:
        """Layer groups by level: the shared representation, then each level of the hierarchy (its
        branches, their projections and auxiliary LM layers), the top level last (its "head")."""
        levels = task_levels(self.hierarchy)
        groups = [("word_representation", [name for name in names if name.startswith("word_representation.")])]
        for level in sorted(set(levels.values())):
            tasks = sorted(task for task in self.order if levels[task] == level)
            prefixes = tuple(f"{part}.{task}." for task in tasks for part in ("branches", "projections", "language_model"))
            groups.append((f"level {level} ({', '.join(tasks)})", [name for name in names if name.startswith(prefixes)]))
        taken = {name for _, members in groups for name in members}
        groups[-1][1].extend(name for name in names if name not in taken)
        return [group for group in groups if group[1]]

    def targets_of(self, batch: Batch) -> dict[str, dict[str, torch.Tensor]]:
        """task -> its targets in the batch (only tasks the batch is labelled for)."""
        grouped: dict[str, dict[str, torch.Tensor]] = {}
        for name, target in batch.targets.items():
            task, _, field = name.partition(TARGET_SEPARATOR)
            grouped.setdefault(task, {})[field] = target
        return grouped

    def losses(self, batch: Batch) -> dict[str, torch.Tensor]:
        """task -> summed loss, for the tasks the batch holds targets of."""
        targets = self.targets_of(batch)
        tasks = [task for task in self.order if task in targets]
        states = self.branch_states(batch, tasks)
        return {task: self.branches[task].loss(states[task], targets[task], batch) for task in tasks}

    def loss(self, batch: Batch) -> torch.Tensor:
        """sum_t alpha_t * L_t / N over the N tasks of the batch (equation 6)."""
        losses = self.losses(batch)
        return sum(self.loss_weights[task] * loss for task, loss in losses.items()) / len(losses)

    def decode(self, batch: Batch, tasks: list[str] | None = None) -> dict[str, torch.Tensor | dict[str, torch.Tensor]]:
        """task -> its decoding (as the single-task model of its kind decodes), for ``tasks`` (default all)."""
        tasks = tasks or self.order
        states = self.branch_states(batch, tasks)
        return {task: self.branches[task].decode(states[task], batch) for task in tasks}

    def features(self, batch: Batch, task: str | None = None) -> torch.Tensor:
        """(B, T, H) token states of ``task``'s branch (default the lowest task: h_pos in the paper)."""
        task = task or self.order[0]
        return self.branches[task].token_states(self.branch_states(batch, [task])[task])


class TaskView(nn.Module):
    """One task of a multi-task model seen as a single-task model (``decode``, ``task_kind``):
    what ``predict_labels`` and the scorers read."""

    def __init__(self, model: HierarchicalMultiTask, task: str) -> None:
        super().__init__()
        self.model = model
        self.task = task
        self.task_kind = model.kinds[task]
        self.word_representation = model.word_representation

    def decode(self, batch: Batch):
        return self.model.decode(batch, [self.task])[self.task]
