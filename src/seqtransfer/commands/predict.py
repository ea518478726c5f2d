"""`seqtransfer predict`: tag or parse raw text (one sentence per line), a CoNLL or a CoNLL-U file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import whole
from seqtransfer.data.tokenize import TOKENIZERS
from seqtransfer.errors import SeqTransferError, warn


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_directory", metavar="RUN_DIR", help="a run directory written by `seqtransfer train` (or a folder of models that predict together: `seqtransfer ensemble`'s, a self-labelling run's)"
    )
    parser.add_argument("input", nargs="?", default="-", help="input file (default: standard input)")
    parser.add_argument(
        "--format",
        choices=["auto", "text", "conll", "conllu", "tsv"],
        default="auto",
        help="text: one sentence per line; tsv: a header naming a text field (and text_b for pairs), other fields ignored; auto (default): by the file's extension (.conllu, .conll, .tsv), else text",
    )
    parser.add_argument("--tokenizer", choices=list(TOKENIZERS), default="whitespace", help="how to split text lines")
    parser.add_argument("--columns", help="column names of a CoNLL input, e.g. word or word,pos")
    parser.add_argument("--separator", choices=["auto", "tab", "space"], default="auto", help="field separator of a CoNLL input (default auto: TAB if token lines hold TABs)")
    parser.add_argument("--device", default="auto", help="auto (first GPU, else CPU), cpu, cuda, cuda:N or mps")
    parser.add_argument("--batch-size", type=whole(1), default=256, help="sentences per batch (default 256)")
    add_amp_option(parser)
    parser.add_argument("--transliterate", choices=["sr"], help="read Serbian Cyrillic input as Latin script (the output keeps the input's words)")
    parser.add_argument("--output", help="write here (atomically) instead of standard output (a parser writes CoNLL-U)")


def add_amp_option(parser: argparse.ArgumentParser) -> None:
    """``--amp``, the precision a fine-tuned encoder predicts in (predict and evaluate)."""
    parser.add_argument(
        "--amp",
        choices=["off", "auto", "bf16", "fp16"],
        default="off",
        help="a fine-tuned encoder's precision: off (fp32, the default), bf16 (faster on a CPU with bf16 instructions or a GPU; "
        "a few predictions may differ from fp32's), fp16 (CUDA), auto (a CUDA GPU's half precision, else fp32)",
    )


def read_text(path: str, tokenize) -> list[list[str]]:
    """One sentence per line; blank lines (paragraph breaks) are left out with a warning naming them."""
    from seqtransfer.data.corpus import decode_lines

    name = "<stdin>" if path == "-" else path
    data = sys.stdin.buffer.read() if path == "-" else _read_bytes(path)
    sentences, blank = [], []
    for number, line in enumerate(decode_lines(data, Path(name), "utf-8"), start=1):
        tokens = tokenize(line)
        if tokens:
            sentences.append(tokens)
        else:
            blank.append(number)
    if not sentences:
        raise SeqTransferError("no sentences in the input", path=name, hint="give one sentence per line")
    if blank:
        shown = ", ".join(map(str, blank[:5])) + (", ..." if len(blank) > 5 else "")
        warn(f"{name}: {len(blank)} blank line{'s' if len(blank) > 1 else ''} left out (line{'s' if len(blank) > 1 else ''} {shown}): the output has one sentence per non-blank input line")
    return sentences


def _read_bytes(path: str) -> bytes:
    file_path = Path(path)
    if file_path.is_dir():
        raise SeqTransferError("the input is a folder, not a file", path=path, hint="pass the path of a text file inside it")
    if not file_path.is_file():
        raise SeqTransferError("input file not found", path=path, hint="check the path, or pipe text on standard input")
    return file_path.read_bytes()


def read_sentences(arguments: argparse.Namespace, tokenize) -> list:
    """The input as :class:`Sentence` objects (CoNLL-U sentences keep every column and comment)."""
    from seqtransfer.data.corpus import Sentence

    file_format = input_format(arguments.format, arguments.input, arguments.columns)
    if file_format == "text":
        return [Sentence(tokens) for tokens in read_text(arguments.input, tokenize)]
    if arguments.input == "-":
        shown = {"conll": "CoNLL", "conllu": "CoNLL-U", "tsv": "TSV"}[file_format]
        raise SeqTransferError(f"{shown} input must be a file", hint="pass the file path instead of piping it (or --format text for raw text)")
    if file_format == "tsv":
        return read_tsv_texts(arguments.input)
    if file_format == "conllu":
        from seqtransfer.data.conllu import read_conllu

        return read_conllu(arguments.input)
    from seqtransfer.data.conll import read_conll

    columns = arguments.columns.split(",") if arguments.columns else None
    return read_conll(arguments.input, columns, separator=arguments.separator)


def input_format(declared: str, path: str, columns: str | None = None) -> str:
    """The input's format: the declared one, or for ``auto`` the file's extension's (a CoNLL file
    read as raw text would make every token line a sentence); with ``--columns``, a column file
    of any other extension (standard input then gets the "must be a file" error)."""
    if declared != "auto":
        return declared
    from seqtransfer.data.registry import CONLLU_EXTENSIONS

    suffix = Path(path).suffix.lower()
    if suffix in CONLLU_EXTENSIONS:
        return "conllu"
    if columns or suffix == ".conll":  # --columns names a column file's columns, whatever its extension (.tsv NER files too)
        return "conll"
    return "tsv" if suffix == ".tsv" else "text"


def read_tsv_texts(path: str) -> list:
    """The sentences (or pairs) of a TSV file whose header names a ``text`` field (and ``text_b``);
    its other fields (a label, an id) are read and not used."""
    from seqtransfer.data.tsv import read_tsv_sentences

    return read_tsv_sentences(path, None, named_fields=True)


def input_tags(predictor, arguments: argparse.Namespace, sentences: list) -> list | None:
    """The input's own tags, for a model that reads a tag column and has no tagger (None otherwise)."""
    vocabularies = predictor.run.vocabularies
    if vocabularies.tags is None or vocabularies.tagger:
        return None
    from seqtransfer.data.tag_feature import feature_tags

    return feature_tags(vocabularies, [sentence.tokens for sentence in sentences], None if input_format(arguments.format, arguments.input, arguments.columns) == "text" else sentences)


def run(arguments: argparse.Namespace) -> list:
    from seqtransfer.files import write_text
    from seqtransfer.predictor import load

    predictor = load(arguments.run_directory, arguments.tokenizer, arguments.device, arguments.batch_size, arguments.transliterate, arguments.amp)
    sentences = read_sentences(arguments, predictor.tokenize)
    predicted = predictor.predict_raw([sentence.tokens for sentence in sentences], input_tags(predictor, arguments, sentences))
    text = predictor.kind.format_output(sentences, predicted)
    if arguments.output:
        if Path(arguments.output).is_dir():
            raise SeqTransferError("--output is a folder", path=arguments.output, hint="give a file path for the predictions")
        write_text(arguments.output, text)
    else:
        sys.stdout.write(text)
    return [predictor.kind.for_user(prediction) for prediction in predicted]


COMMAND = Command("tag or parse raw text, a CoNLL or a CoNLL-U file with a saved model", arguments, run)
