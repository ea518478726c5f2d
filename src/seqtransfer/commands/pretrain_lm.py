"""`seqtransfer pretrain-lm`: a small language model of our own on tweets or news, saved as an encoder
folder: a Transformer (masked or causal, the default), an ELMo-style BiLSTM LM (``--architecture bilstm``)
or an AWD-LSTM LM (``--architecture awd-lstm``, as fastai's)."""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import not_negative, positive, share, whole
from seqtransfer.errors import SeqTransferError, warn


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--text", default="tweets_unlabeled", help="a raw corpus (default tweets_unlabeled), a text file (one sentence per line), a CoNLL file (with --word-column) or DATASET[:SPLIT] (labels ignored)"
    )
    parser.add_argument("--word-column", type=whole(1), help="a CoNLL file's word column (1-based); not for a plain text file")
    parser.add_argument("--output", required=True, help="the Hugging Face folder to write (model.encoder=FOLDER reads it); built in OUTPUT.partial, where an interrupted run resumes")
    parser.add_argument(
        "--architecture",
        choices=list(DEFAULTS),
        default="transformer",
        help="transformer (a small BERT, default), bilstm (ELMo-style: character CNN, forward and backward 2-layer LSTMs) "
        "or awd-lstm (fastai's AWD-LSTM: a word embedding, 3 weight-dropped LSTM layers, tied decoder)",
    )
    parser.add_argument("--objective", choices=["masked", "causal"], help="transformer: masked (BERT's, default) or causal (left to right) LM")
    parser.add_argument(
        "--size",
        choices=["tiny", "small", "large"],
        help="bilstm: small (ELMo-small's shape, scaled down: about 3M parameters; default), large (about 36M) or tiny (for smoke tests); "
        "awd-lstm: large (fastai's: embedding 400, 3 LSTM layers of 1152, 400; default), small (200, 576) or tiny",
    )
    parser.add_argument(
        "--softmax",
        choices=["adaptive", "full"],
        help="bilstm: adaptive (default; measured 2.5x the full softmax's training speed on the small LM, 1.2x on the large, benchmarks/recurrent_lm.py) or full softmax over the words",
    )
    parser.add_argument("--bptt", type=whole(1), help="awd-lstm: steps per chunk of the stream of concatenated sentences (default 70)")
    parser.add_argument("--tokenizer", choices=["whitespace", "tweet"], help="bilstm, awd-lstm: how a text file's lines split into tokens (default: a raw corpus's own, else whitespace)")
    parser.add_argument("--keep-test", action="store_true", help="also train on the raw corpus's test files (default: TweetEval's test tweets stay out)")
    parser.add_argument("--vocabulary-size", type=whole(1), help="transformer: BPE sub-words (default 8000); bilstm, awd-lstm: words of the softmax (default 30000, awd-lstm 60000)")
    parser.add_argument("--hidden", type=whole(1), help="transformer: hidden units of each layer (default 256)")
    parser.add_argument("--layers", type=whole(1), help="transformer: layers (default 4)")
    parser.add_argument("--heads", type=whole(1), help="transformer: attention heads; they divide --hidden (default 4)")
    parser.add_argument("--intermediate", type=whole(1), help="transformer: feed-forward units (default 1024)")
    parser.add_argument("--max-length", type=whole(2), help="transformer: sub-words per line, [CLS] and [SEP] included (default 64)")
    parser.add_argument("--held-out", type=share, default=0.02, help="share of the distinct lines kept for perplexity (default 0.02)")
    parser.add_argument("--epochs", type=whole(1), default=10, help="at most this many epochs (default 10)")
    parser.add_argument("--patience", type=whole(1), default=2, help="stop after this many epochs without a better held-out perplexity (default 2)")
    parser.add_argument("--batch-size", type=whole(1), default=64, help="lines per batch; awd-lstm: rows of the token stream (default 64)")
    parser.add_argument("--learning-rate", type=positive, help="transformer: AdamW's peak rate after a linear warm-up (default 5e-4); bilstm, awd-lstm: Adam's (default 1e-3)")
    parser.add_argument(
        "--amp",
        choices=["off", "auto", "bf16", "fp16"],
        help="bilstm, awd-lstm: mixed precision, fp32 weights (training/precision.py): off (default), bf16 (measured 1.3-1.9x faster training on a CPU with "
        "AVX512-BF16; docs/language-models.md), auto (bf16 or fp16 on a CUDA GPU, else off) or fp16 (CUDA); held-out perplexity is always computed in fp32",
    )
    add_run_options(parser, seed_help="fixes the held-out split, the masking and the weights (default 1)")


# Each architecture's defaults for the options it reads (the ones all of them read have their defaults in ``arguments``).
DEFAULTS = {
    "transformer": {"objective": "masked", "vocabulary_size": 8000, "learning_rate": 5e-4, "hidden": 256, "layers": 4, "heads": 4, "intermediate": 1024, "max_length": 64},
    "bilstm": {"size": "small", "softmax": "adaptive", "tokenizer": None, "vocabulary_size": 30000, "learning_rate": 1e-3, "amp": "off"},
    "awd-lstm": {"size": "large", "bptt": 70, "tokenizer": None, "vocabulary_size": 60000, "learning_rate": 1e-3, "amp": "off"},
}
NAMES = {"transformer": "Transformer", "bilstm": "BiLSTM", "awd-lstm": "AWD-LSTM"}


def add_run_options(parser: argparse.ArgumentParser, seed_help: str) -> None:
    """The options of how an LM's training runs (pretrain-lm's and finetune-lm's): checkpoints, seed, threads, device, data, progress bars."""
    parser.add_argument(
        "--checkpoint-minutes",
        type=not_negative,
        default=10.0,
        help="also checkpoint inside an epoch after every this many minutes of it, so that a killed run resumes there, not at the epoch's start (default 10; 0: at epoch ends only)",
    )
    parser.add_argument("--seed", type=whole(0), default=1, help=seed_help)
    parser.add_argument("--threads", type=whole(1), default=2, help="CPU threads (default 2)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    parser.add_argument("--data-dir", help="folder holding the datasets (default $SEQTRANSFER_DATA)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def fill_defaults(arguments: argparse.Namespace) -> None:
    """Each architecture's defaults for the options it reads; an option of another architecture is one line."""
    architecture = arguments.architecture
    for option in dict.fromkeys(option for defaults in DEFAULTS.values() for option in defaults):
        value = getattr(arguments, option)
        if value is not None and option not in DEFAULTS[architecture]:
            readers = [name for name, defaults in DEFAULTS.items() if option in defaults]
            flag, owners = "--" + option.replace("_", "-"), " or ".join(NAMES[name] for name in readers)
            raise SeqTransferError(
                f"{flag} {value} is {'an' if owners[0] in 'AEIOU' else 'a'} {owners} LM's option; the {NAMES[architecture]} LM does not read it",
                hint=f"drop {flag}, or use --architecture {' or '.join(readers)}",
            )
    for option, value in DEFAULTS[architecture].items():
        if getattr(arguments, option) is None:
            setattr(arguments, option, value)


def check(arguments: argparse.Namespace) -> None:
    """The options' values and the output folder: one line each before anything is read or written."""
    fill_defaults(arguments)
    hidden = arguments.hidden
    rules = [
        ("--vocabulary-size", lambda value: value >= 100, "at least 100"),
        ("--hidden", lambda value: value >= 8, "at least 8"),
        ("--layers", lambda value: value >= 1, "at least 1"),
        ("--heads", lambda value: value >= 1 and hidden % value == 0, f"at least 1 and divide --hidden {hidden}"),
        ("--intermediate", lambda value: value >= 1, "at least 1"),
        ("--max-length", lambda value: value >= 4, "at least 4"),
        ("--bptt", lambda value: value >= 2, "at least 2"),
        ("--held-out", lambda value: 0 < value < 1, "in (0, 1)"),
        ("--epochs", lambda value: value >= 1, "at least 1"),
        ("--patience", lambda value: value >= 1, "at least 1"),
        ("--batch-size", lambda value: value >= 1, "at least 1"),
        ("--learning-rate", lambda value: value > 0, "positive"),
        ("--threads", lambda value: value >= 1, "at least 1"),
        ("--word-column", lambda value: value >= 1, "at least 1 (columns count from 1)"),
    ]
    for option, holds, requirement in rules:
        given = getattr(arguments, option.removeprefix("--").replace("-", "_"))
        if given is not None and not holds(given):  # None: an option this architecture does not read
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
    from seqtransfer.corpora.unlabeled import RAW_CORPORA, read_text_lines

    text = arguments.text
    if text in RAW_CORPORA:
        return read_text_lines(text, arguments.data_dir, arguments.keep_test)
    return [" ".join(sentence) for sentence in dataset_sentences(arguments)], [], 0


def dataset_sentences(arguments: argparse.Namespace) -> list[list[str]]:
    """The token lists of ``--text`` when it names registered datasets or a file (not a raw corpus):
    each token as the file has it (a token holding a space stays one token)."""
    from seqtransfer.corpora.unlabeled import RAW_CORPORA, read_unlabeled
    from seqtransfer.data.registry import DATASETS

    text = arguments.text
    if arguments.keep_test:
        warn(f"--keep-test keeps a raw corpus's test files ({', '.join(RAW_CORPORA)}); --text {text} is not one, so it changes nothing")
    names = text.partition(":")[0].split("+")
    if not Path(text).exists() and not Path(text).suffix and "/" not in text and not all(name in DATASETS for name in names):
        raise SeqTransferError(
            f"--text {text!r} is neither a file, a raw corpus nor a registered dataset",
            hint=f"pass a text file (one sentence per line), a CoNLL file with --word-column, {', '.join(RAW_CORPORA)}, or DATASET[:SPLIT] (seqtransfer datasets list)",
        )
    sentences = [list(sentence) for sentence in read_unlabeled(text, arguments.data_dir, word_column=arguments.word_column)]
    if len({tuple(sentence) for sentence in sentences}) < 2:
        read_as = f" (read as CoNLL columns, words from column {arguments.word_column})" if arguments.word_column else ""
        raise SeqTransferError(
            f"the text has fewer than two distinct lines{read_as}",
            path=text,
            hint="drop --word-column for a plain text file" if arguments.word_column else "give more text: one sentence or tweet per line",
        )
    return sentences


def read_sentences(arguments: argparse.Namespace) -> tuple[list[list[str]], list[str], int]:
    """(token lists, test files left out, lines left out as repeats of theirs) of ``--text``, for the
    BiLSTM and AWD-LSTM LMs: a raw corpus split by its own tokenizer, a text file by ``--tokenizer``."""
    from seqtransfer.corpora.unlabeled import RAW_CORPORA
    from seqtransfer.data.tokenize import TOKENIZERS

    if arguments.text in RAW_CORPORA or (Path(arguments.text).is_file() and arguments.word_column is None):
        lines, left_out, repeats = read_lines(arguments)
        default = RAW_CORPORA[arguments.text].tokenizer if arguments.text in RAW_CORPORA else "whitespace"
        split = TOKENIZERS[arguments.tokenizer or default]
        return [tokens for line in lines if (tokens := split(line))], left_out, repeats
    return dataset_sentences(arguments), [], 0


def lm_training(arguments: argparse.Namespace, **recipe):
    """The training settings every LM command takes from its options (batch, epochs, patience, seed,
    threads, device, checkpoints), with the ``recipe`` of its LM family: optimizer, rate, schedule, clip."""
    from seqtransfer.config import TrainConfig

    return TrainConfig(
        batch_size=arguments.batch_size,
        max_epochs=arguments.epochs,
        patience=arguments.patience,
        seed=arguments.seed,
        threads=arguments.threads,
        device=arguments.device,
        checkpoint_minutes=arguments.checkpoint_minutes,
        evaluation_batch_size=max(arguments.batch_size, 64),
        **recipe,
    )


def training_precision(arguments: argparse.Namespace) -> str:
    """What a recurrent LM trains in (``--amp`` made concrete for the device): its identity and pretraining.json say so."""
    from seqtransfer.device import resolve_device
    from seqtransfer.training.precision import concrete_mode

    return concrete_mode(arguments.amp, resolve_device(arguments.device))


def adam_training(arguments: argparse.Namespace, betas: list[float], gradient_clip: float):
    """The recurrent LMs' training: Adam at a constant rate (inverse-time decay 0), early stopping on the held-out perplexity."""
    return lm_training(arguments, optimizer="adam", learning_rate=arguments.learning_rate, schedule="inverse_time", betas=betas, gradient_clip=gradient_clip, amp=training_precision(arguments))


def run_recurrent(arguments: argparse.Namespace) -> dict:
    from seqtransfer.workflows.recurrent_pretraining import RecurrentSettings, pretrain_recurrent

    settings = RecurrentSettings(arguments.size, arguments.vocabulary_size, arguments.softmax, arguments.held_out)
    return pretrain_on_words(arguments, pretrain_recurrent, settings, adam_training(arguments, [0.9, 0.999], 5.0), f"wrote {arguments.output}: use it with model.encoder={arguments.output}")


def run_awd_lstm(arguments: argparse.Namespace) -> dict:
    from seqtransfer.workflows.awd_pretraining import AwdSettings, pretrain_awd_lstm

    settings = AwdSettings(arguments.size, arguments.vocabulary_size, arguments.bptt, arguments.held_out)
    train_config = adam_training(arguments, [0.9, 0.99], 0.25)  # fastai's Adam moments; Merity et al.'s gradient clip
    return pretrain_on_words(
        arguments,
        pretrain_awd_lstm,
        settings,
        train_config,
        f"wrote {arguments.output} (an AWD-LSTM LM: use it with model.encoder={arguments.output} model.encoder_mode=finetune, e.g. model.sentence_reader=ulmfit)",
    )


def pretrain_on_words(arguments: argparse.Namespace, pretrain, settings, train_config, done: str) -> dict:
    """A word-level LM (``pretrain``: the BiLSTM's or the AWD-LSTM's workflow) on ``read_sentences``; ``done`` is printed at the end."""
    sentences, left_out, repeats = read_sentences(arguments)
    summary = pretrain(sentences, settings, train_config, Path(arguments.output), print, show_progress=not arguments.quiet, device=arguments.device)
    summary["left_out"], summary["left_out_repeats"] = left_out, repeats
    print(done)
    return summary


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.workflows.pretraining import LanguageModelSettings, pretrain

    check(arguments)
    if arguments.architecture != "transformer":
        return {"bilstm": run_recurrent, "awd-lstm": run_awd_lstm}[arguments.architecture](arguments)
    try:
        import tokenizers  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise SeqTransferError("pretrain-lm needs transformers and tokenizers, which are not installed", hint="pip install 'seqtransfer[encoders]'") from None
    lines, left_out, repeats = read_lines(arguments)
    if left_out:
        print(f"left out (test files): {len(left_out)} files, e.g. {left_out[0]}, and {repeats} lines of the other files that repeat one of their lines")
    settings = LanguageModelSettings(
        arguments.objective, arguments.vocabulary_size, arguments.hidden, arguments.layers, arguments.heads, arguments.intermediate, arguments.max_length, arguments.held_out
    )
    train_config = lm_training(arguments, optimizer="adamw", learning_rate=arguments.learning_rate, schedule="linear_warmup", weight_decay=0.01, gradient_clip=1.0)
    summary = pretrain(lines, settings, train_config, Path(arguments.output), print, show_progress=not arguments.quiet, device=arguments.device)
    summary["left_out"] = left_out
    summary["left_out_repeats"] = repeats
    print(f"wrote {arguments.output}: use it with model.encoder={arguments.output}")
    return summary


COMMAND = Command("pretrain a small LM of our own, saved as an encoder folder: a Transformer (masked or causal, its own tokenizer), an ELMo-style BiLSTM LM or an AWD-LSTM LM", arguments, run)
