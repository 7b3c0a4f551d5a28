"""The README and the documentation pages (docs/) say what the code does.

* Every command-line example runs as written. A ```bash block that holds a ``perfmodel ...`` or
  ``python -m perfmodel ...`` command is run whole, with bash (``set -euo pipefail``), in a temporary
  directory that holds the bundled data (``data/``, ``examples/``); the blocks of one page run in
  order, in one directory, so a later command can use an earlier one's output. ``perfmodel`` and
  ``python`` there are this checkout's (a shim on PATH), whether or not it is installed. The ```python
  blocks of a page run the same way, as one script.
* The explicit rule for what cannot run there: a command line that ends in
  ``# not run by the docs test: REASON`` (a Python block whose first line is that comment) is left
  out, and reported here as a skipped test with its reason, so it is never skipped silently.
* Every ``perfmodel.NAME`` and every file path of the repository the pages name exists.
* The command-line page's reference, generated from the parser (scripts/docs_hooks.py), lists every
  command and option.

The pages run concurrently (one thread per page, each running its commands as subprocesses).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: The marker of a command the test leaves out, and why.
SKIP = re.compile(r"#\s*not run by the docs test:\s*(.+?)\s*$")
CLI = re.compile(r"^(perfmodel|python -m perfmodel)(\s|$)")
#: What the examples' working directory holds: the checkout's folders they name.
LINKED = ("data", "examples")
TIMEOUT_S = 600


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@dataclass
class Block:
    """A fenced code block of a page: its language, first line number and logical lines."""

    lang: str
    line: int
    lines: list[tuple[int, str]]  # (line number, text with continuation lines joined)


@dataclass
class Page:
    path: Path
    bash: list[str] = field(default_factory=list)  # runnable bash blocks, in order
    python: list[str] = field(default_factory=list)  # runnable Python blocks, in order
    skipped: list[tuple[int, str, str]] = field(default_factory=list)  # (line, command, reason)


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a Markdown text (```lang ... ```), continuation lines joined."""
    out, current, lang, start = [], None, "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        fence = re.match(r"^\s*```(\w*)", line)
        if fence and current is None:
            current, lang, start = [], fence.group(1), number
            continue
        if fence and current is not None:
            out.append(Block(lang, start, _logical(current)))
            current = None
            continue
        if current is not None:
            current.append((number, line))
    return out


def _logical(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, text in lines:
        if pending is not None:
            pending = (pending[0], pending[1][:-1].rstrip() + " " + text.strip())
        else:
            pending = (number, text)
        if not pending[1].rstrip().endswith("\\"):
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def page_examples(path: Path) -> Page:
    page = Page(path)
    for block in blocks(path.read_text()):
        if block.lang == "bash" and any(CLI.match(text.strip()) for _, text in block.lines):
            keep = []
            for number, text in block.lines:
                marked = SKIP.search(text)
                if marked:
                    page.skipped.append((number, text.split("#")[0].strip(), marked.group(1)))
                else:
                    keep.append(text)
            if any(CLI.match(text.strip()) for text in keep):
                page.bash.append("\n".join(keep))
        elif block.lang == "python" and block.lines:
            first = block.lines[0][1]
            marked = SKIP.search(first)
            if marked:
                page.skipped.append((block.line, "python block", marked.group(1)))
            else:
                page.python.append("\n".join(text for _, text in block.lines))
    return page


EXAMPLES = {_rel(p): page_examples(p) for p in PAGES}
RUNNABLE = [name for name, page in EXAMPLES.items() if page.bash or page.python]
MARKED = [(name, line, command, reason) for name, page in EXAMPLES.items() for line, command, reason in page.skipped]


def _workspace(base: Path) -> dict:
    """A directory with the checkout's data, and an environment whose ``perfmodel`` and ``python``
    are this checkout's."""
    work, shims = base / "work", base / "bin"
    work.mkdir()
    shims.mkdir()
    for name in LINKED:
        (work / name).symlink_to(ROOT / name)
    for name, target in (("perfmodel", f'"{sys.executable}" -m perfmodel'), ("python", f'"{sys.executable}"')):
        shim = shims / name
        shim.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHOME"}
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return {"cwd": work, "env": env}


def run_page(name: str, base: Path) -> str | None:
    """Run a page's examples; None when all ran, else what failed and its output."""
    page = EXAMPLES[name]
    where = _workspace(base)
    runs = [["bash", "-c", "set -euo pipefail\n" + script] for script in page.bash]
    if page.python:
        runs.append([sys.executable, "-c", "\n\n".join(textwrap.dedent(b) for b in page.python)])
    for command in runs:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, **where)
        if proc.returncode != 0:
            return (
                f"{name}: exit {proc.returncode} running\n{command[-1]}\n"
                f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
            )
    return None


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory):
    """Every page's examples, started together (a thread per page), as futures by page."""
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    futures = {name: pool.submit(run_page, name, tmp_path_factory.mktemp("docs")) for name in RUNNABLE}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("page", RUNNABLE)
def test_the_examples_run_as_written(page, example_runs):
    failure = example_runs[page].result()
    assert failure is None, failure


@pytest.mark.parametrize(("page", "line", "command", "reason"), MARKED, ids=[f"{m[0]}:{m[1]}" for m in MARKED])
def test_a_marked_example_is_skipped_with_its_reason(page, line, command, reason):
    assert reason, f"{page}:{line}: the marker needs a reason"
    pytest.skip(f"{page}:{line} `{command[:80]}`: {reason}")


def test_the_readme_is_short_and_its_tour_runs():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; keep it to 150 and move the rest to docs/"
    assert "README.md" in RUNNABLE and EXAMPLES["README.md"].bash


# -- names and paths -----------------------------------------------------------------------------

NAME = re.compile(r"`(perfmodel(?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(r"`((?:perfmodel|benchmarks|scripts|tests|ui|pages|data|examples|docs)/[\w./*-]*\w)`")


def _resolve(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _named(pattern: re.Pattern) -> list[tuple[str, str]]:
    return sorted({(_rel(p), m) for p in PAGES for m in pattern.findall(p.read_text())})


@pytest.mark.parametrize(("page", "name"), _named(NAME))
def test_every_python_name_the_pages_give_exists(page, name):
    assert _resolve(name), f"{page} names `{name}`, which perfmodel does not have"


@pytest.mark.parametrize(("page", "path"), _named(PATH))
def test_every_repository_path_the_pages_give_exists(page, path):
    assert list(ROOT.glob(path)), f"{page} names `{path}`, which is not in the repository"


# -- the generated command-line reference ----------------------------------------------------------


def test_the_cli_reference_lists_every_command_and_option():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_hooks
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from perfmodel.cli import build_parser

    assert docs_hooks.MARKER in (ROOT / "docs" / docs_hooks.CLI_PAGE).read_text()
    text = docs_hooks.cli_reference()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        assert f"## `{name}`" in text, name
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in text, f"{name} {option} is missing from the generated reference"
            if not action.option_strings:
                assert f"`{action.metavar or action.dest}`" in text, f"{name}'s argument {action.dest}"
    # Markdown's own characters in help texts are escaped: `c_k * term_k` is no emphasis
    assert "c\\_k \\* term\\_k" in text
