"""The project's own checks, each run as a user runs it, from the repository root:

    ruff check .                 # lint (pyproject.toml, [tool.ruff])
    ruff format --check .        # formatting
    mypy perfmodel               # types (pyproject.toml, [tool.mypy])
    mkdocs build --strict        # the documentation: no broken link, every documented name exists

Each must exit 0; a failure shows the tool's own output. The four start together (subprocesses) when
the first of these tests runs, so the slowest sets the time. The site is built into a temporary
directory, so a test run leaves the checkout as it was (the tools' caches are git-ignored).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 600


def _checks(site: Path) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "ruff check": [py, "-m", "ruff", "check", "."],
        "ruff format": [py, "-m", "ruff", "format", "--check", "."],
        "mypy": [py, "-m", "mypy", "perfmodel"],
        "mkdocs": [py, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
    }


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    procs = {
        name: subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, cmd in _checks(tmp_path_factory.mktemp("site") / "site").items()
    }
    yield procs
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("check", ["ruff check", "ruff format", "mypy", "mkdocs"])
def test_the_check_passes(check, running):
    proc = running[check]
    try:
        output, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        pytest.fail(f"{check} did not finish in {TIMEOUT_S} s:\n{output}")
    assert proc.returncode == 0, f"`{' '.join(proc.args[2:])}` exited {proc.returncode}:\n{output[-20000:]}"
