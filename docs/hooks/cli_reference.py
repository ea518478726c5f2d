"""MkDocs hook: the CLI reference page (``cli.md``), rendered at build time from the argparse parsers.

``seqtransfer.cli.build_parser()`` builds the parser of every command in ``seqtransfer.commands``;
this hook walks it (sub-commands of sub-commands included, e.g. ``analyze transfer``) and writes
each command's usage, description, positional arguments and options as Markdown. Nothing is copied
by hand: a new option appears in the site at the next build. Registered in ``mkdocs.yml`` (``hooks:``).
"""

from __future__ import annotations

import argparse
import re

from mkdocs.structure.files import File, Files

PAGE = "cli.md"
WIDTH = 100  # usage lines wrapped at a fixed width, whatever the terminal building the site
MARKDOWN_SPECIAL = re.compile(r"([\\*_\[\]<>])")


def markdown_text(text: str) -> str:
    """Help text as Markdown: its `code spans` kept, the characters Markdown would read elsewhere escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") and part.endswith("`") and len(part) > 1 else MARKDOWN_SPECIAL.sub(r"\\\1", part) for part in parts)


def formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog=parser.prog, width=WIDTH)


def usage(parser: argparse.ArgumentParser) -> str:
    help_formatter = formatter(parser)
    help_formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return help_formatter.format_help().strip()


def expanded_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help as ``--help`` prints it (``%(default)s`` and the like filled in), on one line."""
    if not action.help:
        return ""
    try:
        text = formatter(parser)._expand_help(action)
    except (KeyError, TypeError, ValueError):
        text = action.help
    return " ".join(text.split())


def invocation(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """``--output OUTPUT``, ``-n N, --number N`` or a positional's metavar, as ``--help`` shows it."""
    help_formatter = formatter(parser)
    if not action.option_strings:
        return help_formatter._metavar_formatter(action, action.dest)(1)[0]
    return help_formatter._format_action_invocation(action)


def details(action: argparse.Action, shown: str) -> str:
    """Required, choices (unless ``shown``, the invocation, lists them) and a default worth showing (not None, False or suppressed)."""
    notes = []
    if action.option_strings and action.required:
        notes.append("required")
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction) and "{" not in shown:
        notes.append("choices: " + ", ".join(f"`{choice}`" for choice in action.choices))
    default = action.default
    shown_elsewhere = action.help and "%(default)" in action.help
    if default not in (None, False, [], argparse.SUPPRESS) and not isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction)) and not shown_elsewhere:
        notes.append(f"default: `{default}`")
    return f" ({'; '.join(notes)})" if notes else ""


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help, parser) of each sub-command, in the order the parser lists them."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                found.append((name, helps.get(name, ""), subparser))
    return found


def anchor(prog: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", prog.lower()).strip("-")


def argument_lines(parser: argparse.ArgumentParser) -> list[str]:
    positionals = [action for action in parser._actions if not action.option_strings and not isinstance(action, argparse._SubParsersAction)]
    options = [action for action in parser._actions if action.option_strings and action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction)]
    lines: list[str] = []
    for title, actions in (("Arguments", positionals), ("Options", options)):
        if not actions:
            continue
        lines += [f"**{title}**", ""]
        for action in actions:
            shown = invocation(parser, action)
            lines.append(f"- `{shown}`: {markdown_text(expanded_help(parser, action))}{details(action, shown)}")
        lines.append("")
    return lines


def command_section(parser: argparse.ArgumentParser, help_text: str, level: int) -> list[str]:
    lines = [f"{'#' * level} `{parser.prog}` {{#{anchor(parser.prog)}}}", ""]
    description = parser.description or help_text
    if description:
        lines += [markdown_text(" ".join(description.split())), ""]
    lines += ["```text", usage(parser), "```", ""]
    children = subcommands(parser)
    if children:
        lines += ["| sub-command | what it does |", "|---|---|"]
        lines += [f"| [`{child.prog}`](#{anchor(child.prog)}) | {markdown_text(child_help).replace('|', '&#124;')} |" for _, child_help, child in children]
        lines.append("")
    lines += argument_lines(parser)
    for _, child_help, child in children:
        lines += command_section(child, child_help, min(level + 1, 4))
    return lines


def render() -> str:
    from seqtransfer.cli import build_parser  # torch-free: `seqtransfer --help` does not import torch either

    parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        "Generated from the argparse parsers (`seqtransfer.cli.build_parser()`) each time the site is built, so it",
        "matches `seqtransfer COMMAND --help` of this version. Every command that trains also takes dotted",
        "overrides (`section.key=value`, e.g. `train.learning_rate=0.01`) anywhere on its line.",
        "",
        "```text",
        usage(parser),
        "```",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    children = subcommands(parser)
    lines += [f"| [`{name}`](#{anchor(child.prog)}) | {markdown_text(child_help).replace('|', '&#124;')} |" for name, child_help, child in children]
    lines.append("")
    for _, child_help, child in children:
        lines += command_section(child, child_help, 2)
    return "\n".join(lines) + "\n"


def on_files(files: Files, config) -> Files:  # noqa: ANN001 - MkDocs' hook signature
    files.append(File.generated(config, PAGE, content=render()))
    return files
