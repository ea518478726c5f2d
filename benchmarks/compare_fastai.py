"""seqtransfer vs fastai 2.8.12: the same AWD-LSTM language model on the same text, in one invocation.

    nice -n 10 python benchmarks/compare_fastai.py --max-sentences 20000 --epochs 2 --json compare_fastai.json
    nice -n 10 python benchmarks/compare_fastai.py --text corpus.txt --size small --epochs 1   # one sentence per line, tokens split on spaces
    nice -n 10 python benchmarks/compare_fastai.py --size small --amp off bf16   # our side twice: fp32, then bf16 autocast (pretrain-lm --amp bf16)
    # quick end-to-end check (a minute or two; the numbers mean nothing):
    nice -n 10 python benchmarks/compare_fastai.py --max-sentences 300 --size tiny --bptt 20 --batch-size 16 --epochs 1

Installs fastai 2.8.12 (on top of torch 2.13.0 CPU) into its own venv, ``benchmarks/.fastai-venv``,
the first time (``compare_flair.ensure_peer_venv``). The text: the first ``--max-sentences`` lines of
``tweets_unlabeled`` (``$SEQTRANSFER_DATA`` or ``--data-dir``; TweetEval's test files left out, split by
the corpus's tweet tokenizer) or of ``--text``. Both tools get the same sentences, the same held-out
split and word ids (``workflows/awd_pretraining.py``'s functions: split of distinct lines, <unk> <S>
</S> and the words seen twice or more, </S> after each sentence), the same sizes and dropouts
(``--size``: ``embeddings/awd_lstm.SIZES``; large is fastai's ``awd_lstm_lm_config``), AR 2 and TAR 1,
Adam (0.9, 0.99, eps 1e-8, no weight decay) at a constant ``--learning-rate``, gradient clip 0.25,
``--batch-size`` stream rows, ``--bptt`` steps and ``--epochs`` epochs, on ``--threads`` torch threads.
Each runs in a process of its own, one after the other: seqtransfer's ``pretrain_awd_lstm`` (the
workflow behind ``pretrain-lm --architecture awd-lstm``, with ``share_cores`` off so that it keeps its
threads as fastai does) in this interpreter, ``fastai_runner.py`` in the fastai venv.

Printed and written (``--json``) per tool (ours once per ``--amp`` precision; fastai's in fp32, its default): training tokens per second (the stream's tokens, </S>
included, times the epochs over the seconds of the training batches), peak resident memory of its
process, the held-out perplexity after each epoch (both scored by the same rule: every next word of
the held-out stream laid out in ``--batch-size`` rows, read in chunks of ``--bptt``); then the ratios
seqtransfer / fastai. The seeds are the same, the random draws are not (each library draws its own
masks and initial weights), so perplexities differ by chance as two seeds of one tool would.
Run on a quiet machine and say what else ran: the timings are the machine's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from compare_flair import BENCHMARKS, DEFAULT_DATA, ensure_peer_venv, run_json

from seqtransfer import __version__
from seqtransfer.commands.pretrain_lm import adam_training
from seqtransfer.corpora.unlabeled import RAW_CORPORA, read_text_lines
from seqtransfer.data.tokenize import TOKENIZERS
from seqtransfer.embeddings.awd_lstm import SIZES
from seqtransfer.workflows.awd_pretraining import AwdSettings, encode_sentences, model_settings, pretrain_awd_lstm, stream_chunks
from seqtransfer.workflows.recurrent_pretraining import split_sentences, vocabularies

FASTAI_VERSION = "2.8.12"
BETAS, GRADIENT_CLIP = [0.9, 0.99], 0.25  # what pretrain-lm --architecture awd-lstm trains with (commands/pretrain_lm.run_awd_lstm)


def read_sentences(arguments: argparse.Namespace) -> list[list[str]]:
    """The first ``--max-sentences`` non-blank lines of the text, as token lists."""
    entry = arguments.text or "tweets_unlabeled"
    lines, _, _ = read_text_lines(entry, arguments.data_dir)
    split = TOKENIZERS[RAW_CORPORA[entry].tokenizer if entry in RAW_CORPORA else "whitespace"]
    sentences = [tokens for line in lines[: arguments.max_sentences] if (tokens := split(line))]
    if len(sentences) < 2:
        raise SystemExit(f"{entry}: fewer than two sentences to train and score on")
    return sentences


def settings_of(arguments: argparse.Namespace) -> AwdSettings:
    return AwdSettings(arguments.size, arguments.vocabulary_size, arguments.bptt, arguments.held_out)


def training_of(arguments: argparse.Namespace, amp: str = "off"):
    """Our training config: pretrain-lm's for awd-lstm at precision ``amp``, every epoch run (patience = epochs), the threads kept."""
    options = argparse.Namespace(
        learning_rate=arguments.learning_rate,
        batch_size=arguments.batch_size,
        epochs=arguments.epochs,
        patience=arguments.epochs,
        seed=arguments.seed,
        threads=arguments.threads,
        device="cpu",
        amp=amp,
    )
    return dataclasses.replace(adam_training(options, BETAS, GRADIENT_CLIP), share_cores=False)


def export(arguments: argparse.Namespace, sentences: list[list[str]], folder: Path) -> None:
    """Write both sides' input: ``text.txt`` (our side reads it), ``fastai.npz`` (the same split,
    vocabulary and ids as ``pretrain_awd_lstm`` makes: the training sentences' ids and lengths, the
    held-out stream's (B, L) rows) and ``settings.json``."""
    (folder / "text.txt").write_text("\n".join(" ".join(sentence) for sentence in sentences) + "\n", encoding="utf-8")
    (folder / "arguments.json").write_text(json.dumps(vars(arguments)), encoding="utf-8")
    settings = settings_of(arguments)
    training, held_out = split_sentences(sentences, settings.held_out, arguments.seed)
    words, _ = vocabularies(training, settings.vocabulary_size)
    ids = {word: index for index, word in enumerate(words)}
    encoded = encode_sentences(training, ids)
    rows = stream_chunks(np.concatenate(encode_sentences(held_out, ids)), arguments.batch_size, bptt=2**62)[0]  # one chunk: the whole rows
    np.savez(folder / "fastai.npz", training=np.concatenate(encoded), lengths=np.array([len(ids) for ids in encoded]), held_out_inputs=rows.inputs.numpy(), held_out_targets=rows.targets.numpy())
    config = training_of(arguments)
    training_settings = {
        "seed": config.seed,
        "threads": config.threads,
        "epochs": config.max_epochs,
        "batch_size": config.batch_size,
        "bptt": settings.bptt,
        "learning_rate": config.learning_rate,
        "betas": list(config.betas),
        "gradient_clip": config.gradient_clip,
    }
    document = {"model": model_settings(settings, len(words)), "training": training_settings}
    (folder / "settings.json").write_text(json.dumps(document, indent=1), encoding="utf-8")


def side_name(amp: str) -> str:
    """Our side's row name at precision ``amp``: seqtransfer, seqtransfer bf16."""
    return "seqtransfer" if amp == "off" else f"seqtransfer {amp}"


def run_seqtransfer(folder: Path, amp: str) -> dict:
    """Our side at precision ``amp``, in its own process (``--seqtransfer-side``): pretrain on ``text.txt``; one JSON line of measurements."""
    arguments = argparse.Namespace(**json.loads((folder / "arguments.json").read_text(encoding="utf-8")))
    sentences = [line.split(" ") for line in (folder / "text.txt").read_text(encoding="utf-8").splitlines()]
    summary = pretrain_awd_lstm(
        sentences,
        settings_of(arguments),
        training_of(arguments, amp),
        folder / f"seqtransfer-lm-{amp}",
        lambda message: print(f"{side_name(amp)}: {message}", file=sys.stderr, flush=True),
        show_progress=False,
        device="cpu",
    )
    return {
        "tool": side_name(amp),
        "amp": amp,
        "version": __version__,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "parameters": summary["parameters"],
        "training_tokens": summary["training_tokens"],
        "train_seconds": [record["train_seconds"] for record in summary["history"]],
        "tokens_per_second": summary["training_tokens_per_second"],
        "held_out_perplexity": [record["held_out_perplexity"] for record in summary["history"]],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def compare(arguments: argparse.Namespace, fastai_python: Path, folder: Path) -> list[dict]:
    """Export, then run each side (seqtransfer at each ``--amp`` first); each row is written to ``FOLDER/TOOL-result.json`` as it ends."""
    export(arguments, read_sentences(arguments), folder)
    ours = {side_name(amp): [sys.executable, str(Path(__file__).resolve()), "--seqtransfer-side", str(folder), "--amp", amp] for amp in arguments.amp}
    commands = ours | {"fastai": [str(fastai_python), str(BENCHMARKS / "fastai_runner.py"), "--input", str(folder)]}
    rows = []
    for tool, command in commands.items():
        print(f"running {tool} ...", file=sys.stderr, flush=True)
        rows.append(run_json(command, arguments.threads))
        (folder / f"{tool.replace(' ', '-')}-result.json").write_text(json.dumps(rows[-1], indent=1), encoding="utf-8")
    if len({(row["training_tokens"], row["parameters"]) for row in rows}) > 1:
        raise SystemExit(f"the two tools did not train the same model on the same tokens: {rows}")
    return rows


def ratios(ours: dict, theirs: dict) -> dict:
    """seqtransfer / fastai: speed (>1: ours faster), peak memory (<1: ours smaller), last held-out perplexity (<1: ours lower)."""
    return {
        "tokens_per_second": round(ours["tokens_per_second"] / theirs["tokens_per_second"], 3),
        "peak_rss": round(ours["peak_rss_mb"] / theirs["peak_rss_mb"], 3),
        "held_out_perplexity": round(ours["held_out_perplexity"][-1] / theirs["held_out_perplexity"][-1], 3),
    }


def report(rows: list[dict], arguments: argparse.Namespace) -> dict:
    """Print the table and the ratios; write everything to ``--json``; return it."""
    print(
        f"\nseqtransfer vs fastai {rows[-1]['version']}: AWD-LSTM {arguments.size}, torch {rows[0]['torch']}, cpu, {arguments.threads} threads, "
        f"{rows[0]['training_tokens']:,} training tokens, batch {arguments.batch_size} x bptt {arguments.bptt}, {arguments.epochs} epochs, seed {arguments.seed}"
    )
    print(f"{'tool':17} {'parameters':>11} {'train tok/s':>12} {'peak MB':>8}  held-out perplexity per epoch")
    for row in rows:
        print(f"{row['tool']:17} {row['parameters']:11,} {row['tokens_per_second']:12,.0f} {row['peak_rss_mb']:8.0f}  " + " ".join(f"{value:.2f}" for value in row["held_out_perplexity"]))
    result = {
        "settings": {key: value for key, value in vars(arguments).items() if key not in ("json", "work_dir", "fastai_venv", "seqtransfer_side")},
        "rows": rows,
        "ratios": {row["tool"]: ratios(row, rows[-1]) for row in rows[:-1]},
    }
    for tool, values in result["ratios"].items():
        print(f"{tool} / fastai: " + ", ".join(f"{name} {value:.2f}" for name, value in values.items()))
    print(json.dumps(result))
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", help="a text file, one sentence per line, tokens split on spaces (default: tweets_unlabeled)")
    parser.add_argument("--max-sentences", type=int, default=20000, help="the first N lines of the text (default 20000)")
    parser.add_argument("--size", choices=list(SIZES), default="large", help="embeddings/awd_lstm.SIZES (default large: fastai's awd_lstm_lm_config)")
    parser.add_argument("--vocabulary-size", type=int, default=60000)
    parser.add_argument("--bptt", type=int, default=70)
    parser.add_argument("--batch-size", type=int, default=64, help="rows of the token stream")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--held-out", type=float, default=0.02)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--amp", nargs="+", choices=["off", "bf16"], default=["off"], help="our side's precision(s), each a row (pretrain-lm --amp; fastai runs fp32): e.g. --amp off bf16")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=os.environ.get("SEQTRANSFER_DATA") or str(DEFAULT_DATA))
    parser.add_argument("--fastai-venv", default=str(BENCHMARKS / ".fastai-venv"))
    parser.add_argument("--work-dir", help="keep both sides' input, results and our LM folder here (default: a temporary folder)")
    parser.add_argument("--json", help="also write all measurements to this JSON file")
    parser.add_argument("--seqtransfer-side", type=Path, help=argparse.SUPPRESS)  # internal: run our side on this folder
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    arguments = parse_arguments(argv)
    if arguments.seqtransfer_side:
        print(json.dumps(run_seqtransfer(arguments.seqtransfer_side, arguments.amp[0])))
        return {}
    fastai_python = ensure_peer_venv(Path(arguments.fastai_venv), "fastai", FASTAI_VERSION, "about 2-3 minutes")
    with tempfile.TemporaryDirectory(prefix="compare-fastai-") as temporary:
        folder = Path(arguments.work_dir or temporary)
        folder.mkdir(parents=True, exist_ok=True)
        return report(compare(arguments, fastai_python, folder), arguments)


if __name__ == "__main__":
    main()
