"""`seqtransfer finetune-lm LM --text TEXT --output DIR`: a pretrained LM continued on target-domain
text (ULMFiT's second stage; domain-adaptive pretraining), held-out perplexity before and after."""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import positive, share, whole
from seqtransfer.commands.pretrain_lm import add_run_options, check_output, lm_training, read_sentences, training_precision
from seqtransfer.errors import SeqTransferError


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("language_model", metavar="LM", help="the LM folder to continue: one pretrain-lm wrote (bilstm, awd-lstm, transformer), a Hugging Face Transformer folder, or minilm / mpnet")
    parser.add_argument("--text", required=True, help="target-domain text: a raw corpus (tweets_unlabeled), a text file (one sentence per line), a CoNLL file (with --word-column) or DATASET[:SPLIT]")
    parser.add_argument("--word-column", type=whole(1), help="a CoNLL file's word column (1-based)")
    parser.add_argument("--tokenizer", choices=["whitespace", "tweet"], help="how a text file's lines split into tokens (default: a raw corpus's own, else whitespace)")
    parser.add_argument("--keep-test", action="store_true", help="also train on the raw corpus's test files")
    parser.add_argument("--output", required=True, help="the continued LM's folder (new); built in OUTPUT.partial, where an interrupted run resumes")
    parser.add_argument("--held-out", type=share, default=0.1, help="share of the target lines kept for perplexity (default 0.1)")
    parser.add_argument("--epochs", type=whole(1), default=5, help="at most this many epochs (default 5)")
    parser.add_argument("--patience", type=whole(1), default=2, help="stop after this many epochs without a better held-out perplexity (default 2)")
    parser.add_argument("--batch-size", type=whole(1), default=32, help="sentences per batch (default 32)")
    parser.add_argument("--learning-rate", type=positive, help="the top layer group's peak rate (default 1e-3 for our recurrent LMs, 1e-4 for a Transformer)")
    parser.add_argument("--discriminative-factor", type=positive, default=2.6, help="each lower layer group's rate is the one above divided by this (ULMFiT: 2.6)")
    parser.add_argument(
        "--amp",
        choices=["off", "auto", "bf16", "fp16"],
        default="off",
        help="our recurrent LMs (bilstm, awd-lstm): mixed precision, fp32 weights, as pretrain-lm --amp (default off); held-out perplexity in fp32",
    )
    add_run_options(parser, seed_help="fixes the held-out split, the dropout and the masking (default 1)")


def check(arguments: argparse.Namespace) -> None:
    rules = [
        ("--held-out", 0 < arguments.held_out < 1, "in (0, 1)"),
        ("--epochs", arguments.epochs >= 1, "at least 1"),
        ("--patience", arguments.patience >= 1, "at least 1"),
        ("--batch-size", arguments.batch_size >= 1, "at least 1"),
        ("--learning-rate", arguments.learning_rate is None or arguments.learning_rate > 0, "positive"),
        ("--discriminative-factor", arguments.discriminative_factor >= 1, "at least 1"),
        ("--threads", arguments.threads >= 1, "at least 1"),
    ]
    for option, holds, requirement in rules:
        if not holds:
            raise SeqTransferError(f"{option} must be {requirement}, got {getattr(arguments, option.removeprefix('--').replace('-', '_'))}", hint=f"pass {option} {requirement}")
    check_output(arguments.output)


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.workflows.lm_finetuning import continue_language_model, source_settings
    from seqtransfer.workflows.transformer_continuation import is_transformer_folder

    check(arguments)
    if arguments.amp != "off" and is_transformer_folder(arguments.language_model):
        raise SeqTransferError(f"--amp {arguments.amp} is for our recurrent LMs (bilstm, awd-lstm); a Transformer is continued in fp32", hint="drop --amp")
    settings = source_settings(arguments.language_model, arguments.held_out, arguments.discriminative_factor)
    learning_rate = arguments.learning_rate or (1e-4 if is_transformer_folder(arguments.language_model) else 1e-3)  # DAPT's rate for a Transformer; ULMFiT's for an LSTM
    sentences, _, _ = read_sentences(arguments)
    train_config = lm_training(arguments, optimizer="adam", learning_rate=learning_rate, schedule="slanted_triangular", betas=[0.9, 0.99], gradient_clip=5.0, amp=training_precision(arguments))
    summary = continue_language_model(arguments.language_model, sentences, settings, train_config, Path(arguments.output), print, show_progress=not arguments.quiet, device=arguments.device)
    print(f"wrote {arguments.output}: use it with model.encoder={arguments.output}")
    return summary


COMMAND = Command("continue a pretrained LM on target-domain text (ULMFiT's second stage), with discriminative and slanted triangular rates", arguments, run)
