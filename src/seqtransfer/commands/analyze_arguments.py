"""The options of `seqtransfer analyze`: one subcommand per analysis (what `--help` shows)."""

from __future__ import annotations

import argparse

from seqtransfer.commands.numbers import positive, whole
from seqtransfer.data.tokenize import TOKENIZERS

DATA_DIR_HELP = "folder holding the dataset folders (default: $SEQTRANSFER_DATA)"


def add_neuron_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--top-k", type=whole(1), default=10, help="words listed per unit and sign (default 10)")
    parser.add_argument("--units", help="comma-separated units to draw (default: the 2 least and 2 most charged)")
    parser.add_argument("--no-source", action="store_true", help="skip the source model's top words on the source dev set")
    parser.add_argument("--device", default="cpu", help="device for the source model's activations: auto, cpu, cuda, cuda:N, mps (default cpu)")


def arguments(parser: argparse.ArgumentParser) -> None:
    """One subcommand per analysis, each with its options (in ``--help`` order)."""
    analyses = parser.add_subparsers(dest="analysis", metavar="ANALYSIS", required=True)
    for add in (
        transfer_arguments,
        neurons_arguments,
        curve_arguments,
        units_arguments,
        probes_arguments,
        absorption_arguments,
        drift_arguments,
        layers_arguments,
        similarity_arguments,
        tokens_arguments,
        report_arguments,
    ):
        add(analyses)


def transfer_arguments(analyses) -> None:
    transfer = analyses.add_parser("transfer", help="positive / negative transfer of RUN_B against RUN_A (token level)")
    transfer.add_argument("reference", metavar="RUN_A", help="reference run, e.g. trained from scratch")
    transfer.add_argument("transferred", metavar="RUN_B", help="transferred run scored on the same data")
    transfer.add_argument("--split", default="dev", help="split of the prediction files (default dev)")
    transfer.add_argument("--output", help="folder for transfer.json, falsified.tsv and the figures")


def neurons_arguments(analyses) -> None:
    neurons = analyses.add_parser("neurons", help="charge and top-k words of the feature extractor's units")
    neurons.add_argument("run", metavar="RUN", help="run trained with train.record_activations=[0,...]")
    add_neuron_options(neurons)
    neurons.add_argument("--output", help="folder for neurons.json, correlation.safetensors and the figures")


def curve_arguments(analyses) -> None:
    curve = analyses.add_parser("curve", help="score vs target training-set size per method (Figure 13)")
    curve.add_argument("runs", nargs="+", metavar="RUN", help="finished runs (one point each; seeds are averaged), or an experiment's records folder RESULTS/records/NAME")
    curve.add_argument("--split", default="dev", help="split whose score is plotted (default dev)")
    curve.add_argument(
        "--reference",
        help="a method (a records folder's grid method, e.g. From-scratch200; a run given directly is named by its scheme, e.g. scratch): "
        "PT / NT / gain of the others against it at each size, pairing runs of one seed",
    )
    curve.add_argument(
        "--method", action="append", dest="methods", metavar="NAME", help="keep only this method's runs (repeat it for several; e.g. two records folders whose other methods would crowd the figure)"
    )
    curve.add_argument("--output", required=True, help="folder for curve.json and curve.png/svg (and transfer_by_size.*)")


def units_arguments(analyses) -> None:
    units = analyses.add_parser("units", help="multi-task run: max class-score drop of every task when ablating each unit of a lower task (MuTSPad Figure 2, Table 4)")
    units.add_argument("run", metavar="RUN", help="a multi-task run directory")
    units.add_argument("--task", help="the lower task whose units are ablated (default: the lowest, e.g. POS)")
    units.add_argument("--split", default="dev", help="split every task is scored on (default dev)")
    units.add_argument("--units", help="comma-separated units to ablate (default all)")
    units.add_argument("--max-sentences", type=whole(1), help="score on the first N sentences of each split (faster)")
    units.add_argument("--min-support", type=whole(1), default=1, help="classes with at least N gold tokens decide a unit's drop (default 1: every class, as the paper)")
    units.add_argument("--top-k", type=whole(1), default=10, help="words listed for each task's most important unit (default 10)")
    units.add_argument("--data-dir", help=DATA_DIR_HELP)
    units.add_argument("--output", help="folder for units.json, units.md and units.png/svg")


def probes_arguments(analyses) -> None:
    probes = analyses.add_parser(
        "probes", help="run with an encoder (Transformer or our recurrent LM): a probe per layer (logistic, or linear for scores), before and after fine-tuning (To-tune paper, Figure 1)"
    )
    probes.add_argument("run", metavar="RUN", help="a tagging, sentence classification or regression run trained with model.encoder")
    probes.add_argument("--split", default="dev", help="split the probes are scored on (default dev)")
    probes.add_argument("--max-train-sentences", type=whole(1), help="train the probes on the first N training sentences (faster), at most those the run trained on (the default)")
    probes.add_argument("--data-dir", help=DATA_DIR_HELP)
    probes.add_argument(
        "--pair-vector",
        choices=["compared", "mean"],
        default="compared",
        help="a pair's probe vector: [u; v; |u - v|; u * v] of its two texts' means (default), or the mean over both texts' tokens (the paper's Figure 1)",
    )
    probes.add_argument("--output", help="folder for probes.json and probes.png/svg")


def absorption_arguments(analyses) -> None:
    absorption = analyses.add_parser("absorption", help="PretRand runs: weights and outputs of the pre-trained and random FC layers, each branch alone (Figure 5)")
    absorption.add_argument("runs", nargs="+", metavar="RUN", help="PretRand run directories (e.g. with and without model.normalize_branches)")
    absorption.add_argument("--split", default="dev", help="split the outputs are measured on (default dev)")
    absorption.add_argument("--data-dir", help=DATA_DIR_HELP)
    absorption.add_argument("--output", help="folder for absorption.json, absorption.md and absorption.png/svg")


def drift_arguments(analyses) -> None:
    drift = analyses.add_parser("drift", help="fine-tuned encoder or sequential-transfer runs: how far training moved each layer group from its pretrained or source weights")
    drift.add_argument("runs", nargs="+", metavar="RUN", help="runs that fine-tuned model.encoder or were trained with transfer.source (e.g. FT and FT + L2-SP)")
    drift.add_argument("--label", action="append", default=[], metavar="NAME", help="a name per RUN, in order, for the table and figure (repeatable; default the setting)")
    drift.add_argument("--output", help="folder for drift.json, drift.md and drift.png/svg")


def layers_arguments(analyses) -> None:
    layers = analyses.add_parser("layers", help="runs that mix an encoder's layers (model.encoder): the learned weight of each layer (which layers each task uses)")
    layers.add_argument("runs", nargs="*", metavar="RUN", help="runs trained with model.encoder (frozen features, or our recurrent LM fine-tuned)")
    layers.add_argument("--label", action="append", default=[], metavar="NAME", help="a name per RUN, in order, for the table and figure (repeatable; default the run folder's name)")
    layers.add_argument(
        "--records",
        action="append",
        default=[],
        metavar="FILE",
        help="an experiment's records (RESULTS/records/NAME.jsonl, or `experiment run`'s --records file): a row per run that kept its mix "
        "(TARGET / METHOD, seed N), its folder there or not (repeatable)",
    )
    layers.add_argument("--only", metavar="METHODS", help="with --records: comma-separated method names to read (default: every method with a mix)")
    layers.add_argument("--output", help="folder for layers.json, layers.md and layers.png/svg")


def similarity_arguments(analyses) -> None:
    similarity = analyses.add_parser("similarity", help="how far apart corpora are: JS / KL of word distributions, OOV rate, trigram-LM cross-entropy; ranks sources for a target")
    similarity.add_argument("corpora", nargs="+", metavar="CORPUS", help="a dataset (NAME[:SPLIT], default train), tweets_unlabeled, or a text file (one sentence per line) or CoNLL file")
    add_similarity_options(similarity)
    similarity.add_argument("--output", help="folder for similarity.json, similarity.md and the figures")


def tokens_arguments(analyses) -> None:
    tokens = analyses.add_parser("tokens", help="accuracy and share of the errors by kind of token: URL, @mention, #hashtag, RT, number, symbol, word")
    tokens.add_argument("runs", nargs="+", metavar="RUN", help="run directories (their predictions, or their one test-on-* folder's) or prediction files")
    tokens.add_argument("--split", default="test", help="split of the prediction files (default test)")
    tokens.add_argument("--gold", metavar="DATASET[:TASK]", help="the RUNs are pseudo-labelled files (a self-labelling round's pseudo-I.conll): check them against this dataset's gold labels")
    tokens.add_argument("--gold-split", default="train", help="with --gold: the split the unlabelled sentences came from (default train)")
    tokens.add_argument("--data-dir", help="with --gold: folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    tokens.add_argument("--output", help="folder for tokens.json and tokens.md")


def report_arguments(analyses) -> None:
    report = analyses.add_parser("report", help="one self-contained HTML report of the analyses")
    report.add_argument("--transfer", nargs=2, action="append", default=[], metavar=("RUN_A", "RUN_B"), help="a pair to compare (repeatable)")
    report.add_argument("--neurons", metavar="RUN", help="run whose units to analyse")
    report.add_argument("--curve", nargs="+", default=[], metavar="RUN", help="runs for the training-size figure")
    report.add_argument("--ablation", metavar="RUN", help="multi-task run whose lowest task's units to ablate (as `analyze units`)")
    report.add_argument("--ablation-max-sentences", type=whole(1), help="score the ablations on the first N sentences of each dev set")
    report.add_argument(
        "--probes", nargs="+", default=[], metavar="RUN", help="runs with an encoder (a Transformer or our recurrent LM) whose layers to probe (as `analyze probes`), or the probes.json it saved"
    )
    report.add_argument("--drift", nargs="+", default=[], metavar="RUN", help="fine-tuned encoder or sequential-transfer runs: how far each layer group moved (as `analyze drift`)")
    report.add_argument(
        "--layers",
        nargs="+",
        default=[],
        metavar="RUN",
        help="runs that mix an encoder's layers, or an experiment's records file (every run that kept its mix): each layer's learned weight (as `analyze layers`)",
    )
    report.add_argument("--similarity", nargs="+", default=[], metavar="CORPUS", help="corpora to compare (as `analyze similarity`)")
    add_similarity_options(report)
    report.add_argument("--split", default="dev", help="split of the prediction files (default dev)")
    add_neuron_options(report)
    report.add_argument("--title", default="seqtransfer: what transfer did", help="title of the page")
    report.add_argument("--output", required=True, help="HTML file to write")


def add_similarity_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", help="the target corpus whose candidate sources are ranked (one of the corpora)")
    parser.add_argument("--gains", metavar="CSV", help="measured scores per pair (source,target,scratch,transferred): relate distance to transfer gain")
    parser.add_argument("--measure", default="js", choices=["js", "kl", "oov", "cross_entropy", "wasserstein"], help="distance used to rank and relate to gains (default js)")
    parser.add_argument("--wasserstein", metavar="VECTORS", help="also the Wasserstein distance of the word distributions, words compared in these vectors (glove-6b-50d or a file; needs POT)")
    parser.add_argument("--tokenizer", choices=list(TOKENIZERS), default="whitespace", help="how raw-text files are split (default whitespace)")
    parser.add_argument("--word-column", type=whole(1), help="a column file's word column (1-based; its other columns are ignored)")
    parser.add_argument("--alpha", type=positive, default=0.01, help="Lidstone smoothing of KL (default 0.01)")
    parser.add_argument("--no-lm", action="store_true", help="skip the trigram language models (faster)")
    parser.add_argument("--sample-tokens", type=whole(1), help="compare random samples of whole sentences of about N tokens each (divergences grow as samples shrink: equal sizes compare fairly)")
    parser.add_argument("--seed", type=whole(0), default=1, help="seed of --sample-tokens (default 1)")
    parser.add_argument("--data-dir", help=DATA_DIR_HELP)
