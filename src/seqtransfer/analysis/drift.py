"""How far training moved each layer group from the weights transfer started it with.

A run starts from weights that are not random in two ways: a fine-tuned Transformer encoder starts
from its pretrained weights, and a sequential-transfer run (``transfer.source``) from the source
run's transferred weights. For each layer group, bottom to top (``layer_groups``: the encoder's
embeddings and each of its layers; the BiLSTM's word representation and each of its layers):

- the relative change ||W - W0|| / ||W0|| (Frobenius norms over all the group's weights together);
- the squared distance ||W - W0||^2: what L2-SP penalises (alpha/2 times it, per batch).

Only weights with a starting value count: not a new classifier, not the adapters' own matrices,
not the BiLSTM's word and character tables (their new words' rows start random, as in L2-SP),
not an encoder's pooler (no model here reads it) nor a weight its folder lacks (drawn at random).
Under LoRA the encoder's effective weights W0 + (alpha / r) B A (PEFT's merge) are compared with
W0; under Houlsby adapters the encoder's layer norms are the only pretrained weights that train.
Schemes that hold lower layers back (discriminative rates, gradual unfreezing, L2-SP) should show
it here: how much each layer moved explains what fine-tuning did with a layer's knowledge.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import torch

from seqtransfer.analysis.figures import new_figure
from seqtransfer.embeddings.transformer import encoder_path, load_encoder, stored_weights, unread_weight
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.adapters import adapter_weight, pretrained_name
from seqtransfer.models.transformer_encoder import ENCODER_LAYER
from seqtransfer.rundir import ENCODER_HINT, encoder_is_the_runs, find_run_source, load_run
from seqtransfer.transfer.adaptations import EMBEDDING_TABLES, layer_groups
from seqtransfer.transfer.schemes import get_scheme, scheme_prefixes
from seqtransfer.workflows.multitask import transferred_prefixes

MARKERS = "osD^v<>phX*"


def plain_state(model) -> dict[str, torch.Tensor]:
    """The model's weights with its encoder's named as in the pretrained encoder (``encoder.`` before):
    under LoRA its effective weights W0 + (alpha / r) B A (PEFT's merge), under Houlsby adapters its
    own weights without the bottlenecks; every other weight as it is."""
    state = {name: tensor for name, tensor in model.state_dict().items() if not name.startswith("encoder.")}
    encoder = getattr(model, "encoder", None)
    if encoder is None:
        return state
    if hasattr(encoder, "merge_and_unload"):  # a PEFT (LoRA) model
        weights = copy.deepcopy(encoder).merge_and_unload().state_dict()
    else:
        weights = {pretrained_name(name): tensor for name, tensor in encoder.state_dict().items() if not adapter_weight(name)}
    return {**{f"encoder.{name}": tensor for name, tensor in weights.items()}, **state}


def encoder_states(run) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(start, end) of a fine-tuned encoder's weights, named as in the pretrained encoder with ``encoder.`` before."""
    check_same_encoder(run)
    _, pretrained = load_encoder(run.config.model.encoder)
    final = plain_state(run.model)
    held = stored_names(encoder_path(run.config.model.encoder), pretrained.base_model_prefix)
    start = {f"encoder.{name}": tensor for name, tensor in pretrained.state_dict().items() if tensor.is_floating_point() and not unread_weight(name) and (held is None or name in held)}
    return start, {name: final[name] for name in start if name in final}


def check_same_encoder(run) -> None:
    """Drift starts from the encoder folder's weights: one line when they are not those the run was
    fine-tuned from (loading only warns about a fully fine-tuned run, which reads its tokenizer alone there)."""
    if not encoder_is_the_runs(run.config.model):
        raise SeqTransferError(f"the encoder at {run.config.model.encoder} is not the one this run was fine-tuned from: drift would measure from other weights", path=run.directory, hint=ENCODER_HINT)


def stored_names(folder: Path, base_prefix: str) -> set[str] | None:
    """The weight names the encoder folder's safetensors files hold, without the base model's prefix
    (``bert.`` in a masked LM's folder); None without any. A weight the folder lacks (our LM's
    pooler) is drawn at random on every load: it has no starting value. The pooler is left out
    anyway: no seqtransfer model reads it, so it never trains."""
    return {name.removeprefix(f"{base_prefix}.") for name in stored_weights(folder)} or None


def group_name(name: str) -> str:
    """A parameter's or layer group's display name: an encoder's embeddings (with what it shares across
    its layers) or layer N (1-based, as the probes count); a BiLSTM's groups keep their names."""
    match = ENCODER_LAYER.match(name)
    if match:
        return f"layer {int(match.group(3)) + 1}"
    return "embeddings" if name.startswith("encoder.") else name


def source_states(run) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, str]]:
    """(start, end, group of each name, bottom to top) of a sequential-transfer run's transferred weights
    (a multi-task model's: its shared representation, the branches and projections of its shared tasks;
    an encoder's as :func:`plain_state` names them, its layers first)."""
    source_model = load_run(find_run_source(run)).model
    if hasattr(run.model, "hierarchy"):
        prefixes = transferred_prefixes(run.model, source_model)
    else:
        prefixes = scheme_prefixes(run.model, get_scheme(run.config.transfer.scheme))
    source, final = plain_state(source_model), plain_state(run.model)
    names = [
        name
        for name in final
        if name.startswith(prefixes) and name in source and name not in EMBEDDING_TABLES and not unread_weight(name) and final[name].shape == source[name].shape and final[name].is_floating_point()
    ]
    encoder = {name: group_name(name) for name in names if name.startswith("encoder.")}  # the encoder's state order: embeddings, then its layers
    kept = set(names)
    others = {name: group_name(group) for group, members in layer_groups(run.model) for name in members if name in kept and not name.startswith("encoder.")}
    group_of = {**encoder, **others}
    return {name: source[name] for name in group_of}, {name: final[name] for name in group_of}, group_of


def measure_drift(directory: str | Path, label: str | None = None) -> dict:
    """{"run", "label" (default: the setting), "start", "setting", "groups": [{"group", "tensors", "weights", "relative_change", "squared_distance"}], "total": {...}}."""
    run = load_run(directory)
    config = run.config
    if config.transfer.source:
        start, end, group_of = source_states(run)
        origin = f"source run {Path(config.transfer.source).name}"
    elif config.model.encoder and config.model.encoder_mode == "finetune":
        start, end = encoder_states(run)
        group_of = {name: group_name(name) for name in end}  # the pretrained encoder's order: embeddings, then its layers
        origin = f"pretrained encoder {Path(str(config.model.encoder)).name}"
    else:
        raise SeqTransferError(
            "this run's weights started random (or it read frozen encoder features): nothing to compare them with",
            path=directory,
            hint="pass a run that fine-tuned model.encoder, or one trained with transfer.source",
        )
    if not end:
        raise SeqTransferError("the run shares no weight with where it started", path=directory, hint="pass a run whose scheme transfers weights")
    groups: dict[str, dict] = {}
    for name, final in end.items():  # bottom to top
        initial = start[name].to(final.device, torch.float64)
        row = groups.setdefault(group_of[name], {"group": group_of[name], "tensors": 0, "weights": 0, "squared_distance": 0.0, "squared_norm": 0.0})
        row["tensors"] += 1
        row["weights"] += final.numel()
        row["squared_distance"] += float(((final.to(torch.float64) - initial) ** 2).sum())
        row["squared_norm"] += float((initial**2).sum())
    rows = list(groups.values())
    total = {"group": "all", **{key: sum(row[key] for row in rows) for key in ("tensors", "weights", "squared_distance", "squared_norm")}}
    for row in (*rows, total):
        norm = row.pop("squared_norm")
        # weights that all started at zero have no relative change, unless they stayed there
        row["relative_change"] = 100.0 * math.sqrt(row["squared_distance"] / norm) if norm else (0.0 if row["squared_distance"] == 0 else None)
    described = setting(config)
    return {"run": str(directory), "label": label or described, "start": origin, "setting": described, "groups": rows, "total": total}


def setting(config) -> str:
    """What sets a run apart among fine-tuning runs: its adapter, adaptation schemes, schedule and rate."""
    parts = [f"{config.transfer.scheme} from its source" if config.transfer.source else "fine-tuned encoder"]
    if config.model.encoder_adapter:
        parts.append(config.model.encoder_adapter)
    parts.extend(f"l2sp (alpha {config.transfer.l2sp_weight:g})" if name == "l2sp" else name for name in config.transfer.adaptations)
    if config.transfer.auxiliary_lm_weight:
        parts.append(f"auxiliary LM {config.transfer.auxiliary_lm_weight:g}")
    schedule = config.train.schedule or "default schedule"
    parts.append(f"{schedule} {config.train.learning_rate:g}" if config.train.learning_rate else schedule)
    return ", ".join(parts)


def distinct_labels(results: list[dict]) -> list[dict]:
    """The results, each labelled by as much of its run's path as tells it apart where two share a
    label (the same setting): its folder's name, or more of its path (``seed-1/run``, ``round-2/model-1``)."""
    labels = [result["label"] for result in results]
    shared = [result for result in results if labels.count(result["label"]) > 1]
    parts = {result["run"]: tuple(part.replace("|", "/") for part in Path(result["run"]).absolute().parts[1:]) for result in shared}  # no root; '|' would split a table cell
    depth = 1
    while len({parts[result["run"]][-depth:] for result in shared}) < len(shared) and depth < max((len(value) for value in parts.values()), default=1):
        depth += 1
    return [result if labels.count(result["label"]) == 1 else {**result, "label": "/".join(parts[result["run"]][-depth:])} for result in results]


def all_groups(results: list[dict]) -> list[str]:
    """The layer groups of every result, each once, bottom to top: an encoder's embeddings and layers
    (by number, whatever each encoder's depth), then the other groups in the order the runs give them."""
    seen = list(dict.fromkeys(row["group"] for result in results for row in result["groups"]))

    def position(group: str) -> tuple[int, int]:
        if group == "embeddings":
            return 0, 0
        if group.startswith("layer ") and group.removeprefix("layer ").isdigit():
            return 1, int(group.removeprefix("layer "))
        return 2, seen.index(group)

    return sorted(seen, key=position)


def markdown(results: list[dict]) -> str:
    """Relative change (%) per layer group, a column per run; the squared distance of all the weights below."""
    groups = all_groups(results)
    lines = [
        "| layer group | " + " | ".join(result["label"] for result in results) + " |",
        "|---|" + "---:|" * len(results),
        "| *run* | " + " | ".join(Path(result["run"]).name for result in results) + " |",
        "| *from* | " + " | ".join(result["start"] for result in results) + " |",
    ]
    for group in groups:
        cells = [next((percent(row["relative_change"]) for row in result["groups"] if row["group"] == group), "–") for result in results]
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
    lines.append("| **all** | " + " | ".join(f"**{percent(result['total']['relative_change'])}**" for result in results) + " |")
    lines.append("| squared distance | " + " | ".join(f"{result['total']['squared_distance']:.4g}" for result in results) + " |")
    return "\n".join(lines) + "\n"


def percent(value: float | None) -> str:
    return "n/a (started at zero)" if value is None else f"{value:.3f} %"


def drift_figure(results: list[dict]):
    """Relative change per layer group, bottom to top, a line per run (a symmetric log scale: held-back
    layers move by hundredths of a percent where others move by tens)."""
    groups = all_groups(results)
    figure = new_figure(8.0, 4.0)
    axis = figure.subplots()
    colours = [figure_colour(index) for index in range(len(results))]
    for index, result in enumerate(results):
        changes = {row["group"]: row["relative_change"] for row in result["groups"] if row["relative_change"] is not None}
        positions = [position for position, group in enumerate(groups) if group in changes]
        axis.plot(positions, [changes[groups[position]] for position in positions], MARKERS[index % len(MARKERS)] + ("-" if index < 10 else "--"), color=colours[index], label=result["label"])
    axis.set_yscale("symlog", linthresh=0.01)
    axis.set_xticks(range(len(groups)), groups, rotation=30, fontsize=8)
    axis.set_ylabel("||W - W0|| / ||W0|| (%)")
    axis.set_title("how far training moved each layer group", fontsize=9)
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return figure


def figure_colour(index: int) -> tuple:
    """(r, g, b, a): matplotlib's ten default colours, then the ten of tab20's lighter ones."""
    from matplotlib import colormaps

    return colormaps["tab10"](index % 10) if index < 10 else colormaps["tab20"](2 * (index % 10) + 1)
