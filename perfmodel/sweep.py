"""Measure a user's command over a grid of configurations: ``python -m perfmodel sweep``.

The command is a template with ``{name}`` placeholders, one per grid factor::

    run_sweep("python train.py --workers {p} --batch-size {b}",
              {"p": ["1", "2", "4"], "b": ["32", "64"]}, repeat=3, out="timings.csv")

How it measures
    * Configurations run strictly one at a time (never concurrently: that would spoil the timings).
      The order is repetition-major: every configuration once, then every configuration again, so slow
      drifts of the machine spread over all configurations instead of biasing one.
    * The time is the wall clock of the whole process (``time.perf_counter`` around starting the process
      and waiting for it), in seconds: no instrumentation of the job is needed.
    * The template is split with :func:`shlex.split` first and placeholders are substituted inside each
      argument, so a value is always one argument and is never interpreted by a shell. With
      ``shell=True`` the substituted string is run by ``/bin/sh`` instead (the user's choice).
      ``{{`` and ``}}`` stand for literal braces.
    * An optional warm-up run (the first configuration still to do; not recorded) precedes the sweep.
    * A run that exceeds ``timeout`` seconds is killed (its whole process group on POSIX). The time is
      taken when the job's own process exits, and the timeout holds even when a process the job started
      keeps its stderr open.
    * SIGTERM or SIGINT to the sweep (``timeout``, ``kill``, systemd, batch schedulers, Ctrl-C) is passed
      on to the running job's process group; the job gets :data:`TERM_GRACE_S` seconds to exit (then
      SIGKILL), the run is recorded as ``interrupted`` and the sweep stops, so a resumed sweep never runs
      beside a job of the old one.

What it records (one CSV row per run, see :data:`FIXED_COLUMNS`)
    one column per grid factor (the value as given), ``repetition`` (1-based), ``time_s``, ``status``
    (``ok`` = exit code 0, ``failed`` = non-zero exit code, the program could not be started, or it
    exited leaving processes behind; ``timeout``; ``interrupted`` = the sweep was stopped by a signal),
    ``exit_code``, ``stderr_tail`` (last 400 characters, newlines shown as `` | ``, other control
    characters escaped as ``\\xNN``; only the last :data:`STDERR_KEEP_BYTES` are kept while it runs),
    ``started_at`` (UTC, ISO 8601) and ``command`` (the substituted command).
    **Only rows with status ``ok`` are measurements**: failed and timed-out runs stay in the file so
    nothing is lost, and :func:`read_timings` (and the dataset catalogue) leave them out of fits.

Crash safety and resuming
    The CSV is append-only; every row is flushed and ``fsync``-ed as soon as its run ends, so a crash or
    a kill loses at most the run in progress. Rerunning the same sweep with the same ``out`` skips every
    (configuration, repetition) already in the file with status ``ok``, ``failed`` or ``timeout``
    (delete a row to redo it); an ``interrupted`` run is run again and both rows are kept. An incomplete last line (a crash in the middle of a write) is removed.
    The sweep refuses to append to a file whose columns or command differ from this sweep's.

A use of the machine rather than of models: imports from perfmodel.errors and perfmodel.spreadsheet only.
"""

from __future__ import annotations

import csv
import datetime as _dt
import itertools
import math
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .errors import PerfModelError
from .spreadsheet import read_cell, safe_cell

#: Columns after the grid factors, in this order.
FIXED_COLUMNS = ["repetition", "time_s", "status", "exit_code", "stderr_tail", "started_at", "command"]
#: Values of the ``status`` column.
STATUSES = ("ok", "failed", "timeout", "interrupted")
STDERR_TAIL_CHARS = 400
#: Runs one sweep may list (configurations × repetitions); counted before the list is built.
MAX_RUNS = 1_000_000
#: Bytes of a run's stderr kept while it runs (the rest is read and discarded).
STDERR_KEEP_BYTES = 64 * 1024
#: Seconds a job gets to exit after SIGTERM/SIGINT is passed on, before SIGKILL.
TERM_GRACE_S = 10.0
#: Seconds to wait, once the job has exited, for its stderr to close.
EOF_GRACE_S = 0.5
#: Seconds the job's helper processes get to exit on their own once the job has exited, before they
#: count as left behind: multiprocessing's resource tracker outlives a job that used shared memory
#: by a moment (about 1 s on a busy 2-core machine, examples/dp_sgd.py).
LINGER_GRACE_S = 2.0

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


@dataclass(frozen=True)
class RunRecord:
    """One finished run, as written to the CSV."""

    config: dict[str, str]
    repetition: int
    time_s: float
    status: str
    exit_code: int | None
    stderr_tail: str
    started_at: str
    command: str

    def as_row(self, names: list[str]) -> list[str]:
        return [self.config[n] for n in names] + [
            str(self.repetition),
            f"{self.time_s:.6f}",
            self.status,
            "" if self.exit_code is None else str(self.exit_code),
            self.stderr_tail,
            self.started_at,
            self.command,
        ]


#: progress(done, total, record, eta_seconds) — called after every run of this session.
ProgressFn = Callable[[int, int, RunRecord, float | None], None]


# ----------------------------------------------------------------------------------- templates / grid
def placeholders(template: str) -> list[str]:
    """The ``{name}`` placeholders of a command template, in order of first appearance."""
    seen: list[str] = []
    for match in _PLACEHOLDER.finditer(template):
        name = match.group(1)
        if name is not None and name not in seen:
            seen.append(name)
    return seen


def substitute(text: str, config: dict[str, str]) -> str:
    """Replace ``{name}`` by ``config[name]``, ``{{``/``}}`` by literal braces."""

    def repl(match: re.Match) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = match.group(1)
        if name not in config:
            raise PerfModelError(f"--command: placeholder '{{{name}}}' has no --grid {name}=...")
        return config[name]

    return _PLACEHOLDER.sub(repl, text)


def build_command(template: str, config: dict[str, str], shell: bool = False) -> list[str] | str:
    """The command to run for one configuration: an argv list, or one string when ``shell``."""
    if shell:
        return substitute(template, config)
    try:
        parts = shlex.split(template)
    except ValueError as exc:
        raise PerfModelError(f"--command: cannot split {template!r}: {exc}") from None
    if not parts:
        raise PerfModelError("--command is empty")
    return [substitute(part, config) for part in parts]


def command_text(command: list[str] | str) -> str:
    return command if isinstance(command, str) else shlex.join(command)


def parse_grid_option(text: str) -> tuple[str, list[str]]:
    """``"p=1,2,4"`` -> ``("p", ["1", "2", "4"])``."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep:
        raise PerfModelError(f"--grid {text!r}: expected NAME=v1,v2,...")
    vals = [v.strip() for v in values.split(",")]
    if not values.strip() or any(v == "" for v in vals):
        raise PerfModelError(f"--grid {text!r}: empty value in the list")
    return name, vals


def validate_grid(command: str, grid: dict[str, list[str]]) -> dict[str, list[str]]:
    """Check names and values of the grid against the command template; returns a clean copy."""
    if not isinstance(command, str) or not command.strip():
        raise PerfModelError("--command is empty")
    if any(unicodedata.category(ch) == "Cc" and ch not in "\t" for ch in command):
        raise PerfModelError(f"--command {command!r} contains a control character")
    if not grid:
        raise PerfModelError("no --grid given: give at least one NAME=v1,v2,...")
    clean: dict[str, list[str]] = {}
    for name, values in grid.items():
        if not _NAME.match(str(name)):
            raise PerfModelError(f"--grid name {name!r} is not an identifier (letters, digits, _)")
        if name in FIXED_COLUMNS:
            raise PerfModelError(f"--grid name {name!r} clashes with the output column of that name")
        if isinstance(values, (str, bytes)) or not list(values):
            raise PerfModelError(f"--grid {name}: give a list of values")
        vals = [str(v) for v in values]
        for v in vals:
            if v.strip() == "":
                raise PerfModelError(f"--grid {name}: empty value")
            if "\n" in v or "\r" in v:
                raise PerfModelError(f"--grid {name}: value {v!r} contains a line break")
            if any(unicodedata.category(ch) == "Cc" for ch in v):
                raise PerfModelError(f"--grid {name}: value {v!r} contains a control character")
        if len(set(vals)) < len(vals):
            dup = next(v for i, v in enumerate(vals) if v in vals[:i])
            raise PerfModelError(f"--grid {name}: value {dup!r} is listed twice")
        clean[name] = vals
    used = placeholders(command)
    for name in used:
        if name not in clean:
            raise PerfModelError(f"--command: placeholder '{{{name}}}' has no --grid {name}=...")
    for name in clean:
        if name not in used:
            raise PerfModelError(f"--grid {name}: the command has no placeholder '{{{name}}}'")
    return clean


def configurations(grid: dict[str, list[str]]) -> list[dict[str, str]]:
    """Cartesian product of the grid, first factor varying slowest."""
    names = list(grid)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(grid[n] for n in names))]


# ------------------------------------------------------------------------------------------ the file
def _read_existing(path: Path, columns: list[str]) -> list[dict[str, str]]:
    """Rows already in ``path`` (dicts of strings); repairs an incomplete last line."""
    if not path.exists() or path.stat().st_size == 0:
        return []
    raw = path.read_bytes()
    if not raw.endswith(b"\n"):
        # A crash in the middle of writing a row: drop the partial row (it was never complete).
        cut = raw.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())
        print(f"sweep: removed an incomplete last line from {path}", file=sys.stderr)
        if cut == 0:
            return []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return []
        if header != columns:
            raise PerfModelError(
                f"{path}: existing file has columns {header}, this sweep writes {columns}; "
                "use another --out or the same --grid names"
            )
        rows = []
        for lineno, values in enumerate(reader, start=1):
            if len(values) != len(columns):
                raise PerfModelError(f"{path}: row {lineno} has {len(values)} fields, expected {len(columns)}")
            rows.append(dict(zip(columns, map(read_cell, values), strict=True)))
    return rows


def _check_same_command(path: Path, rows: list[dict[str, str]], template: str, names: list[str], shell: bool) -> None:
    for lineno, row in enumerate(rows, start=1):
        config = {n: row[n] for n in names}
        try:
            expected = command_text(build_command(template, config, shell))
        except PerfModelError:
            expected = None
        if row["command"] != expected:
            raise PerfModelError(
                f"{path}: row {lineno} was measured with command {row['command']!r}, this sweep would run "
                f"{expected!r}; refusing to mix them (use another --out)"
            )


class _Lock:
    """Exclusive advisory lock on the output file while a sweep writes it (POSIX only)."""

    def __init__(self, path: Path):
        self.path = path
        self.fh = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no lock
            return self
        self.fh = open(self.path, "a", encoding="utf-8")
        try:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.fh.close()
            self.fh = None
            raise PerfModelError(f"{self.path}: another sweep is writing this file") from None
        return self

    def __exit__(self, *exc):
        if self.fh is not None:
            self.fh.close()


def _append(path: Path, columns: list[str], record: RunRecord, names: list[str]) -> None:
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        if new:
            writer.writerow(columns)
        writer.writerow([safe_cell(v) for v in record.as_row(names)])
        fh.flush()
        os.fsync(fh.fileno())


# ------------------------------------------------------------------------------------------- running
class SweepInterrupted(Exception):
    """The sweep received SIGTERM or SIGINT; the run in progress was stopped and recorded."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Signals:
    """While a sweep runs in the main thread: SIGTERM/SIGINT set a flag and are passed on to the
    process group of the job in progress (elsewhere they keep their usual meaning)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.job_pgid: int | None = None
        self._previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum, _frame):
        first = self.received is None
        self.received = signum
        if self.job_pgid is not None:
            _signal_group(self.job_pgid, signum if first else signal.SIGKILL)


def _signal_group(pgid: int, signum: int) -> None:
    if os.name == "posix":
        try:
            os.killpg(pgid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. A zombie does not count: it has exited and
    waits to be reaped, an orphan by init, which in a container may reap late or never."""
    if os.name != "posix":  # pragma: no cover
        return False
    if Path("/proc/self/stat").exists():
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:  # the process ended while we looked
                continue
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
            fields = text[text.rfind(")") + 2 :].split()
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a process of another user took the id
        return False
    return True


def _escape_controls(text: str) -> str:
    """Control and line-separator characters as ``\\xNN`` / ``\\uNNNN`` (NUL, ESC, U+2028, ...)."""
    return "".join(
        ch
        if ch == " " or unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp", "Cs")
        else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def _tail(text: str) -> str:
    text = text.strip().replace("\r\n", "\n").replace("\r", "\n").replace("\n", " | ")
    return _escape_controls(text[-STDERR_TAIL_CHARS:])[-STDERR_TAIL_CHARS:]


def _kill_group(proc: subprocess.Popen) -> None:
    if os.name == "posix":
        _signal_group(proc.pid, signal.SIGKILL)
    try:
        proc.kill()
    except ProcessLookupError:  # pragma: no cover
        pass


class _StderrTail:
    """Reads a pipe without blocking, keeping only its last :data:`STDERR_KEEP_BYTES`."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.data = bytearray()
        self.eof = False
        os.set_blocking(pipe.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(pipe, selectors.EVENT_READ)

    def pump(self, timeout: float) -> None:
        """Read what arrives within ``timeout`` seconds (returns early at EOF)."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                return
            while True:
                try:
                    chunk = os.read(self.pipe.fileno(), 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    self.eof = True
                    break
                self.data += chunk
                if len(self.data) > STDERR_KEEP_BYTES:
                    del self.data[:-STDERR_KEEP_BYTES]

    def close(self) -> str:
        self.selector.close()
        self.pipe.close()
        return self.data.decode("utf-8", "replace")


def run_once(
    command: list[str] | str, timeout: float | None, shell: bool, signals: _Signals | None = None
) -> tuple[float, str, int | None, str]:
    """Run one command; returns (seconds, status, exit code, stderr tail). Stdout is discarded.

    The time is the wall clock from start until the job's own process exits. A run is ``timeout``
    when it lasts longer than ``timeout`` seconds, ``interrupted`` when ``signals`` received
    SIGTERM/SIGINT meanwhile, ``failed`` when it exits non-zero or leaves processes behind."""
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            command,
            shell=shell,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=(os.name == "posix"),
        )
    except (OSError, ValueError) as exc:
        return time.perf_counter() - start, "failed", None, _tail(f"cannot start: {exc}")
    if signals is not None:
        signals.job_pgid = proc.pid
    err = _StderrTail(proc.stderr)
    notes: list[str] = []
    status = None
    try:
        while proc.poll() is None:
            err.pump(0.05)
            if err.eof:  # stderr closed: nothing more to read, just wait (in small steps, for signals)
                try:
                    proc.wait(0.05)
                except subprocess.TimeoutExpired:
                    pass
            if signals is not None and signals.received is not None:
                status = "interrupted"
                deadline = time.monotonic() + TERM_GRACE_S
                while proc.poll() is None and time.monotonic() < deadline:
                    err.pump(0.05)
                if proc.poll() is None:
                    _kill_group(proc)
                    notes.append(f"[killed {TERM_GRACE_S:g} s after {signal.Signals(signals.received).name}]")
                else:
                    notes.append(f"[stopped by {signal.Signals(signals.received).name}]")
                break
            if timeout is not None and time.perf_counter() - start > timeout and proc.poll() is None:
                _kill_group(proc)
                status = "timeout"
                notes.append(f"[killed after {timeout:g} s]")
                break
        proc.wait()
        elapsed = time.perf_counter() - start
        err.pump(EOF_GRACE_S)
        lingering = time.monotonic() + (LINGER_GRACE_S if status is None else 0.0)
        while (not err.eof or _group_alive(proc.pid)) and time.monotonic() < lingering:
            err.pump(0.05)
            if err.eof:
                time.sleep(0.05)
        if not err.eof or _group_alive(proc.pid):
            # The job exited but something it started lives on (holding stderr open, or in its group).
            _signal_group(proc.pid, signal.SIGKILL)
            err.pump(EOF_GRACE_S)
            if status is None:
                status = "failed"
                notes.append(
                    "[exited but left process(es) running; its process group was killed"
                    + ("" if err.eof else "; one outside the group still holds stderr open")
                    + "]"
                )
    except BaseException:  # an unexpected error here: do not leave the job running
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        if signals is not None:
            signals.job_pgid = None
        text = err.close()
    if status is None:
        status = "ok" if proc.returncode == 0 else "failed"
    code = None if status == "timeout" else proc.returncode
    return elapsed, status, code, _tail(" ".join([text, *notes]) if notes else text)


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def print_progress(done: int, total: int, record: RunRecord, eta: float | None) -> None:
    """Default progress reporter: one line per run on stderr with a bar and the time left."""
    width = 20
    filled = int(round(width * done / total)) if total else width
    bar = "#" * filled + "." * (width - filled)
    config = " ".join(f"{k}={v}" for k, v in record.config.items())
    print(
        f"[{bar}] {done}/{total} {config} rep {record.repetition}: {record.status} "
        f"{record.time_s:.2f} s, ~{_fmt_duration(eta)} left",
        file=sys.stderr,
        flush=True,
    )


def _eta(pending: list[tuple[dict[str, str], int]], times: dict[tuple, list[float]], names: list[str]) -> float | None:
    """Seconds left: each pending run costs its configuration's mean time so far, else the overall mean."""
    all_times = [t for ts in times.values() for t in ts]
    if not all_times:
        return None
    overall = sum(all_times) / len(all_times)
    total = 0.0
    for config, _rep in pending:
        ts = times.get(tuple(config[n] for n in names))
        total += sum(ts) / len(ts) if ts else overall
    return total


def run_sweep(
    command: str,
    grid: dict[str, list[str]],
    repeat: int = 1,
    out: str | Path = "timings.csv",
    warmup: bool = False,
    timeout: float | None = None,
    shell: bool = False,
    progress: ProgressFn | None = None,
    plan: list[dict[str, str]] | None = None,
) -> pd.DataFrame:
    """Run ``command`` for every configuration of ``grid``, ``repeat`` times, appending to ``out``.

    Parameters
    ----------
    command : template with one ``{name}`` placeholder per grid factor.
    grid : factor name -> list of values (strings; numbers are converted with ``str``).
    repeat : repetitions per configuration (>= 1).
    out : CSV path; created if missing, resumed if it holds rows of the same sweep.
    warmup : run the first configuration still to do once, untimed and unrecorded, before the sweep.
    timeout : seconds after which a run is killed and recorded with status ``timeout``.
    shell : run the substituted string with the shell instead of as an argument list.
    progress : ``progress(done, total, record, eta_seconds)`` after each run; default prints to stderr.
    plan : the configurations to run, in this order, instead of the whole grid (e.g. the ranked list of
        ``advise --out``); ``grid`` then lists the values they use.

    Returns the whole CSV (earlier and new rows) as a DataFrame; filter ``status == "ok"`` before
    fitting (or use :func:`read_timings`).
    """
    grid = validate_grid(command, grid)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise PerfModelError(f"--repeat {repeat!r}: must be a whole number >= 1")
    if timeout is not None:
        try:
            timeout = float(timeout)
        except (TypeError, ValueError):
            raise PerfModelError(f"--timeout {timeout!r}: not a number") from None
        if not (timeout > 0 and math.isfinite(timeout)):
            raise PerfModelError(f"--timeout {timeout:g}: must be a positive number of seconds")
    if shell and os.name != "posix":  # pragma: no cover
        raise PerfModelError("--shell is only supported on POSIX systems")
    names = list(grid)
    columns = names + FIXED_COLUMNS
    runs = (math.prod(len(v) for v in grid.values()) if plan is None else len(plan)) * repeat
    if runs > MAX_RUNS:
        raise PerfModelError(
            f"the sweep lists {runs:,} runs ({'the grid' if plan is None else 'the plan'} × "
            f"--repeat {repeat}); at most {MAX_RUNS:,}"
        )
    configs = configurations(grid) if plan is None else [{n: str(c[n]) for n in names} for c in plan]
    if not configs:
        raise PerfModelError("the plan has no configuration to run")
    first = build_command(command, configs[0], shell)
    if not shell and shutil.which(first[0]) is None and not Path(first[0]).exists():
        raise PerfModelError(f"--command: program {first[0]!r} not found")
    path = Path(out)
    if path.exists() and path.is_dir():
        raise PerfModelError(f"--out {path}: is a directory")
    if path.parent and not path.parent.exists():
        raise PerfModelError(f"--out {path}: folder {path.parent} does not exist")
    report = progress or print_progress

    with _Lock(path), _Signals() as signals:
        existing = _read_existing(path, columns)
        _check_same_command(path, existing, command, names, shell)
        done_keys = {
            (tuple(r[n] for n in names), int(r["repetition"]))
            for r in existing
            if r["repetition"].isdigit() and r["status"] != "interrupted"
        }
        times: dict[tuple, list[float]] = {}
        for r in existing:
            if r["status"] == "ok":
                try:
                    times.setdefault(tuple(r[n] for n in names), []).append(float(r["time_s"]))
                except ValueError:
                    pass
        pending = [
            (c, rep)
            for rep in range(1, repeat + 1)
            for c in configs
            if (tuple(c[n] for n in names), rep) not in done_keys
        ]
        total = len(configs) * repeat
        done = total - len(pending)
        if done:
            print(
                f"sweep: resuming {path}: {done} of {total} runs already recorded, {len(pending)} to go",
                file=sys.stderr,
                flush=True,
            )
        if pending and warmup:
            cmd = build_command(command, pending[0][0], shell)
            print(f"sweep: warm-up run: {command_text(cmd)}", file=sys.stderr, flush=True)
            run_once(cmd, timeout, shell, signals)
        while pending:
            if signals.received is not None:
                raise SweepInterrupted(signals.received)
            config, rep = pending[0]
            cmd = build_command(command, config, shell)
            started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
            elapsed, status, code, tail = run_once(cmd, timeout, shell, signals)
            record = RunRecord(config, rep, elapsed, status, code, tail, started, command_text(cmd))
            _append(path, columns, record, names)
            if status == "interrupted":  # run_once says so only after a signal arrived
                raise SweepInterrupted(signals.received or signal.SIGTERM)
            pending.pop(0)
            done += 1
            if status == "ok":
                times.setdefault(tuple(config[n] for n in names), []).append(elapsed)
            report(done, total, record, _eta(pending, times, names))
    return read_timings(path, include_failed=True)


# ------------------------------------------------------------------------------------------ reading
def read_timings(path: str | Path, include_failed: bool = False) -> pd.DataFrame:
    """Read a sweep CSV; by default only runs with ``status == "ok"`` (the ones to fit)."""
    path = Path(path)
    if not path.exists():
        raise PerfModelError(f"file not found: {path}")
    frame = pd.read_csv(path, keep_default_na=False, na_values={"time_s": [""], "exit_code": [""]})
    missing = [c for c in FIXED_COLUMNS if c not in frame.columns]
    if missing:
        raise PerfModelError(f"{path}: not a sweep file, column {missing[0]!r} is missing")
    for column in frame.columns:
        if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column].dtype):
            frame[column] = frame[column].map(read_cell)  # the text as the sweep had it (see spreadsheet)
    if not include_failed:
        frame = frame[frame["status"] == "ok"].reset_index(drop=True)
    return frame
