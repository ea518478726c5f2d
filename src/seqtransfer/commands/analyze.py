"""`seqtransfer analyze transfer|neurons|curve|report`: explain what transfer did (PretRand paper §4, §7).

    analyze transfer RUN_A RUN_B [--split dev] [--output DIR]    PT / NT / G, falsified tokens
    analyze neurons RUN [--top-k 10] [--units 3,7] [--output DIR]   unit charge, top-k words
    analyze curve RUN... [--split dev] --output DIR             score vs training-set size
    analyze units RUN [--task POS] [--split dev] [--output DIR]  multi-task: ablate each unit of h_POS (MuTSPad §5.5)
    analyze report --transfer A B [--transfer C D ...] [--neurons RUN] [--curve RUN ...] --output report.html
"""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.errors import SeqTransferError


def add_neuron_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--top-k", type=int, default=10, help="words listed per unit and sign (default 10)")
    parser.add_argument("--units", help="comma-separated units to draw (default: the 2 least and 2 most charged)")
    parser.add_argument("--no-source", action="store_true", help="skip the source model's top words on the source dev set")
    parser.add_argument("--device", default="cpu", help="device for the source model's activations: auto, cpu, cuda, cuda:N, mps (default cpu)")


def arguments(parser: argparse.ArgumentParser) -> None:
    analyses = parser.add_subparsers(dest="analysis", metavar="ANALYSIS", required=True)
    transfer = analyses.add_parser("transfer", help="positive / negative transfer of RUN_B against RUN_A (token level)")
    transfer.add_argument("reference", metavar="RUN_A", help="reference run, e.g. trained from scratch")
    transfer.add_argument("transferred", metavar="RUN_B", help="transferred run scored on the same data")
    transfer.add_argument("--split", default="dev", help="split of the prediction files (default dev)")
    transfer.add_argument("--output", help="folder for transfer.json, falsified.tsv and the figures")
    neurons = analyses.add_parser("neurons", help="charge and top-k words of the feature extractor's units")
    neurons.add_argument("run", metavar="RUN", help="run trained with train.record_activations=[0,...]")
    add_neuron_options(neurons)
    neurons.add_argument("--output", help="folder for neurons.json, correlation.safetensors and the figures")
    curve = analyses.add_parser("curve", help="score vs target training-set size per method (Figure 13)")
    curve.add_argument("runs", nargs="+", metavar="RUN", help="finished runs (one point each; seeds are averaged), or an experiment's records folder RESULTS/records/NAME")
    curve.add_argument("--split", default="dev", help="split whose score is plotted (default dev)")
    curve.add_argument("--output", required=True, help="folder for curve.json and curve.png/svg")
    units = analyses.add_parser("units", help="multi-task run: max class-score drop of every task when ablating each unit of a lower task (MuTSPad Figure 2, Table 4)")
    units.add_argument("run", metavar="RUN", help="a multi-task run directory")
    units.add_argument("--task", help="the lower task whose units are ablated (default: the lowest, e.g. POS)")
    units.add_argument("--split", default="dev", help="split every task is scored on (default dev)")
    units.add_argument("--units", help="comma-separated units to ablate (default all)")
    units.add_argument("--max-sentences", type=int, help="score on the first N sentences of each split (faster)")
    units.add_argument("--top-k", type=int, default=10, help="words listed for each task's most important unit (default 10)")
    units.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    units.add_argument("--output", help="folder for units.json, units.md and units.png/svg")
    probes = analyses.add_parser("probes", help="run with a Transformer encoder: a logistic probe per layer, before and after fine-tuning (To-tune paper, Figure 1)")
    probes.add_argument("run", metavar="RUN", help="a tagging run trained with model.encoder")
    probes.add_argument("--split", default="dev", help="split the probes are scored on (default dev)")
    probes.add_argument("--max-train-sentences", type=int, help="train the probes on the first N training sentences (faster)")
    probes.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    probes.add_argument("--output", help="folder for probes.json and probes.png/svg")
    report = analyses.add_parser("report", help="one self-contained HTML report of the analyses")
    report.add_argument("--transfer", nargs=2, action="append", default=[], metavar=("RUN_A", "RUN_B"), help="a pair to compare (repeatable)")
    report.add_argument("--neurons", metavar="RUN", help="run whose units to analyse")
    report.add_argument("--curve", nargs="+", default=[], metavar="RUN", help="runs for the training-size figure")
    report.add_argument("--ablation", metavar="RUN", help="multi-task run whose lowest task's units to ablate (as `analyze units`)")
    report.add_argument("--ablation-max-sentences", type=int, help="score the ablations on the first N sentences of each dev set")
    report.add_argument("--probes", metavar="RUN", help="run with a Transformer encoder whose layers to probe (as `analyze probes`)")
    report.add_argument("--split", default="dev", help="split of the prediction files (default dev)")
    add_neuron_options(report)
    report.add_argument("--title", default="seqtransfer: what transfer did", help="title of the page")
    report.add_argument("--output", required=True, help="HTML file to write")


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
        entry = {"unit": unit, "charge": round(float(charge), 4)}
        for sign in ("positive", "negative"):
            entry[sign] = {name: getattr(analysis.top_words[name], sign)[unit] for name in columns}
        units.append(entry)
    return {"run": analysis.run, "summary": analysis.summary(), "columns": columns, "units": units}


def run_neurons(arguments: argparse.Namespace):
    import numpy as np

    from seqtransfer.analysis import figures
    from seqtransfer.files import write_json
    from seqtransfer.training.checkpoint import save_tensors

    analysis = neuron_analysis(arguments.run, arguments.top_k, arguments.no_source, arguments.device)
    units = parse_units(arguments.units, analysis)
    summary = analysis.summary()
    print(f"{summary['units']} units over {summary['tokens']} dev tokens ({summary['before']} -> {summary['after']}): "
          f"mean charge {summary['mean_charge']:.3f}, median {summary['median_charge']:.3f}, mean |off-diagonal| {summary['mean_abs_off_diagonal']:.3f}")
    if arguments.output:
        import torch

        output = Path(arguments.output)
        write_json(output / "neurons.json", neurons_json(analysis))
        tensors = {"correlation": torch.from_numpy(analysis.correlation.astype(np.float32)), "charges": torch.from_numpy(analysis.charges.astype(np.float32))}
        save_tensors(output / "correlation.safetensors", tensors)
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
    output = Path(arguments.output)
    write_json(output / "curve.json", [asdict(point) for point in points])
    figures.save_figure(figures.learning_curves(points), output / "curve")
    print(f"{len(points)} points written to {output}")
    return points


def run_report(arguments: argparse.Namespace):
    from seqtransfer.analysis.curves import curve_points
    from seqtransfer.analysis.html import ReportContent, render_report
    from seqtransfer.analysis.negative_transfer import compare_runs
    from seqtransfer.files import write_text

    if not (arguments.transfer or arguments.neurons or arguments.curve or arguments.ablation or arguments.probes):
        raise SeqTransferError("nothing to report", hint="pass --transfer RUN_A RUN_B, --neurons RUN, --curve RUN ..., --ablation RUN and/or --probes RUN")
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
        from seqtransfer.analysis.probes import probe_layers

        content.probes = probe_layers(arguments.probes)
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
    result = ablate_units(arguments.run, arguments.task, arguments.split, units, arguments.max_sentences, arguments.top_k, arguments.data_dir)
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

    result = probe_layers(arguments.run, arguments.split, arguments.max_train_sentences, arguments.data_dir)
    for which in ("before", "after"):
        if which in result:
            print(f"{which:6s} " + "  ".join(f"L{layer} {score:5.2f}" for layer, score in enumerate(result[which])))
    if arguments.output:
        output = Path(arguments.output)
        output.mkdir(parents=True, exist_ok=True)
        write_json(output / "probes.json", result)
        draw_probes(result, output / "probes.png")
    return result


ANALYSES = {"transfer": run_transfer, "neurons": run_neurons, "curve": run_curve, "units": run_units, "probes": run_probes, "report": run_report}


def run(arguments: argparse.Namespace):
    return ANALYSES[arguments.analysis](arguments)


COMMAND = Command("explain what transfer did: negative transfer, neuron charge, figures, HTML report", arguments, run)
