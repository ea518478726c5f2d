"""`seqtransfer analyze transfer|neurons|curve|report`: explain what transfer did (PretRand paper §4, §7).

analyze transfer RUN_A RUN_B [--split dev] [--output DIR]    PT / NT / G, falsified tokens
analyze neurons RUN [--top-k 10] [--units 3,7] [--output DIR]   unit charge, top-k words
analyze curve RUN... [--split dev] --output DIR             score vs training-set size
analyze units RUN [--task POS] [--split dev] [--output DIR]  multi-task: ablate each unit of h_POS (MuTSPad §5.5)
analyze absorption RUN... [--split dev] [--output DIR]      PretRand: do pre-trained units absorb the random ones (Figure 5)
analyze drift RUN... [--label NAME ...] [--output DIR]      how far training moved each layer group from its pretrained / source weights
analyze layers RUN... [--label NAME ...] [--output DIR]     which encoder layers each run's scalar mix uses (its learned weights)
analyze similarity CORPUS... [--target T] [--gains CSV] [--output DIR]  KL / JS / OOV / LM cross-entropy between corpora
analyze tokens RUN... [--split test] [--output DIR]          accuracy and share of errors by kind of token (mentions, hashtags, ...)
analyze tokens PSEUDO.conll... --gold DATASET[:TASK]         the same for pseudo-labelled data, against the gold labels of its sentences
analyze report --transfer A B [--transfer C D ...] [--neurons RUN] [--curve RUN ...] [--drift RUN ...] --output report.html
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from seqtransfer.commands.analyze_arguments import arguments
from seqtransfer.commands.analyze_similarity import run_similarity, similarity_analysis
from seqtransfer.commands.base import Command
from seqtransfer.errors import SeqTransferError


def run_absorption(arguments: argparse.Namespace) -> list[dict]:
    from seqtransfer.analysis import figures
    from seqtransfer.analysis.absorption import absorption_figure, describe_run, markdown, public
    from seqtransfer.files import write_json, write_text

    results = [describe_run(run, arguments.split, arguments.data_dir) for run in arguments.runs]
    print(markdown(results), end="")
    if arguments.output:
        output = Path(arguments.output)
        write_json(output / "absorption.json", [public(result) for result in results])
        write_text(output / "absorption.md", markdown(results))
        figures.save_figure(absorption_figure(results), output / "absorption")
        print(f"written to {output}")
    return [public(result) for result in results]


def check_distinct_runs(runs: list[str], labels: list[str]) -> None:
    """Each run once, each label once and not empty, and no label that breaks a table (one line each)."""
    resolved = [Path(run).resolve() for run in runs]
    repeated = next((run for run, path in zip(runs, resolved) if resolved.count(path) > 1), None)
    if repeated:
        raise SeqTransferError("the same run is given twice", path=repeated, hint="give each RUN once")
    repeated_label = next((label for label in labels if labels.count(label) > 1), None)
    if repeated_label is not None:
        raise SeqTransferError(f"--label {repeated_label!r} names two runs", hint="give each RUN its own --label")
    bad = next((label for label in labels if not label.strip() or "|" in label), None)
    if bad is not None:
        raise SeqTransferError(f"--label {bad!r} is empty or holds '|' (a table's column separator)", hint="give each RUN a plain name")


def check_output_folder(output: str) -> None:
    """An analysis's --output is a folder of its own: not a file, nor a run directory (one line each, before anything is computed)."""
    from seqtransfer.rundir import CONFIG

    path = Path(output)
    if path.is_file():
        raise SeqTransferError("--output is a file", path=path, hint="pass a folder for the analysis's files")
    if (path / CONFIG).is_file():
        raise SeqTransferError("--output is a run directory", path=path, hint="pass a folder of its own for the analysis's files")


def per_run_analysis(arguments: argparse.Namespace, name: str, measure, markdown, figure) -> list[dict]:
    """An analysis with one result per RUN (and an optional --label each): checked arguments, the
    Markdown table printed, and with --output NAME.json, NAME.md and the figure written."""
    from seqtransfer.analysis import figures
    from seqtransfer.files import write_json, write_text

    if arguments.label and len(arguments.label) != len(arguments.runs):
        raise SeqTransferError(f"{len(arguments.label)} --label for {len(arguments.runs)} runs", hint="give one --label per RUN, in order, or none")
    check_distinct_runs(arguments.runs, arguments.label)
    if arguments.output:
        check_output_folder(arguments.output)
    results = measure([(run, label) for run, label in zip(arguments.runs, arguments.label or [None] * len(arguments.runs))])
    table = markdown(results)
    print(table, end="")
    if arguments.output:
        output = Path(arguments.output)
        write_json(output / f"{name}.json", results)
        write_text(output / f"{name}.md", table)
        figures.save_figure(figure(results), output / name)
        print(f"written to {output}")
    return results


def run_drift(arguments: argparse.Namespace) -> list[dict]:
    from seqtransfer.analysis.drift import distinct_labels, drift_figure, markdown, measure_drift

    return per_run_analysis(arguments, "drift", lambda pairs: distinct_labels([measure_drift(run, label) for run, label in pairs]), markdown, drift_figure)


def run_layers(arguments: argparse.Namespace) -> list[dict]:
    from seqtransfer.analysis.drift import distinct_labels
    from seqtransfer.analysis.layer_mix import markdown, mix_figure, mix_weights, recorded_mixes

    if not arguments.runs and not arguments.records:
        raise SeqTransferError("no runs to read", hint="give RUN folders, or an experiment's records with --records FILE")
    if arguments.only and not arguments.records:
        raise SeqTransferError("--only picks methods of --records", hint="add --records FILE, or leave --only out")
    recorded = [row for path in arguments.records for row in recorded_mixes(Path(path))]
    if arguments.only:
        from seqtransfer.commands.experiment import named

        methods = {row["method"] for row in recorded}
        wanted = named(arguments.only, methods)
        missing = next((name for name in wanted if name not in methods), None)
        if missing is not None:
            raise SeqTransferError(f"no run of {missing!r} kept a layer mix in the records", hint=f"methods with one: {', '.join(sorted(methods)) or 'none'}")
        recorded = [row for row in recorded if row["method"] in wanted]
    return per_run_analysis(arguments, "layers", lambda pairs: distinct_labels([*(mix_weights(run, label) for run, label in pairs), *recorded]), markdown, mix_figure)


def run_tokens(arguments: argparse.Namespace) -> dict:
    from seqtransfer.analysis.token_kinds import checked_pseudo_labels, errors_by_kind, kinds_table, run_predictions
    from seqtransfer.files import write_json, write_text

    names = [Path(run).resolve().name if Path(run).is_dir() else str(run) for run in arguments.runs]
    if len(set(names)) < len(names):
        names = [str(run) for run in arguments.runs]  # runs of one name in different folders: their paths
    if len(set(names)) < len(names):
        raise SeqTransferError("the same run is given twice", hint="pass each run once")
    if arguments.gold:
        from seqtransfer.workflows.selflabel import labelled_split

        gold_tokens, gold_labels = labelled_split(arguments.gold, arguments.data_dir, arguments.gold_split)
        predictions = [checked_pseudo_labels(path, gold_tokens, gold_labels) for path in arguments.runs]
    else:
        predictions = [run_predictions(run, arguments.split) for run in arguments.runs]
    results = {name: errors_by_kind(predicted) for name, predicted in zip(names, predictions)}
    text = "\n".join(kinds_table(results)) + "\n"
    print(text, end="")
    if arguments.output:
        output = Path(arguments.output)
        write_json(output / "tokens.json", results)
        write_text(output / "tokens.md", text)
        print(f"written to {output}")
    return results


def parse_units(text: str | None, analysis) -> list[int]:
    if not text:
        return analysis.selected_units()
    hidden = analysis.correlation.shape[0]
    try:
        units = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SeqTransferError(f"--units must be comma-separated unit numbers, got '{text}'") from None
    if any(not 0 <= unit < hidden for unit in units):
        raise SeqTransferError(f"--units must lie in 0..{hidden - 1}", hint="the feature extractor has that many units")
    return units


def print_comparison(comparison) -> None:
    counts = comparison.overall
    print(f"{comparison.title} on {comparison.split}: {counts.tokens} tokens")
    print(f"  PT {counts.positive_transfer:.2f}%  NT {counts.negative_transfer:.2f}%  G {counts.gain:.2f}%  ({counts.corrected} corrected, {counts.falsified} falsified)")
    mistakes = ", ".join(f"{name} {len(tokens)}" for name, tokens in comparison.falsified_by_type().items())
    print(f"  falsified by mistake type: {mistakes}")


def write_falsified(path: Path, comparison) -> None:
    from seqtransfer.files import write_text

    lines = ["sentence\tposition\ttoken\tgold\treference\ttransferred\tmistake\tleft\tright"]
    for t in comparison.falsified:
        lines.append("\t".join(map(str, (t.sentence + 1, t.position + 1, t.token, t.gold, t.reference_label, t.transferred_label, t.mistake, t.left, t.right))))
    write_text(path, "\n".join(lines) + "\n")


def run_transfer(arguments: argparse.Namespace):
    from seqtransfer.analysis import figures
    from seqtransfer.analysis.negative_transfer import compare_runs
    from seqtransfer.files import write_json

    comparison = compare_runs(arguments.reference, arguments.transferred, arguments.split)
    print_comparison(comparison)
    if arguments.output:
        output = Path(arguments.output)
        write_json(output / "transfer.json", comparison.as_dict())
        write_falsified(output / "falsified.tsv", comparison)
        figures.save_figure(figures.transfer_bars([comparison]), output / "pt_nt")
        figures.save_figure(figures.class_improvement(comparison), output / "class_improvement")
        print(f"written to {output}")
    return comparison


def neuron_analysis(run: str, top_k: int, without_source: bool, device: str = "cpu"):
    from seqtransfer.analysis.neurons import analyse_neurons

    if top_k < 1:
        raise SeqTransferError("--top-k must be at least 1")
    return analyse_neurons(run, top_k, with_source=not without_source, device=device)


def neurons_json(analysis) -> dict:
    columns = list(analysis.top_words)
    units = []
    for unit, charge in enumerate(analysis.charges):
        entry = {"unit": unit, "charge": None if math.isnan(charge) else round(float(charge), 4)}  # None: constant before or after
        for sign in ("positive", "negative"):
            entry[sign] = {name: getattr(analysis.top_words[name], sign)[unit] for name in columns}
        units.append(entry)
    return {"run": analysis.run, "summary": analysis.summary(), "columns": columns, "units": units}


def run_neurons(arguments: argparse.Namespace):
    from seqtransfer.analysis import figures
    from seqtransfer.analysis.neurons import save_correlation
    from seqtransfer.files import write_json

    analysis = neuron_analysis(arguments.run, arguments.top_k, arguments.no_source, arguments.device)
    units = parse_units(arguments.units, analysis)
    summary = analysis.summary()
    print(
        f"{summary['units']} units over {summary['tokens']} dev tokens ({summary['before']} -> {summary['after']}): "
        f"mean charge {summary['mean_charge']:.3f}, median {summary['median_charge']:.3f}, mean |off-diagonal| {summary['mean_abs_off_diagonal']:.3f}"
        + (f"; {summary['constant_units']} units constant before or after (no charge)" if summary["constant_units"] else "")
    )
    if arguments.output:
        output = Path(arguments.output)
        write_json(output / "neurons.json", neurons_json(analysis))
        save_correlation(analysis, output / "correlation.safetensors")
        figures.save_figure(figures.correlation_heatmap(analysis.correlation, Path(analysis.run).name), output / "correlation")
        for unit in units:
            figures.save_figure(figures.top_words_table(analysis, unit), output / f"unit-{unit:03d}")
        print(f"written to {output}")
    return analysis


def run_curve(arguments: argparse.Namespace):
    from dataclasses import asdict

    from seqtransfer.analysis import figures
    from seqtransfer.analysis.curves import curve_points
    from seqtransfer.files import write_json

    points = curve_points(arguments.runs, arguments.split)
    if arguments.methods:
        found = sorted({point.method for point in points})
        points = [point for point in points if point.method in arguments.methods]
        if missing := [method for method in arguments.methods if method not in found]:
            raise SeqTransferError(f"no runs of method {', '.join(repr(method) for method in missing)} among the runs given", hint=f"methods: {', '.join(found)}")
    output = Path(arguments.output)
    write_json(output / "curve.json", [asdict(point) for point in points])
    figures.save_figure(figures.learning_curves(points), output / "curve")
    if arguments.reference:
        from seqtransfer.analysis.curves import transfer_by_size, transfer_markdown
        from seqtransfer.files import write_text

        rows = transfer_by_size(points, arguments.reference, arguments.split)
        if not rows:
            raise SeqTransferError(
                f"no run pairs with reference method '{arguments.reference}' (same dataset, size and seed)", hint=f"methods: {', '.join(sorted({point.method for point in points}))}"
            )
        write_json(output / "transfer_by_size.json", rows)
        write_text(output / "transfer_by_size.md", transfer_markdown(rows))
        figures.save_figure(figures.transfer_by_size_figure(rows), output / "transfer_by_size")
        print(transfer_markdown(rows), end="")
    print(f"{len(points)} points written to {output}")
    return points


def run_report(arguments: argparse.Namespace):
    from seqtransfer.analysis.curves import curve_points
    from seqtransfer.analysis.html import ReportContent, render_report
    from seqtransfer.analysis.negative_transfer import compare_runs
    from seqtransfer.files import write_text

    if not (arguments.transfer or arguments.neurons or arguments.curve or arguments.ablation or arguments.probes or arguments.drift or arguments.layers or arguments.similarity):
        raise SeqTransferError(
            "nothing to report", hint="pass --transfer RUN_A RUN_B, --neurons RUN, --curve RUN ..., --ablation RUN, --probes RUN ..., --drift RUN ..., --layers RUN ... and/or --similarity CORPUS ..."
        )
    if Path(arguments.output).is_dir():
        raise SeqTransferError("--output is a folder; the report is one HTML file", path=arguments.output, hint="pass --output FILE.html")
    if arguments.drift:
        check_distinct_runs(arguments.drift, [])
    content = ReportContent(title=arguments.title)
    content.comparisons = [compare_runs(reference, transferred, arguments.split) for reference, transferred in arguments.transfer]
    if arguments.neurons:
        content.neurons = neuron_analysis(arguments.neurons, arguments.top_k, arguments.no_source, arguments.device)
        content.units = parse_units(arguments.units, content.neurons)
    content.curve_points = curve_points(arguments.curve, arguments.split) if arguments.curve else []
    if arguments.ablation:
        from seqtransfer.analysis.units import ablate_units

        content.unit_ablation = ablate_units(arguments.ablation, max_sentences=arguments.ablation_max_sentences)
    if arguments.probes:
        from seqtransfer.analysis.probes import probes_of

        content.probes = [probes_of(source) for source in arguments.probes]
    if arguments.drift:
        from seqtransfer.analysis.drift import distinct_labels, measure_drift

        content.drift = distinct_labels([measure_drift(run) for run in arguments.drift])
    if arguments.layers:
        from seqtransfer.analysis.drift import distinct_labels
        from seqtransfer.analysis.layer_mix import mix_weights, recorded_mixes

        check_distinct_runs(arguments.layers, [])
        content.layer_mix = distinct_labels([row for run in arguments.layers for row in (recorded_mixes(Path(run)) if Path(run).is_file() else [mix_weights(run)])])
    if arguments.similarity:
        content.similarity = similarity_analysis(arguments, arguments.similarity)
    write_text(arguments.output, render_report(content))
    print(f"report written to {arguments.output}")
    return content


def run_units(arguments: argparse.Namespace) -> dict:
    from seqtransfer.analysis.units import ablate_units, draw_drops, markdown
    from seqtransfer.files import write_json, write_text

    try:
        units = [int(unit) for unit in arguments.units.split(",")] if arguments.units else None
    except ValueError:
        raise SeqTransferError(f"--units {arguments.units!r} is not a list of unit numbers", hint="e.g. --units 0,5,17") from None
    if arguments.max_sentences is not None and arguments.max_sentences < 1:
        raise SeqTransferError("--max-sentences must be at least 1", hint="leave it out to score whole splits")
    result = ablate_units(arguments.run, arguments.task, arguments.split, units, arguments.max_sentences, arguments.top_k, arguments.data_dir, min_support=arguments.min_support)
    print(markdown(result), end="")
    if arguments.output:
        output = Path(arguments.output)
        output.mkdir(parents=True, exist_ok=True)
        write_json(output / "units.json", result)
        write_text(output / "units.md", markdown(result))
        draw_drops(result, output / "units.png")
    return result


def run_probes(arguments: argparse.Namespace) -> dict:
    from seqtransfer.analysis.probes import draw_probes, probe_layers
    from seqtransfer.files import write_json

    result = probe_layers(arguments.run, arguments.split, arguments.max_train_sentences, arguments.data_dir, arguments.pair_vector)
    print(f"probes trained on {result['train_sentences']:,} sentences, scored on {result['split']} by {result['metric']}")
    for which in ("before", "after"):
        if which in result:
            print(f"{which:6s} " + "  ".join(f"L{layer} {score:5.2f}" for layer, score in enumerate(result[which])))
    information = result.get("mutual_information") or {}
    for key, values in information.items():
        if isinstance(values, list):
            print(f"I(H; Y) {key.replace('_random_labels', ', shuffled labels')}: " + "  ".join(f"L{layer} {value:.3f}" for layer, value in enumerate(values)))
    if "random_vectors_random_labels" in information:
        print(f"I(H; Y) random vectors, shuffled labels: {information['random_vectors_random_labels']:.3f}")
    if arguments.output:
        output = Path(arguments.output)
        output.mkdir(parents=True, exist_ok=True)
        write_json(output / "probes.json", result)
        draw_probes(result, output / "probes.png")
    return result


ANALYSES = {
    "transfer": run_transfer,
    "neurons": run_neurons,
    "curve": run_curve,
    "units": run_units,
    "probes": run_probes,
    "similarity": run_similarity,
    "absorption": run_absorption,
    "drift": run_drift,
    "layers": run_layers,
    "tokens": run_tokens,
    "report": run_report,
}


def run(arguments: argparse.Namespace):
    return ANALYSES[arguments.analysis](arguments)


COMMAND = Command("explain what transfer did: negative transfer, neuron charge, figures, HTML report", arguments, run)
