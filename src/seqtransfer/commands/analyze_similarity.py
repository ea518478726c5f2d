"""`seqtransfer analyze similarity`, and the similarity section of `analyze report`: how close corpora are.

analyze similarity CORPUS... [--target T] [--gains CSV] [--output DIR]  KL / JS / OOV / LM cross-entropy between corpora
"""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.errors import SeqTransferError


def similarity_analysis(arguments: argparse.Namespace, corpora: list[str]) -> dict:
    """The tables, ranking and gains of `analyze similarity` (also a section of `analyze report`)."""
    from seqtransfer.analysis.similarity import compare, correlations, rank_sources, read_gains
    from seqtransfer.corpora.unlabeled import read_unlabeled
    from seqtransfer.data.trigram_lm import sample_sentences

    if arguments.alpha <= 0:
        raise SeqTransferError(f"--alpha must be positive, got {arguments.alpha}", hint="e.g. --alpha 0.01")
    if arguments.measure == "cross_entropy" and arguments.no_lm:
        raise SeqTransferError("--measure cross_entropy needs the language models", hint="drop --no-lm")
    gains = read_gains(arguments.gains) if arguments.gains else []
    names = list(dict.fromkeys([*corpora, *(row[key] for row in gains for key in ("target", "source"))]))
    if arguments.target and arguments.target not in names:
        raise SeqTransferError(f"--target '{arguments.target}' is not among the corpora", hint=f"corpora: {', '.join(names)}")
    if len(names) < 2:
        raise SeqTransferError("give at least two corpora to compare")
    if arguments.measure == "wasserstein" and not arguments.wasserstein:
        raise SeqTransferError("--measure wasserstein needs the vectors that compare words", hint="add --wasserstein glove-6b-50d (or a vector file)")
    if arguments.sample_tokens is not None and arguments.sample_tokens < 1:
        raise SeqTransferError(f"--sample-tokens must be at least 1, got {arguments.sample_tokens}")
    sentences = {name: read_unlabeled(name, arguments.data_dir, arguments.tokenizer, arguments.word_column) for name in names}
    if arguments.sample_tokens:
        sentences = {name: sample_sentences(items, arguments.sample_tokens, arguments.seed) for name, items in sentences.items()}
    table = compare(sentences, arguments.alpha, language_models=not arguments.no_lm, wasserstein_vectors=arguments.wasserstein)
    pairs = [{**row, "distance": table[arguments.measure][row["target"]][row["source"]]} for row in gains]
    result = {
        "measure": arguments.measure,
        "sample_tokens": arguments.sample_tokens,
        "tokens": {name: sum(map(len, items)) for name, items in sentences.items()},
        "table": table,
        "pairs": pairs,
        "correlation": correlations([pair["distance"] for pair in pairs], [pair["gain"] for pair in pairs]) if pairs else None,
    }
    if arguments.target:
        result["target"], result["ranking"] = arguments.target, rank_sources(table, arguments.target, arguments.measure)
    return result


def run_similarity(arguments: argparse.Namespace) -> dict:
    """Print the corpora's distances; with --output, write them as JSON and Markdown, with their figures."""
    from seqtransfer.analysis import figures
    from seqtransfer.analysis.similarity import gains_figure, heatmap_figure, markdown
    from seqtransfer.files import write_json, write_text

    result = similarity_analysis(arguments, arguments.corpora)
    text = markdown(result["table"], result.get("target"), result["pairs"], result["correlation"])
    print(text, end="")
    if arguments.output:
        output = Path(arguments.output)
        write_json(output / "similarity.json", result)
        write_text(output / "similarity.md", text)
        figures.save_figure(heatmap_figure(result["table"], arguments.measure), output / "similarity")
        if result["pairs"]:
            figures.save_figure(gains_figure(result["pairs"], arguments.measure, result["correlation"]), output / "distance_gain")
        print(f"written to {output}")
    return result
