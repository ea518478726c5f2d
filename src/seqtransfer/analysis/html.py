"""One self-contained HTML report: figures inlined as base64 PNG, inline CSS and JS, no network.

Tables with the ``sortable`` class sort on a click of a column header (numbers numerically).
Every text from the data (tokens, labels, paths) is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field

from seqtransfer.analysis import figures
from seqtransfer.analysis.curves import CurvePoint
from seqtransfer.analysis.drift import all_groups, distinct_labels, drift_figure
from seqtransfer.analysis.layer_mix import mix_figure
from seqtransfer.analysis.mistakes import MISTAKE_TYPES
from seqtransfer.analysis.negative_transfer import FalsifiedToken, TransferComparison
from seqtransfer.analysis.neurons import NeuronAnalysis
from seqtransfer.analysis.probes import probes_figure
from seqtransfer.analysis.similarity import MEASURES, few_pairs_note, gains_figure, heatmap_figure
from seqtransfer.analysis.units import drops_figure

MAX_EXAMPLES = 300  # falsified tokens listed per mistake type (the JSON output keeps them all)

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; line-height: 1.4; }
h1, h2, h3 { color: #123; } h2 { border-bottom: 2px solid #ccd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #ccd; padding: .25em .6em; text-align: left; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #eef; } table.sortable th { cursor: pointer; } table.sortable th::after { content: " \\2195"; color: #99a; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: .85em; color: #555; } mark { background: #fdd; font-weight: bold; }
details { margin: .4em 0; } summary { cursor: pointer; font-weight: 600; } .note { color: #555; font-size: .9em; }
"""

SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function (header) {
  header.addEventListener('click', function () {
    var body = header.closest('table').tBodies[0];
    var index = Array.prototype.indexOf.call(header.parentNode.children, header);
    var ascending = header.dataset.order !== 'ascending';
    header.dataset.order = ascending ? 'ascending' : 'descending';
    var key = function (row) { var cell = row.cells[index]; return cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent; };
    Array.from(body.rows).sort(function (a, b) {
      var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return ascending ? order : -order;
    }).forEach(function (row) { body.appendChild(row); });
  });
});
"""


@dataclass
class ReportContent:
    """What one report shows; every part is optional."""

    comparisons: list[TransferComparison] = field(default_factory=list)
    neurons: NeuronAnalysis | None = None
    units: list[int] = field(default_factory=list)
    curve_points: list[CurvePoint] = field(default_factory=list)
    unit_ablation: dict | None = None  # analysis/units.py: a multi-task run's units ablated one at a time
    probes: list[dict] = field(default_factory=list)  # analysis/probes.py: a probe per encoder layer, per run
    drift: list[dict] = field(default_factory=list)  # analysis/drift.py: how far each layer group moved, per run
    layer_mix: list[dict] = field(default_factory=list)  # analysis/layer_mix.py: each run's learned weight per encoder layer
    similarity: dict | None = None  # commands/analyze_similarity.py similarity_analysis: distances between corpora
    title: str = "seqtransfer: what transfer did"


def escape(value) -> str:
    return html.escape(str(value), quote=True)


def cell(value, digits: int = 2) -> str:
    """A table cell; numbers right-aligned with ``digits`` decimals and sortable by their exact value."""
    if isinstance(value, float):
        return f'<td class="number" data-value="{value!r}">{value:.{digits}f}</td>'
    if isinstance(value, int):
        return f'<td class="number" data-value="{value}">{value}</td>'
    return f"<td>{value}</td>"  # already-escaped HTML


def table(headers: list[str], rows: list[list], sortable: bool = True, digits: int | list[int] = 2) -> str:
    """An HTML table; ``digits``: the decimals of every number, or of each column's."""
    column_digits = digits if isinstance(digits, list) else [digits] * len(headers)
    head = "".join(f"<th>{escape(header)}</th>" for header in headers)
    body = "\n".join("<tr>" + "".join(cell(value, places) for value, places in zip(row, column_digits)) + "</tr>" for row in rows)
    return f'<table class="{"sortable" if sortable else "plain"}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>'


def embedded_figure(figure, caption: str) -> str:
    """A figure inlined as a base64 PNG."""
    encoded = base64.b64encode(figures.figure_bytes(figure, "png")).decode("ascii")
    return f'<figure><img alt="{escape(caption)}" src="data:image/png;base64,{encoded}"><figcaption>{escape(caption)}</figcaption></figure>'


def overall_table(comparisons: list[TransferComparison]) -> str:
    headers = ["dataset", "reference", "transferred", "split", "tokens", "corrected", "falsified", "PT %", "NT %", "G %", "acc. reference", "acc. transferred"]
    rows = []
    for comparison in comparisons:
        counts = comparison.overall
        rows.append(
            [
                escape(comparison.dataset),
                escape(comparison.reference_method),
                escape(comparison.transferred_method),
                escape(comparison.split),
                counts.tokens,
                counts.corrected,
                counts.falsified,
                counts.positive_transfer,
                counts.negative_transfer,
                counts.gain,
                counts.percent(counts.correct_reference),
                counts.percent(counts.correct_transferred),
            ]
        )
    return table(headers, rows)


def class_table(comparison: TransferComparison) -> str:
    headers = ["gold class", "tokens", "corrected", "falsified", "PT %", "NT %", "G % (accuracy gain)", "acc. reference", "acc. transferred"]
    rows = [
        [escape(c.label), c.tokens, c.corrected, c.falsified, c.positive_transfer, c.negative_transfer, c.gain, c.percent(c.correct_reference), c.percent(c.correct_transferred)]
        for c in comparison.per_class
    ]
    return table(headers, rows)


def collapsed(summary: str, body: str) -> str:
    """A section folded away until clicked (long per-class tables: hundreds of MSD tags)."""
    return f"<details><summary>{escape(summary)}</summary>{body}</details>"


def example_rows(tokens: list[FalsifiedToken]) -> list[list]:
    return [
        [f"<b>{escape(t.token)}</b>", escape(t.gold), escape(t.reference_label), escape(t.transferred_label), f"{escape(t.left)} <mark>{escape(t.token)}</mark> {escape(t.right)}", t.sentence + 1]
        for t in tokens[:MAX_EXAMPLES]
    ]


def falsified_section(comparison: TransferComparison) -> str:
    groups = comparison.falsified_by_type()
    parts = [table(["mistake type", "falsified tokens"], [[escape(MISTAKE_TYPES[name]), len(tokens)] for name, tokens in groups.items()])]
    for name, tokens in groups.items():
        if not tokens:
            continue
        shown = f" (first {MAX_EXAMPLES} shown)" if len(tokens) > MAX_EXAMPLES else ""
        headers = ["token", "gold", f"{comparison.reference_method} (right)", f"{comparison.transferred_method} (wrong)", "context", "sentence"]
        parts.append(f"<details><summary>{escape(MISTAKE_TYPES[name])}: {len(tokens)}{shown}</summary>{table(headers, example_rows(tokens))}</details>")
    return "\n".join(parts)


def comparison_section(comparison: TransferComparison, number: int) -> str:
    return "\n".join(
        [
            f'<h3 id="comparison-{number}">{escape(comparison.title)} ({escape(comparison.split)})</h3>',
            f'<p class="note">reference {escape(comparison.reference)} &middot; transferred {escape(comparison.transferred)}</p>',
            embedded_figure(figures.class_improvement(comparison), f"Per-class accuracy improvement of {comparison.transferred_method} over {comparison.reference_method}, sorted (Figure 12)."),
            collapsed(f"Per gold class ({len(comparison.per_class)} classes; click a column to sort)", class_table(comparison)),
            "<h4>Falsified tokens by mistake type (Table 3)</h4>",
            falsified_section(comparison),
        ]
    )


def transfer_section(comparisons: list[TransferComparison]) -> str:
    caption = "Positive (blue) and negative (red) transfer, % of tokens (Figures 6 and 11)."
    parts = ['<h2 id="transfer">Hidden negative transfer</h2>', embedded_figure(figures.transfer_bars(comparisons), caption), overall_table(comparisons)]
    parts += [comparison_section(comparison, number) for number, comparison in enumerate(comparisons, start=1)]
    return "\n".join(parts)


def neuron_section(analysis: NeuronAnalysis, units: list[int]) -> str:
    summary = analysis.summary()
    parts = [
        '<h2 id="neurons">Units of the feature extractor</h2>',
        f'<p class="note">run {escape(analysis.run)}: charge = Pearson correlation of each unit after ({escape(analysis.after.name)}) '
        f"with itself before ({escape(analysis.before.name)}) fine-tuning, over {analysis.token_count} dev tokens.</p>",
        table(["measure", "value"], [[escape(name), value] for name, value in summary.items() if name not in ("before", "after")], sortable=False, digits=3),
        embedded_figure(figures.correlation_heatmap(analysis.correlation, "after (rows) vs before (columns)"), "Correlation between units after and before fine-tuning (Figure 7)."),
    ]
    for unit in units:
        parts.append(embedded_figure(figures.top_words_table(analysis, unit), f"Unit {unit}: top words over fine-tuning (Figures 8-9)."))
    charge_rows = [[unit, float(value)] for unit, value in enumerate(analysis.charges)]
    parts.append(f"<details><summary>Charge of every unit</summary>{table(['unit', 'charge'], charge_rows, digits=3)}</details>")
    return "\n".join(parts)


def curve_section(points: list[CurvePoint]) -> str:
    rows = [[escape(point.method), point.size, point.score, escape(point.run)] for point in points]
    return "\n".join(
        [
            '<h2 id="curves">Score vs target training-set size</h2>',
            embedded_figure(figures.learning_curves(points), "Score against target training sentences, bands: ± one std over seeds; hatched (two methods only): the gap between them (Figure 13)."),
            table(["method", "training sentences", "score", "run"], rows),
        ]
    )


def ablation_section(result: dict) -> str:
    """MuTSPad Figure 2 and Table 4: what each task loses when one unit of the lower task goes."""
    lower = result["lower_task"]
    rows = [
        [escape(task), item["unit"], item["drop"], f"{escape(item['class'])} ({item.get('support', '–')})", escape(", ".join(item["top_words"])), escape(", ".join(item.get("negative_words", ["–"])))]
        for task, item in result["most_important"].items()
    ]
    return "\n".join(
        [
            f'<h2 id="units">Units of h_{escape(lower)} in the multi-task model</h2>',
            f'<p class="note">Each unit of the {escape(lower)} branch states had its outgoing weights set to zero, one at a time; each task was scored on its '
            f"{escape(result['split'])} set. Colour: the largest drop of a class score (per-class F1) against the intact model.</p>",
            embedded_figure(drops_figure(result), f"Max class-score drop per task when ablating each unit of h_{lower} (MuTSPad Figure 2)."),
            table(["task", "most important unit", "max class drop", "class (gold tokens)", "words firing it most positively", "most negatively"], rows),
        ]
    )


def probes_section(results: list[dict]) -> str:
    """The To-tune paper's Figure 1: what each encoder layer holds for the task, before and after
    fine-tuning; one figure and table per run, so that encoders (MiniLM, our LSTM LM) sit side by side."""
    parts = ['<h2 id="probes">Encoder layers: diagnostic probes</h2>']
    for result in results:
        columns = [which for which in ("before", "after") if which in result]
        information = result.get("mutual_information") or {}
        information_columns = [key for which in columns for key in (which, f"{which}_random_labels") if key in information]
        rows = [[layer, *(result[which][layer] for which in columns), *(information[key][layer] for key in information_columns)] for layer in range(result["layers"])]
        parts += [
            f"<h3>{escape(probe_heading(result))}</h3>",
            f'<p class="note">{escape(probe_description(result) + information_description(result))}</p>',
            embedded_figure(probes_figure(result), "Probe score (and, for labels, mutual information) per encoder layer (0 = the embeddings, or the character CNN)."),
            table(
                ["layer", *(f"{which} fine-tuning" for which in columns), *(f"I(H; Y) {key.replace('_random_labels', ', shuffled labels')}" for key in information_columns)],
                rows,
                digits=[2] * (1 + len(columns)) + [3] * len(information_columns),
            ),
        ]
    return "\n".join(parts)


def probe_heading(result: dict) -> str:
    """The encoder (and its fingerprint), the task and the run the probes read (older probes.json files name only the run)."""
    encoder = " ".join(str(result[key]) for key in ("encoder", "encoder_weights") if result.get(key)) if result.get("encoder") else ""
    named = [part for part in (encoder, result.get("task")) if part]
    return f"{', '.join(named)} ({result['run']})" if named else str(result["run"])


def drift_section(results: list[dict]) -> str:
    """How far training moved each layer group from its pretrained or source weights, a column per run."""
    results = distinct_labels(results)
    groups = all_groups(results)
    changes = [{row["group"]: row["relative_change"] for row in result["groups"] if row["relative_change"] is not None} for result in results]
    rows = [[escape(group), *(change.get(group, "") for change in changes)] for group in groups]
    rows.append(["all", *("" if result["total"]["relative_change"] is None else result["total"]["relative_change"] for result in results)])
    runs = "; ".join(f"{result['label']}: {result['run']} (from the {result['start']})" for result in results)
    return "\n".join(
        [
            '<h2 id="drift">How far training moved each layer group</h2>',
            '<p class="note">||W - W0|| / ||W0|| (%) of each layer group against where the run started: a fine-tuned encoder&#x27;s pretrained weights, '
            "a sequential-transfer run&#x27;s source weights. New heads, the adapters&#x27; own matrices, the BiLSTM&#x27;s word and character tables, "
            f"the pooler and weights the encoder folder lacks are left out. Runs: {escape(runs)}.</p>",
            embedded_figure(drift_figure(results), "Relative change per layer group, bottom to top (symmetric log scale)."),
            table(["layer group", *(result["label"] for result in results)], rows, digits=3),
        ]
    )


def layer_mix_section(results: list[dict]) -> str:
    """Which encoder layers each run uses: the softmax weights of its scalar mix, a column per layer."""
    layers = max(len(result["weights"]) for result in results)
    rows = [
        [escape(result["label"]), *result["weights"], *([""] * (layers - len(result["weights"]))), result["gamma"], escape(result["mode"]), escape(result.get("encoder_weights") or "")]
        for result in results
    ]
    return "\n".join(
        [
            '<h2 id="layers">Which encoder layers each task uses</h2>',
            '<p class="note">The learned scalar mix gamma * sum_l softmax(s)_l h_l of each run (Peters et al. 2018): softmax(s) per layer, '
            "layer 0 being the embeddings (a Transformer) or the character CNN (our recurrent LM).</p>",
            embedded_figure(mix_figure(results), "Softmax weight of each encoder layer, per run."),
            table(["run", *(f"layer {layer}" for layer in range(layers)), "gamma", "encoder mode", "encoder weights"], rows, digits=3),
        ]
    )


def probe_description(result: dict) -> str:
    """What the probes learnt from what, and how they are scored."""
    if result.get("metric") == "pearson":
        return (
            "A ridge regression per layer learns the run's scores from that layer's sentence vectors "
            f"(the mean of its token vectors; a pair's [u; v; |u - v|; u * v]); Pearson's r x 100 on {result['split']}."
        )
    if result.get("labels") is not None and result.get("sentence"):
        return f"A logistic regression per layer learns the run's sentence labels from that layer's sentence vectors; accuracy on {result['split']}."
    return f"A logistic regression per layer learns the run's labels from that layer's token vectors; token accuracy on {result['split']}."


def information_description(result: dict) -> str:
    """How many sentences the probes learnt from, and how the mutual information was estimated, where it was."""
    trained = f" The probes learnt from {result['train_sentences']:,} training sentences." if result.get("train_sentences") else ""
    information = result.get("mutual_information")
    if not information:
        return trained
    random_vectors = information.get("random_vectors_random_labels")
    random_check = "" if random_vectors is None else f"; random vectors of the layers' width against them: {random_vectors:.3f}"
    return trained + (
        f" I(H; Y): the mutual information (nats) between each layer's vectors and the labels on {result['split']} ({information['points']:,} points, labels seen once left out), "
        f"by the {information['neighbours']}-nearest-neighbour estimator for a discrete variable (Ross 2014; the paper used EDGE), "
        f"beside the same labels shuffled (the paper's sanity checks, near 0{random_check}). Nearest-neighbour estimates shrink as the vectors' "
        "dimension grows: compare layers and stages, not encoders of different widths."
    )


def similarity_section(result: dict) -> str:
    """Distances between corpora (heat-map and sortable tables), sources ranked, distance vs gain."""
    measure = result["measure"]
    names = list(result["table"][measure])
    parts = [
        '<h2 id="similarity">Distances between corpora</h2>',
        f'<p class="note">Rows: P (target); columns: Q (source). Tokens: {escape(", ".join(f"{name} {count:,}" for name, count in result["tokens"].items()))}.</p>',
        embedded_figure(heatmap_figure(result["table"], measure), f"{MEASURES[measure][0]} between every pair of corpora."),
    ]
    for name, rows in result["table"].items():
        body = table(["P \\ Q", *names], [[escape(first), *(rows[first][second] for second in names)] for first in names], digits=3)
        parts.append(f"<details><summary>{escape(MEASURES[name][0])} ({escape(MEASURES[name][1])})</summary>{body}</details>")
    if result.get("ranking"):
        rows = [[rank, escape(name), value] for rank, (name, value) in enumerate(result["ranking"], start=1)]
        parts += [f"<h3>Sources ranked for {escape(result['target'])}</h3>", table(["rank", "source", MEASURES[measure][0]], rows, digits=3)]
    if result.get("pairs"):
        summary = result["correlation"]
        parts += [
            "<h3>Distance and transfer gain</h3>",
            f'<p class="note">{escape(few_pairs_note(summary["pairs"]))}</p>',
            embedded_figure(gains_figure(result["pairs"], measure, summary), "Each source→target pair: distance against NRG of transfer over From-scratch."),
            table(
                ["source", "target", "distance", "From-scratch", "transferred", "NRG (%)"],
                [[escape(p["source"]), escape(p["target"]), p["distance"], p["scratch"], p["transferred"], p["gain"]] for p in result["pairs"]],
                digits=3,
            ),
        ]
    return "\n".join(parts)


def render_report(content: ReportContent) -> str:
    """The whole report as one HTML string."""
    sections = []
    if content.comparisons:
        sections.append(transfer_section(content.comparisons))
    if content.neurons is not None:
        sections.append(neuron_section(content.neurons, content.units))
    if content.curve_points:
        sections.append(curve_section(content.curve_points))
    if content.unit_ablation:
        sections.append(ablation_section(content.unit_ablation))
    if content.probes:
        sections.append(probes_section(content.probes))
    if content.drift:
        sections.append(drift_section(content.drift))
    if content.layer_mix:
        sections.append(layer_mix_section(content.layer_mix))
    if content.similarity:
        sections.append(similarity_section(content.similarity))
    body = "\n".join(sections) or "<p>Nothing to show: pass --transfer, --neurons, --curve or --ablation.</p>"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>{escape(content.title)}</title><style>{STYLE}</style></head>\n"
        f"<body><h1>{escape(content.title)}</h1>\n{body}\n<script>{SCRIPT}</script></body></html>\n"
    )
