"""`seqtransfer pretrain-lm`: a small language model of our own on tweets or news, saved as an encoder
folder: a Transformer (masked or causal, the default) or an ELMo-style BiLSTM LM (``--architecture bilstm``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.errors import SeqTransferError, warn


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--text", default="tweets_unlabeled",
                        help="a raw corpus (default tweets_unlabeled), a text file (one sentence per line), a CoNLL file (with --word-column) or DATASET[:SPLIT] (labels ignored)")
    parser.add_argument("--word-column", type=int, help="a CoNLL file's word column (1-based); not for a plain text file")
    parser.add_argument("--output", required=True,
                        help="the Hugging Face folder to write (model.encoder=FOLDER reads it); built in OUTPUT.partial, where an interrupted run resumes")
    parser.add_argument("--architecture", choices=["transformer", "bilstm"], default="transformer",
                        help="transformer (a small BERT, default) or bilstm (ELMo-style: character CNN, forward and backward 2-layer LSTMs)")
    parser.add_argument("--objective", choices=["masked", "causal"], help="transformer: masked (BERT's, default) or causal (left to right) LM")
    parser.add_argument("--size", choices=["tiny", "small", "large"], default="small",
                        help="bilstm: small (ELMo-small's shape, scaled down: about 3M parameters), large (about 36M) or tiny (for smoke tests); default small")
    parser.add_argument("--softmax", choices=["adaptive", "full"], default="adaptive", help="bilstm: adaptive (default, faster) or full softmax over the words")
    parser.add_argument("--tokenizer", choices=["whitespace", "tweet"], help="bilstm: how a text file's lines split into tokens (default: a raw corpus's own, else whitespace)")
    parser.add_argument("--keep-test", action="store_true", help="also train on the raw corpus's test files (default: TweetEval's test tweets stay out)")
    parser.add_argument("--vocabulary-size", type=int, help="transformer: BPE sub-words (default 8000); bilstm: words of the softmax (default 30000)")
    parser.add_argument("--hidden", type=int, default=256, help="hidden units of each layer (default 256)")
    parser.add_argument("--layers", type=int, default=4, help="Transformer layers (default 4)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads; they divide --hidden (default 4)")
    parser.add_argument("--intermediate", type=int, default=1024, help="feed-forward units (default 1024)")
    parser.add_argument("--max-length", type=int, default=64, help="sub-words per line, [CLS] and [SEP] included (default 64)")
    parser.add_argument("--held-out", type=float, default=0.02, help="share of the distinct lines kept for perplexity (default 0.02)")
    parser.add_argument("--epochs", type=int, default=10, help="at most this many epochs (default 10)")
    parser.add_argument("--patience", type=int, default=2, help="stop after this many epochs without a better held-out perplexity (default 2)")
    parser.add_argument("--batch-size", type=int, default=64, help="lines per batch (default 64)")
    parser.add_argument("--learning-rate", type=float, help="transformer: AdamW's peak rate after a linear warm-up (default 5e-4); bilstm: Adam's (default 1e-3)")
    parser.add_argument("--seed", type=int, default=1, help="fixes the held-out split, the masking and the weights (default 1)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    parser.add_argument("--data-dir", help="folder holding the datasets (default $SEQTRANSFER_DATA)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


DEFAULTS = {"transformer": {"objective": "masked", "vocabulary_size": 8000, "learning_rate": 5e-4},
            "bilstm": {"vocabulary_size": 30000, "learning_rate": 1e-3}}


def fill_defaults(arguments: argparse.Namespace) -> None:
    """Each architecture's defaults for the options it reads; an option it does not have is one line."""
    if arguments.architecture == "bilstm" and arguments.objective is not None:
        raise SeqTransferError(f"--objective {arguments.objective} is a Transformer LM's: the BiLSTM LM is trained as ELMo is, a forward and a backward LM at once",
                               hint="drop --objective, or use --architecture transformer")
    if arguments.architecture == "transformer" and arguments.tokenizer is not None:
        raise SeqTransferError("--tokenizer is the BiLSTM LM's (it reads words); the Transformer LM trains its own sub-word tokenizer",
                               hint="drop --tokenizer, or use --architecture bilstm")
    for option, value in DEFAULTS[arguments.architecture].items():
        if getattr(arguments, option) is None:
            setattr(arguments, option, value)


def check(arguments: argparse.Namespace) -> None:
    """The options' values and the output folder: one line each before anything is read or written."""
    fill_defaults(arguments)
    rules = [("--vocabulary-size", arguments.vocabulary_size >= 100, "at least 100"), ("--hidden", arguments.hidden >= 8, "at least 8"),
             ("--layers", arguments.layers >= 1, "at least 1"),
             ("--heads", arguments.heads >= 1 and arguments.hidden % arguments.heads == 0, f"at least 1 and divide --hidden {arguments.hidden}"),
             ("--intermediate", arguments.intermediate >= 1, "at least 1"), ("--max-length", arguments.max_length >= 4, "at least 4"),
             ("--held-out", 0 < arguments.held_out < 1, "in (0, 1)"), ("--epochs", arguments.epochs >= 1, "at least 1"), ("--patience", arguments.patience >= 1, "at least 1"),
             ("--batch-size", arguments.batch_size >= 1, "at least 1"), ("--learning-rate", arguments.learning_rate > 0, "positive"), ("--threads", arguments.threads >= 1, "at least 1"),
             ("--word-column", arguments.word_column is None or arguments.word_column >= 1, "at least 1 (columns count from 1)")]
    for option, holds, requirement in rules:
        if not holds:
            given = getattr(arguments, option.removeprefix("--").replace("-", "_"))
            raise SeqTransferError(f"{option} must be {requirement}, got {given}", hint=f"pass {option} {requirement}")
    check_output(arguments.output)


def check_output(output: str) -> None:
    """A new folder: not empty text, an existing file, a folder with files or a finished LM."""
    path = Path(output)
    if not output.strip():
        raise SeqTransferError("--output is empty", hint="pass --output FOLDER, a new folder for the LM")
    if path.is_file():
        raise SeqTransferError("--output is a file", path=path, hint="choose a new folder")
    if (path / "config.json").is_file():
        raise SeqTransferError("--output already holds a model", path=path, hint="choose a new folder, or delete this one to train it again")
    if path.exists() and any(path.iterdir()):
        raise SeqTransferError("--output is a folder with files", path=path, hint="choose a new folder (an interrupted run resumes from OUTPUT.partial, not OUTPUT)")


def read_lines(arguments: argparse.Namespace) -> tuple[list[str], list[str], int]:
    """(lines, test files left out, lines left out as repeats of theirs) of ``--text``."""
    from seqtransfer.data.registry import DATASETS
    from seqtransfer.data.unlabeled import RAW_CORPORA, read_text_lines, read_unlabeled

    text = arguments.text
    if text in RAW_CORPORA:
        return read_text_lines(text, arguments.data_dir, arguments.keep_test)
    if arguments.keep_test:
        warn(f"--keep-test keeps a raw corpus's test files ({', '.join(RAW_CORPORA)}); --text {text} is not one, so it changes nothing")
    names = text.partition(":")[0].split("+")
    if not Path(text).exists() and not Path(text).suffix and "/" not in text and not all(name in DATASETS for name in names):
        raise SeqTransferError(f"--text {text!r} is neither a file, a raw corpus nor a registered dataset",
                               hint=f"pass a text file (one sentence per line), a CoNLL file with --word-column, {', '.join(RAW_CORPORA)}, "
                                    "or DATASET[:SPLIT] (seqtransfer datasets list)")
    lines = [" ".join(sentence) for sentence in read_unlabeled(text, arguments.data_dir, word_column=arguments.word_column)]
    if len(set(lines)) < 2:
        read_as = f" (read as CoNLL columns, words from column {arguments.word_column})" if arguments.word_column else ""
        raise SeqTransferError(f"the text has fewer than two distinct lines{read_as}", path=text,
                               hint="drop --word-column for a plain text file" if arguments.word_column else "give more text: one sentence or tweet per line")
    return lines, [], 0


def read_sentences(arguments: argparse.Namespace) -> tuple[list[list[str]], list[str], int]:
    """(token lists, test files left out, lines left out as repeats of theirs) of ``--text``, for the
    BiLSTM LM: a raw corpus split by its own tokenizer, a text file by ``--tokenizer``."""
    from seqtransfer.data.tokenize import TOKENIZERS
    from seqtransfer.data.unlabeled import RAW_CORPORA

    lines, left_out, repeats = read_lines(arguments)
    if arguments.text in RAW_CORPORA or (Path(arguments.text).is_file() and arguments.word_column is None):
        default = RAW_CORPORA[arguments.text].tokenizer if arguments.text in RAW_CORPORA else "whitespace"
        split = TOKENIZERS[arguments.tokenizer or default]
        return [tokens for line in lines if (tokens := split(line))], left_out, repeats
    return [line.split(" ") for line in lines], left_out, repeats  # a dataset's sentences, joined by read_lines


def run_recurrent(arguments: argparse.Namespace) -> dict:
    from seqtransfer.config import TrainConfig
    from seqtransfer.workflows.recurrent_pretraining import RecurrentSettings, pretrain_recurrent

    sentences, left_out, repeats = read_sentences(arguments)
    settings = RecurrentSettings(arguments.size, arguments.vocabulary_size, arguments.softmax, arguments.held_out)
    train_config = TrainConfig(optimizer="adam", learning_rate=arguments.learning_rate, schedule="inverse_time", betas=[0.9, 0.999], gradient_clip=5.0,
                               batch_size=arguments.batch_size, max_epochs=arguments.epochs, patience=arguments.patience, seed=arguments.seed,
                               threads=arguments.threads, device=arguments.device, evaluation_batch_size=max(arguments.batch_size, 64))
    summary = pretrain_recurrent(sentences, settings, train_config, Path(arguments.output), print, show_progress=not arguments.quiet, device=arguments.device)
    summary["left_out"], summary["left_out_repeats"] = left_out, repeats
    print(f"wrote {arguments.output}: use it with model.encoder={arguments.output}")
    return summary


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.config import TrainConfig
    from seqtransfer.workflows.pretraining import LanguageModelSettings, pretrain

    check(arguments)
    if arguments.architecture == "bilstm":
        return run_recurrent(arguments)
    try:
        import tokenizers  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise SeqTransferError("pretrain-lm needs transformers and tokenizers, which are not installed", hint="pip install 'seqtransfer[encoders]'") from None
    lines, left_out, repeats = read_lines(arguments)
    if left_out:
        print(f"left out (test files): {len(left_out)} files, e.g. {left_out[0]}, and {repeats} lines of the other files that repeat one of their lines")
    settings = LanguageModelSettings(arguments.objective, arguments.vocabulary_size, arguments.hidden, arguments.layers, arguments.heads, arguments.intermediate,
                                     arguments.max_length, arguments.held_out)
    train_config = TrainConfig(optimizer="adamw", learning_rate=arguments.learning_rate, schedule="linear_warmup", weight_decay=0.01, gradient_clip=1.0,
                               batch_size=arguments.batch_size, max_epochs=arguments.epochs, patience=arguments.patience, seed=arguments.seed,
                               threads=arguments.threads, device=arguments.device, evaluation_batch_size=max(arguments.batch_size, 64))
    summary = pretrain(lines, settings, train_config, Path(arguments.output), print, show_progress=not arguments.quiet, device=arguments.device)
    summary["left_out"] = left_out
    summary["left_out_repeats"] = repeats
    print(f"wrote {arguments.output}: use it with model.encoder={arguments.output}")
    return summary


COMMAND = Command("pretrain a small LM of our own, saved as an encoder folder: a Transformer (masked or causal, its own tokenizer) or an ELMo-style BiLSTM LM",
                  arguments, run)
