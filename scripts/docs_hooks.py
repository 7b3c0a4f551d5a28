"""MkDocs hooks (``hooks:`` in mkdocs.yml): the command-line reference, rendered from the parser.

``docs/cli.md`` holds the words around the reference and the marker :data:`MARKER`; at build time
the marker becomes one section per command of :func:`perfmodel.cli.build_parser` (its usage, its
description and a table of every argument and option with its default), so the page cannot drift
from what ``perfmodel --help`` says. ``tests/test_docs.py`` checks that every option of the parser is
on the rendered page.

    mkdocs build --strict     # or: mkdocs serve
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Where docs/cli.md wants the generated reference.
MARKER = "<!-- cli-reference -->"
#: The page that holds the marker.
CLI_PAGE = "cli.md"
#: The usage lines' width (argparse wraps them).
WIDTH = 78


def _markdown_text(text: str) -> str:
    """A help text as Markdown: inline ``code`` kept, everything else with Markdown's own characters
    escaped (a ``*`` in ``c_k * term_k`` is not emphasis, a ``|`` does not end a table cell)."""
    pieces = re.split(r"(`[^`]*`)", " ".join(text.split()))
    out = []
    for piece in pieces:
        if piece.startswith("`") and piece.endswith("`") and len(piece) > 1:
            out.append(piece.replace("|", "\\|"))
        else:
            out.append(re.sub(r"([\\*_\[\]<>|#])", r"\\\1", piece))
    return "".join(out)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _default(action: argparse.Action) -> str:
    if action.default in (None, False, [], "", argparse.SUPPRESS) or action.required:
        return ""
    return f"`{action.default}`"


def _invocation(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """``--lambda L`` / ``DATA`` as the help shows it, the choices spelled out."""
    text = formatter._format_action_invocation(action)
    return f"`{text}`"


def command_sections(parser: argparse.ArgumentParser, level: int = 2) -> list[str]:
    """Markdown, one section per subcommand: heading, what it does, usage, and the arguments table."""
    sub = _subparsers(parser)
    summaries = {a.dest: a.help or "" for a in sub._choices_actions}
    out = []
    for name, command in sub.choices.items():
        formatter = argparse.HelpFormatter(command.prog, width=WIDTH, max_help_position=WIDTH)
        formatter.add_usage(command.usage, command._actions, command._mutually_exclusive_groups, prefix="")
        usage = formatter.format_help().strip()
        out.append(f"{'#' * level} `{name}`\n")
        summary = summaries.get(name, "")
        if summary:
            out.append(_markdown_text(summary[0].upper() + summary[1:]) + ".\n")
        if command.description:
            out.append(_markdown_text(command.description) + "\n")
        out.append(f"```text\n{usage}\n```\n")
        rows = []
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            helptext = formatter._expand_help(action) if action.help else ""
            required = " (required)" if action.required and action.option_strings else ""
            rows.append(
                f"| {_invocation(action, formatter)}{required} | {_default(action)} | {_markdown_text(helptext)} |"
            )
        if rows:
            out.append("| argument or option | default | what it does |\n|---|---|---|\n" + "\n".join(rows) + "\n")
        else:
            out.append("No arguments.\n")
    return out


def cli_reference(prog: str = "perfmodel") -> str:
    """The whole generated reference: the top-level usage and every command."""
    if str(ROOT) not in sys.path:  # this checkout's perfmodel (MkDocs restores sys.path after loading hooks)
        sys.path.insert(0, str(ROOT))
    from perfmodel.cli import build_parser

    parser = build_parser(prog)
    formatter = argparse.HelpFormatter(prog, width=WIDTH, max_help_position=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    head = [
        f"```text\n{formatter.format_help().strip()}\n```\n",
        _markdown_text(parser.description or "") + "\n",
    ]
    return "\n".join(head + command_sections(parser, level=3))


def on_page_markdown(markdown: str, page, config, files) -> str:
    """MkDocs event: put the generated reference where the CLI page has its marker."""
    if page.file.src_uri != CLI_PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/{CLI_PAGE} lost its marker {MARKER!r}: the generated reference has nowhere to go")
    return markdown.replace(MARKER, cli_reference())
