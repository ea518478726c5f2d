"""Command line: ``seqtransfer COMMAND ...``; each command is one function in COMMANDS.

``run(argv)`` returns the command's result (used by tests in-process); ``main(argv)`` turns a
:class:`SeqTransferError` into one line on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from collections.abc import Sequence

from seqtransfer.errors import SeqTransferError, SeqTransferWarning

OVERRIDE = re.compile(r"^[A-Za-z_]+\.[A-Za-z_][A-Za-z0-9_]*=")  # section.key=value


class CommandLineParser(argparse.ArgumentParser):
    """argparse's parser, raising its ArgumentError (a value that is not a number, or out of its range:
    ``commands/numbers.py``; an unknown choice) instead of exiting, so that ``run`` turns it into
    seqtransfer's one error line. Sub-command parsers are of the same class."""

    def __init__(self, *arguments, **options) -> None:
        super().__init__(*arguments, exit_on_error=False, **options)


def build_parser() -> argparse.ArgumentParser:
    from seqtransfer.commands import COMMANDS

    parser = CommandLineParser(prog="seqtransfer", description="Neural transfer learning for sequence labelling.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help, description=command.help)
        command.arguments(subparser)
        subparser.set_defaults(function=command.run)
    return parser


NAME_LISTS = ("--only", "--targets")  # their values are method or target names, some of which start with '-' ("-learnVect")


def joined_name_lists(argv: list[str]) -> list[str]:
    """``--only -learnVect`` as ``--only=-learnVect``: argparse would take a value starting with '-' for an option."""
    joined: list[str] = []
    for item in argv:
        if joined and joined[-1] in NAME_LISTS:
            joined[-1] = f"{joined[-1]}={item}"
        else:
            joined.append(item)
    return joined


def help_command(argv: list[str]) -> str:
    """``seqtransfer``, with the command (and the analysis) ``argv`` names, whose --help shows the options."""
    from seqtransfer.commands import COMMANDS

    words = [item for item in argv[:2] if not item.startswith("-")]
    if not words or words[0] not in COMMANDS:
        return "seqtransfer"
    return " ".join(["seqtransfer", *(words if words[0] == "analyze" else words[:1])])


def run(argv: Sequence[str] | None = None):
    """Parse ``argv`` and run the command; returns its result.

    Dotted overrides (``train.learning_rate=0.01``) may stand anywhere on the line, also after
    options: argparse leaves those after an option unparsed, and they join the overrides here.
    """
    parser = build_parser()
    argv = joined_name_lists(sys.argv[1:] if argv is None else list(argv))
    try:
        arguments, unparsed = parser.parse_known_args(argv)
    except argparse.ArgumentError as error:
        raise SeqTransferError(str(error), hint=f"see {help_command(argv)} --help") from None
    overrides = [item for item in unparsed if OVERRIDE.match(item)]
    if hasattr(arguments, "overrides") and overrides:
        arguments.overrides = [*arguments.overrides, *overrides]
        unparsed = [item for item in unparsed if item not in overrides]
    if unparsed:
        parser.parse_args(argv)  # argparse's own message and exit code for what nobody reads
    return arguments.function(arguments)


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001 - warnings' hook
    """seqtransfer's own warnings as one line on stderr; others as Python shows them."""
    if issubclass(category, SeqTransferWarning):
        print(f"seqtransfer: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: exit code 0 on success, 2 on a user error (one line on stderr)."""
    warnings.showwarning = show_warning
    try:
        run(argv)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at the interpreter's exit
    except SeqTransferError as error:
        print(f"seqtransfer: error: {error}", file=sys.stderr)
        return 2
    except MemoryError:
        print("seqtransfer: error: the machine ran out of memory (fix: lower the model's sizes or the batch size)", file=sys.stderr)
        return 2
    except RuntimeError as error:
        if "DefaultCPUAllocator" not in str(error):
            raise
        wanted = str(error).partition("you tried to allocate ")[2].split(" bytes")[0]
        size = f" ({int(wanted) / 2**30:,.1f} GB asked for at once)" if wanted.isdigit() else ""
        print(f"seqtransfer: error: the machine ran out of memory{size} (fix: lower the model's sizes or the batch size)", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`seqtransfer experiment list | head`): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that Python's final flush does not fail again
        return 141
    except OSError as error:  # the file system refused (a folder where a file is expected, no permission, a full disk)
        where = f"{error.filename}: " if error.filename else ""
        print(f"seqtransfer: error: {where}{error.strerror or error} (fix: check the path and its permissions)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("seqtransfer: interrupted (a training run resumes from its last epoch when started again)", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
