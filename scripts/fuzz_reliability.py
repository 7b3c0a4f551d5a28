"""Red-team fuzzing of the command line (issue 20): hostile and random arguments, files and model files
thrown at ``fit``, ``predict``, ``advise``, ``sweep`` and ``show``, each outcome classified.

The same style as ``scripts/fuzz.py`` (its building blocks, Hypothesis with a seed), one level up:
every input is a whole command run by :func:`perfmodel.cli.main` in a forked child (its own session,
stdout and stderr captured, address space capped) and judged by what a user sees:

    clear error    exit 2, one line ``error: ...`` on stderr, no traceback
    success        exit 0 and the output passes the target's checks
    silent wrong   exit 0 but the output is wrong: a saved model with a non-finite error, NaN/inf or a
                   non-positive time printed or written, a formula cell left live in a CSV, a name that
                   is not a factor fitted without the warning
    internal error any other exit (a traceback, ``internal error:``, a crash, a memory error), or an
                   exit 2 that is not one clear line
    hang           not finished within ``--timeout`` seconds (the child's session is killed)

    python scripts/fuzz_reliability.py                    # 200 inputs per target, seed 0
    python scripts/fuzz_reliability.py --examples 20 --target advise --seed 3

Prints a table of counts per target and the first few inputs of every outcome other than a clear
error or a success. ``tests/test_fuzz_reliability.py`` runs a seeded slice.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # fork-safe: no BLAS threads
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz as base  # noqa: E402  (scripts/fuzz.py: NUMBERS, NASTY, the term grammar; puts ROOT on sys.path)

from perfmodel import FitResult  # noqa: E402
from perfmodel.cli import main  # noqa: E402
from perfmodel.language.terms import PRESETS  # noqa: E402
from perfmodel.spreadsheet import TRIGGERS  # noqa: E402

ROOT = base.ROOT
RCV1 = ROOT / "data" / "ernest" / "rcv1.csv"
OUTCOMES = ("clear error", "success", "silent wrong", "internal error", "hang")
MEMORY_CAP = 2_000_000_000  # bytes of address space a command may add to what it starts with
PY = sys.executable
SERIAL = itertools.count()  # a fresh output name per command

# -- the hostile inputs ------------------------------------------------------------------------
LEVELS = ["nan", "-1", "1e-300", "1e-17", "0", "1", "0.9999999", "inf", "90", "0.9", "0.5", "0.01", "x", ""]
DASK = [
    "",
    " ",
    "bogus",
    "tcp://[::1",
    "tls://x:8786",
    "ucx://x",
    "inproc://x",
    "http://localhost:8787",
    "tcp://h:0",
    "tcp://127.0.0.1:9",
]
GROUP_VALUES = [
    "[click me](https://evil.example/phish)",
    '=HYPERLINK("https://evil.example","x")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)",
    "-2+3*cmd",
    "\t=1+1",
    "a__b",
    "b__c",
    "../../etc",
    "<a href='x'>y</a>",
    "é",
    "",
    "nan",
    "CON",
    "x" * 300,
]
COUNTS = ["0", "1", "2", "-1", "-3", "10000001", "99999999999999999999", "nan", "1e9", "x", "40", "100000"]
BOUNDS = [
    "g=0:1e-300",
    "g=1e-310:1e-200",
    "g=1:10",
    "e1=0:1",
    "e1=-1e308:1e308",
    "c0=0:1",
    "q=0:nan",
    "g=1:0",
    "nonsense",
    "e1=0:1e-300",
]
TERMS = [
    "1 + s/m",
    "1 + q*m",
    "1 + s/m + log(m) + m",
    "overlap(s/m, log(m); g)",
    "1 + s/m^e1",
    "1 + p",
    "1 + s/m + s/m",
    "log(m - 64)",
    "m^1e999",
    "1 + s*m + log(s) + m",
]


GOOD = ["4", "8", "16", "32", "64", "0.5", "1"]


def _values(n_min=1, n_max=4):
    """Value lists: often good ones (so commands get past the checks), else any of the hostile numbers."""
    pool = base.NUMBERS + ["4", "8", "16", "64", "1e8", "0", "-8000"]
    return st.one_of(
        st.lists(st.sampled_from(GOOD), min_size=n_min, max_size=n_max, unique=True),
        st.lists(st.sampled_from(pool), min_size=n_min, max_size=n_max),
    ).map(",".join)


def _grid(sym):
    big = st.integers(1, 3).map(lambda k: f"{sym}=" + ",".join(str(v) for v in range(1, 10 ** (k + 1) + 1)))
    return st.one_of(_values().map(lambda v: f"{sym}={v}"), big, st.sampled_from([f"{sym}=", sym, "=4", "z=1"]))


# -- fixtures: files the commands read ------------------------------------------------------------------
class Files:
    """A fitted model (with intervals), CSVs and plans in a temporary folder, made once per run."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="fuzz_rel_"))
        self.model = self.dir / "model.json"
        code = _quiet(
            main,
            [
                "fit",
                str(RCV1),
                "--time",
                "time_s",
                "--factor",
                "m=cores",
                "--factor",
                "s=input_fraction",
                "--terms",
                "1 + s/m + log(m) + m",
                "--loss",
                "absolute",
                "--replicates",
                "30",
                "--out",
                str(self.model),
            ],
        )
        assert code == 0, "could not fit the base model"
        self.model_dict = json.loads(self.model.read_text())
        self._nodes_model = self._large_model = None

    @property
    def nodes_model(self) -> Path:
        """T = 10 + 100/p on p GPUs over a nodes column of 2 GPUs per node (made on first use)."""
        if self._nodes_model is None:
            p = [2, 4, 8, 16, 2, 4, 8, 16]
            data = self.write("nodes.csv", "p,nodes,time_s\n" + "".join(f"{v},{v // 2},{10 + 100 / v}\n" for v in p))
            self._nodes_model = self.dir / "nodes_model.json"
            argv = ["fit", str(data), "--factor", "p=p", "--factor", "nodes=nodes", "--terms", "1 + 1/p + nodes"]
            assert _quiet(main, [*argv, "--replicates", "20", "--out", str(self._nodes_model)]) == 0
        return self._nodes_model

    @property
    def large_model(self) -> Path:
        """The base model with every stated limit reached: 50 members × 10,000 replicates (made on first use)."""
        if self._large_model is None:
            d = json.loads(json.dumps(self.model_dict))
            m = d["uncertainty"]["members"][0]
            reps = len(m["coefficients"])
            m["coefficients"] = [m["coefficients"][i % reps] for i in range(10_000)]
            m["params"] = [m["params"][i % reps] for i in range(10_000)]
            d["uncertainty"]["members"] = [m] * 50
            self._large_model = self.write("large_model.json", json.dumps(d))
        return self._large_model

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name: str, content) -> Path:
        path = self.dir / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
        return path


def _quiet(fn, *args):
    out, err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()
    try:
        return fn(*args)
    finally:
        sys.stdout, sys.stderr = out, err


# -- one command in a forked child ---------------------------------------------------------------------
@dataclass
class Run:
    code: int | None  # None: killed on timeout
    out: str
    err: str
    seconds: float


def _address_space() -> int:
    """Bytes of address space this process maps now (0 where /proc cannot say)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def run_command(argv: list[str], cwd: Path, timeout: float) -> Run:
    """``main(argv)`` in a forked child in its own session; the whole session is killed on timeout."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.setsid()
                # the cap bounds what the command adds: the forked child starts with the parent's address
                # space (a pytest process deep in the suite holds more than the cap already)
                cap = _address_space() + MEMORY_CAP
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
                os.dup2(fo.fileno(), 1)
                os.dup2(fe.fileno(), 2)
                sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
                sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
                os.chdir(cwd)
                code = main(argv)
            except BaseException:
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code if isinstance(code, int) else 1)
        code = None
        while time.monotonic() - t0 < timeout:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.005)
        try:
            os.killpg(pid, signal.SIGKILL)  # the command's pool workers and forkserver too
        except ProcessLookupError:
            pass
        if code is None:
            os.waitpid(pid, 0)
        seconds = time.monotonic() - t0
        fo.seek(0)
        fe.seek(0)
        return Run(code, fo.read().decode("utf-8", "replace"), fe.read().decode("utf-8", "replace"), seconds)


# -- judging --------------------------------------------------------------------------------------------
_NONFINITE = re.compile(r"(?<![A-Za-z])(nan|inf|-inf)(?![A-Za-z])", re.IGNORECASE)


def live_formulas(path: Path) -> list[str]:
    """Cells of a CSV that a spreadsheet would run."""
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    out = []
    for c in cells:
        if c.startswith(TRIGGERS):
            try:
                float(c)
            except ValueError:
                out.append(c)
    return out


def judge(run: Run, check) -> tuple[str, str]:
    """(outcome, why) of one command; ``check()`` returns what is wrong with a success, or ''."""
    if run.code is None:
        return "hang", f"killed after {run.seconds:.0f} s"
    if run.code == 2:
        clear = (
            run.err.startswith("error: ")
            and run.err.count("\n") == 1
            and run.err.endswith("\n")
            and "Traceback" not in run.err
        )
        return ("clear error", "") if clear else ("internal error", "exit 2 but not one clear line")
    if run.code == 0:
        if "Traceback" in run.err:
            return "internal error", "a traceback on a successful run"
        wrong = check()
        return ("silent wrong", wrong) if wrong else ("success", "")
    return "internal error", f"exit {run.code}"


# -- targets: each draws a command, and checks a success --------------------------------------------------
@dataclass
class Case:
    argv: list
    check: object = None  # callable() -> '' or what is wrong
    note: dict = field(default_factory=dict)
    seconds: float | None = None  # a run longer than this counts as a hang (the work was not bounded)


def _fit_case(files: Files, draw) -> Case:
    out = files.dir / f"fit_{next(SERIAL)}"
    terms = draw(st.one_of(st.sampled_from(TERMS), base._grammar(["m", "s", "q", "e1", "p", "1"])))
    argv = [
        "fit",
        str(RCV1),
        "--time",
        "time_s",
        "--factor",
        "m=cores",
        "--factor",
        "s=input_fraction",
        "--terms",
        terms,
        "--replicates",
        draw(st.sampled_from(["0", "0", "0", "10"] + COUNTS)),
    ]
    if draw(st.booleans()):
        argv += ["--bounds", draw(st.sampled_from(BOUNDS))]
    grouped = draw(st.integers(0, 3)) == 0
    if grouped:
        values = draw(st.lists(st.sampled_from(GROUP_VALUES), min_size=1, max_size=4, unique=True))
        rows = [
            (v, m, s, 1 + 0.1 * k + s * 30 / m)
            for k, v in enumerate(values)
            for m in (4, 8, 16, 32)
            for s in (0.1, 1.0)
        ]
        data = files.write(
            f"groups_{next(SERIAL)}.csv", pd.DataFrame(rows, columns=["fw", "m", "s", "t"]).to_csv(index=False)
        )
        argv = [
            "fit",
            str(data),
            "--time",
            "t",
            "--factor",
            "m=m",
            "--factor",
            "s=s",
            "--terms",
            terms,
            "--group-by",
            "fw",
            "--replicates",
            "0",
        ]
    if draw(st.integers(0, 4)) == 0:
        flag = draw(st.sampled_from(["--workers", "--dask", "--min-configurations"]))
        argv += [flag, draw(st.sampled_from(DASK if flag == "--dask" else COUNTS))]
    if grouped and "--workers" not in argv and "--dask" not in argv:
        argv += ["--workers", "1"]
    argv += ["--out", str(out)]

    def check():
        unmapped = "q" in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", terms)
        if grouped:
            summary = out / "summary.csv"
            if not summary.is_file():
                return "no summary.csv"
            live = live_formulas(summary)
            if live:
                return f"live formula cells in summary.csv: {live[:2]}"
            models = [FitResult.load(p) for p in out.glob("*.json")]
            ok = (pd.read_csv(summary, keep_default_na=False)["status"] == "ok").sum()
            if len(models) != ok:
                return f"{ok} groups fitted, {len(models)} model files"
        else:
            models = [FitResult.load(out)]
        for r in models:
            if not all(map(_finite, [r.metrics.get("mape"), r.cost])):
                return f"saved a model with MAPE {r.metrics.get('mape')}"
            if unmapped and "q" in r.params and "q is not a factor" not in case_err[0]:
                return "q fitted as a free parameter without the warning"
        return ""

    case_err = [""]
    return Case(argv, check, {"err": case_err})


def _finite(v) -> bool:
    try:
        return v is not None and abs(float(v)) < float("inf")
    except (TypeError, ValueError):
        return False


def _hostile_model(files: Files, draw) -> Path:
    """The base model with its uncertainty block spoiled in one of the issue's ways (or a random way)."""
    d = json.loads(json.dumps(files.model_dict))
    unc = d["uncertainty"]
    how = draw(
        st.sampled_from(
            [
                "none",
                "empty coefficients",
                "sigma",
                "share",
                "members",
                "replicates",
                "weight",
                "expression",
                "calibration",
                "df",
                "random",
                "prior type",
                "topology type",
                "number as text",
                "nan",
                "ragged span",
            ]
        )
    )
    if how == "empty coefficients":
        unc["members"][0]["coefficients"], unc["members"][0]["params"] = [], []
    elif how == "sigma":
        unc["noise"]["sigma"] = draw(st.sampled_from([1e308, -0.1, float("nan"), 0.0, 10**400]))
    elif how == "share":
        unc["share_replicates"] = draw(
            st.sampled_from([[[0.5, 0.5], [0.5]], [["a", "b", "c", "d"]], [[0.1] * 4] * 10_001])
        )
    elif how == "members":
        unc["members"] = [json.loads(json.dumps(unc["members"][0])) for _ in range(draw(st.sampled_from([0, 51, 500])))]
    elif how == "replicates":
        unc["replicates"] = draw(st.sampled_from([2_000_000, -1, 0, "x"]))
    elif how == "weight":
        unc["members"][0]["weight"] = draw(st.sampled_from([float("nan"), -1.0, 1e308]))
    elif how == "expression":
        unc["members"][0]["expression"] = draw(st.sampled_from(["1 + p + N", "1 + s*m + log(s) + m", ""]))
    elif how == "calibration":
        unc["calibration"]["points"] = [
            [
                draw(st.sampled_from([float("nan"), float("inf"), 0.1])),
                0.1,
                0.1,
                draw(st.sampled_from([0.0, 1.0, -1.0])),
            ]
        ]
    elif how == "df":
        unc["noise"]["df"] = draw(st.sampled_from([0, -3, float("nan"), 1e308]))
    elif how == "prior type":
        unc["prior"] = draw(st.sampled_from([[1], "x", 3, True]))
    elif how == "topology type":
        unc["topology"] = draw(
            st.sampled_from(
                [
                    [1],
                    "x",
                    3,
                    {"nodes_symbol": None, "gpus_per_node": "8", "max_nodes": 1},
                    {"nodes_symbol": None, "gpus_per_node": 8, "max_nodes": "1"},
                    {"nodes_symbol": 3, "gpus_per_node": None, "max_nodes": 2},
                ]
            )
        )
    elif how == "number as text":
        prior = unc.get("prior") or {}
        key = draw(st.sampled_from(["band_scale", "level", "n_series", "pseudo_configurations", "scaling_class"]))
        if key == "scaling_class":
            prior[key] = {"name": "x", "efficiency_min": "0", "efficiency_below": "0.7", "efficiency": "0.4"}
        else:
            prior[key] = str(prior.get(key, 1))
        unc["prior"] = prior
    elif how == "nan":
        where = draw(st.sampled_from(["rate", "center", "lam"]))
        if where == "rate":
            d["rate"] = {"column": "x", "work": float("nan")}
        elif where == "center":
            d["factor_span"] = {"symbols": ["m", "s"], "center": [float("nan"), 1.0], "directions": []}
        else:
            d["settings"]["lam"] = float("nan")
    elif how == "ragged span":
        d["factor_span"] = {"symbols": ["m", "s"], "center": [1.0, 1.0], "directions": [[1.0], [1.0, 0.0]]}
    elif how == "random":
        parent, key = base._random_path(draw, unc)
        if isinstance(parent, dict) or (isinstance(parent, list) and key < len(parent)):
            parent[key] = draw(st.sampled_from([None, -1, 0, 1e308, float("nan"), "x", [], {}, 10**400]))
    text = json.dumps(d, allow_nan=True)
    return files.write(f"model_{next(SERIAL)}.json", text)


def _predict_case(files: Files, draw) -> Case:
    model = _hostile_model(files, draw) if draw(st.booleans()) else files.model
    good = st.tuples(st.sampled_from(GOOD[:5]), st.sampled_from(["1", "0.5", "0.1"]))
    hostile = st.tuples(
        st.sampled_from(base.NUMBERS + ["8", "64", "0", "-4"]), st.sampled_from(base.NUMBERS + ["1", "0.5", "-8000"])
    )
    rows = draw(st.lists(st.one_of(good, good, hostile), min_size=1, max_size=4))
    note = draw(st.sampled_from(GROUP_VALUES + HOSTILE_TEXT))
    extra = draw(st.sampled_from(["note"] * 4 + ["predicted_time", "predicted_low", "predicted_high"]))
    data = files.write(
        f"rows_{next(SERIAL)}.csv",
        pd.DataFrame(
            {"cores": [r[0] for r in rows], "input_fraction": [r[1] for r in rows], extra: [note] * len(rows)}
        ).to_csv(index=False),
    )
    out = files.dir / f"pred_{next(SERIAL)}.csv"
    argv = ["predict", str(model), str(data), "--out", str(out)]
    if draw(st.booleans()):
        argv += ["--interval", draw(st.sampled_from(LEVELS))]

    def check():
        if extra != "note":
            return f"DATA's own column {extra!r} was overwritten or left beside the predictions"
        for r in rows:
            try:
                if float(r[0]) <= 0 or float(r[1]) <= 0:
                    return f"a prediction at a factor measured only positive, now {r}"
            except ValueError:
                pass
        frame = pd.read_csv(out)
        cols = [c for c in ("predicted_time", "predicted_low", "predicted_high") if c in frame]
        values = frame[cols].to_numpy(float)
        if not (values > 0).all() or not (abs(values) < float("inf")).all():
            return f"predictions not finite positive: {values.ravel()[:4]}"
        if (
            "predicted_low" in frame
            and not (
                (frame.predicted_low <= frame.predicted_time) & (frame.predicted_time <= frame.predicted_high)
            ).all()
        ):
            return "an interval does not contain its prediction"
        live = live_formulas(out)
        return f"live formula cells: {live[:2]}" if live else ""

    return Case(argv, check)


def _advise_case(files: Files, draw) -> Case:
    model = _hostile_model(files, draw) if draw(st.integers(0, 2)) == 0 else files.model
    target = draw(
        st.one_of(
            st.just("m=64,s=1"),
            st.sampled_from(["m=64,s=1", "m=0,s=1", "m=1e999,s=1", "m=64", "q=1", "", "m=nan,s=1"]),
            st.tuples(st.sampled_from(base.NUMBERS), st.sampled_from(base.NUMBERS)).map(lambda t: f"m={t[0]},s={t[1]}"),
        )
    )
    argv = ["advise", str(model), "--target", target]
    for sym in draw(
        st.lists(st.sampled_from(["m", "s"]), min_size=draw(st.sampled_from([0, 1, 1])), max_size=2, unique=True)
    ):
        argv += ["--grid", draw(_grid(sym))]
    if draw(st.booleans()):
        argv += ["--interval", draw(st.sampled_from(LEVELS))]
    if draw(st.integers(0, 3)) == 0:
        argv += ["--budget", draw(st.sampled_from(base.NUMBERS))]
    out = files.dir / f"advise_{next(SERIAL)}.csv"
    argv += ["--out", str(out)]

    def check():
        if _NONFINITE.search(case_out[0]):
            return f"non-finite number printed: {_NONFINITE.search(case_out[0]).group(0)}"
        live = live_formulas(out)
        return f"live formula cells: {live[:2]}" if live else ""

    case_out = [""]
    return Case(argv, check, {"out": case_out})


def _show_case(files: Files, draw) -> Case:
    model = _hostile_model(files, draw)
    argv = ["show", str(model)]
    if draw(st.booleans()):
        argv += ["--interval", draw(st.sampled_from(LEVELS))]

    def check():
        shown = case_out[0]
        return f"non-finite number shown: {_NONFINITE.search(shown).group(0)}" if _NONFINITE.search(shown) else ""

    case_out = [""]
    return Case(argv, check, {"out": case_out})


PLANS = [
    b"",
    b"\n\n",
    b"p\n1\n2\n",
    b"p,b\n1,2\n3\n",
    b"p\n1,2,3\n",
    b'p\n"1\n',
    b"p\n\xff\xfe\n",
    b"\x00\x01",
    b"q\n1\n",
    b"p,in_plan\n1,True\n2,False\n",
    b"p\n" + b"1\n" * 5,
    b"p\n=HYPERLINK(1)\n-2.5\n",
]


#: Grids of the sweep: hostile values, a short one, and one above the limit of runs (refused unbuilt).
SWEEP_GRIDS = ["p=" + v for v in GROUP_VALUES[:6]] + [
    "p=" + ",".join(map(str, range(1, 21))),
    "p=" + ",".join(map(str, range(1, 1_000_002))),
    "p=",
    "p",
    "=4",
]


def _sweep_case(files: Files, draw) -> Case:
    out = files.dir / f"sweep_{next(SERIAL)}.csv"
    command = draw(
        st.sampled_from(
            [
                f"{PY} -c pass {{p}}",
                "{p}",
                f"{PY} -c pass",
                "",
                "no-such-program {p}",
                f"{PY} -c pass {{p}} {{q}}",
                f"{PY} -c pass {{{{p}}}} {{p}}",
            ]
        )
    )
    argv = ["sweep", "--command", command]
    if draw(st.booleans()):
        argv += ["--plan", str(files.write(f"plan_{next(SERIAL)}.csv", draw(st.sampled_from(PLANS))))]
    else:
        argv += ["--grid", draw(st.one_of(_values().map(lambda v: f"p={v}"), st.sampled_from(SWEEP_GRIDS)))]
    if draw(st.booleans()):  # runs that would go on for minutes are not drawn: they are no hang
        argv += [
            "--repeat",
            draw(st.sampled_from(["0", "1", "2", "-1", "nan", "x", "1e9", "1000001", "99999999999999999999"])),
        ]
    if draw(st.integers(0, 3)) == 0:
        argv += ["--timeout", draw(st.sampled_from(["nan", "-1", "0", "inf", "5", "x"]))]
    argv += ["--out", str(out)]

    def check():
        live = live_formulas(out)
        return f"live formula cells: {live[:2]}" if live else ""

    return Case(argv, check)


# -- issue 32: units, round trips, the terminal, wide and decimal-comma CSVs, plans, bounded work ---------------
#: Time columns and the seconds one of their values is (None: the name states a unit the reader refuses).
UNIT_NAMES = [
    ("time_s", 1.0),
    ("time_min_s", 1.0),
    ("time_max_s", 1.0),
    ("time_us_east", 1.0),
    ("time_s_per_100_ms", 1.0),
    ("step_time_ms", 1e-3),
    ("ms/step", 1e-3),
    ("time_per_step_ms", 1e-3),
    ("latency_ns", 1e-9),
    ("elapsed (ps)", 1e-12),
    ("duration_days", 86400.0),
    ("wall_time_d", 86400.0),
    ("time_weeks", 604800.0),
    ("epoch time (min)", 60.0),
    ("Time [h]", 3600.0),
    ("runtime_minutes", 60.0),
    ("time_m", None),
    ("latency_cycles", None),
]
#: Throughput columns and the seconds of the time unit they are per.
RATE_NAMES = [
    ("images/s", 1.0),
    ("images/min", 60.0),
    ("tokens/hour", 3600.0),
    ("img/ms", 1e-3),
    ("samples_per_sec", 1.0),
    ("tokens per minute", 60.0),
    ("throughput", 1.0),
]
UNIT_SECONDS = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
#: Text that would drive a terminal: window title, clear screen, a C1 CSI, bidi override, carriage return.
HOSTILE_TEXT = ["\x1b]0;pwned\x07fw", "\x1b[2Jclear", "\x9b31mred", "x\u202eevil", "over\rwrite", "bell\x07"]
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _coefficients_check(model: Path, want: dict, rel: float = 1e-4):
    def check():
        c = json.loads(model.read_text())["coefficients"]
        for k, v in want.items():
            if abs(c[k] - v) > rel * abs(v):
                return f"{k} = {c[k]:.6g}, the generating formula's {v:g} (a unit read wrong?)"
        return ""

    return check


def _units_case(files: Files, draw) -> Case:
    """A time or throughput column named in a unit, values from T = 2 + 60/p seconds: the fit's constants
    are the formula's in seconds, or the unit is refused by name; flags that do not apply are refused."""
    model = files.dir / f"units_{next(SERIAL)}.json"
    how = draw(st.sampled_from(["time", "time", "rate", "rate", "dataset flag"]))
    if how == "dataset flag":
        flag = draw(st.sampled_from([["--time-unit", "ms"], ["--throughput", "epoch_time_s"], ["--rate-unit", "min"]]))
        argv = ["fit", "--dataset", "tf-cnn-all", *flag, "--group-by", "model", "--replicates", "0", "--out", model]
        return Case(argv, lambda: f"{flag[0]} ignored with --group-by on a bundled dataset")
    p = [1, 2, 4, 8, 16]
    t = [2 + 60 / v for v in p]
    flags = []
    if how == "time":
        name, unit = draw(st.sampled_from(UNIT_NAMES))
        if draw(st.integers(0, 3)) == 0:
            stated = draw(st.sampled_from(list(UNIT_SECONDS)))
            flags, unit = ["--time-unit", stated], UNIT_SECONDS[stated]
        values = [v / unit for v in t] if unit else t
    else:
        name, unit = draw(st.sampled_from(RATE_NAMES))
        flags = ["--throughput", name]
        if draw(st.integers(0, 3)) == 0:
            stated = draw(st.sampled_from(list(UNIT_SECONDS)))
            flags, unit = flags + ["--rate-unit", stated], UNIT_SECONDS[stated]
        values = [unit / v for v in t]  # work 1 per run: units per (unit of time)
    data = files.write(
        f"units_{next(SERIAL)}.csv", pd.DataFrame({"gpus": p, name: values}).to_csv(index=False, float_format="%.17g")
    )
    argv = ["fit", str(data), *flags, "--terms", "1 + 1/p", "--lambda", "0", "--replicates", "0", "--out", model]
    if unit is None:
        return Case(argv, lambda: f"{name!r} states a unit the reader does not know, read as seconds")
    return Case(argv, _coefficients_check(model, {"c0": 2.0, "c1": 60.0}))


def _spoiled_series(draw) -> pd.DataFrame:
    kind = draw(st.sampled_from(["noisy", "outlier", "ill", "warm-up"]))
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    rows = []
    for p in (1, 2, 4, 8, 16, 32):
        for b in (32, 64):
            t = 2 + np.ceil(50_000 / (p * b)) * (0.002 * b**0.9 + 0.001 * np.log2(p)) + 0.01 * p
            for r in range(3):
                v = {
                    "noisy": t * np.exp(rng.normal(0, 0.7)),
                    "outlier": t * np.exp(rng.normal(0, 0.02)),
                    "ill": 10 ** rng.uniform(-1, 4),
                    "warm-up": t * (rng.uniform(5, 100) if r == 0 else 1),
                }[kind]
                rows.append({"p": p, "b": b, "N": 50_000, "nodes": max(1, p // 8), "time_s": v})
    frame = pd.DataFrame(rows)
    if kind == "outlier":
        frame.loc[int(rng.integers(len(frame))), "time_s"] *= draw(st.sampled_from([75, 1e4, 1e-3]))
    return frame


def _round_trip(files: Files, model: Path) -> str:
    """What show, predict --interval, plan or advise refuses about a model file fit wrote ('' for none)."""
    d = json.loads(model.read_text())
    ranges = d["factor_ranges"]
    grid = [a for s, (lo, hi) in ranges.items() for a in ("--grid", f"{s}={lo:.12g},{hi:.12g},{2 * hi:.12g}")]
    target = ",".join(f"{s}={2 * hi:.12g}" for s, (lo, hi) in ranges.items())
    first = next(iter(ranges))
    for argv in (
        ["show", str(model)],
        ["predict", str(model), *grid, "--interval", "0.9"],
        ["plan", str(model), *grid],
        ["advise", str(model), "--target", target, "--grid", grid[1]],
    ):
        got = run_command(argv, files.dir, timeout=120)
        if got.code != 0:
            return f"fit wrote {model.name}, which {argv[0]} refuses: {got.err.strip()[-200:]} ({first}...)"
    return ""


def _roundtrip_case(files: Files, draw) -> Case:
    """fit on seeded noisy, outlier-ridden or ill-fitting runs (a preset, terms or --auto, with or without
    groups); every model file written must be read by show, predict --interval, plan and advise."""
    frame = _spoiled_series(draw)
    grouped = draw(st.integers(0, 3)) == 0
    if grouped:
        frame = pd.concat([frame.assign(job="a"), _spoiled_series(draw).assign(job="b")])
    data = files.write(f"spoiled_{next(SERIAL)}.csv", frame.to_csv(index=False))
    hows = [["--preset", pre] for pre in sorted(PRESETS)] + [["--terms", "1 + 1/p"]]
    how = draw(st.sampled_from(hows if grouped else [*hows, ["--auto"]]))  # --auto per group: minutes
    factors = [a for s in ("p", "b", "N", "nodes") for a in ("--factor", f"{s}={s}")]
    out = files.dir / (f"rt_{next(SERIAL)}" + ("" if grouped else ".json"))
    argv = ["fit", str(data), "--time", "time_s", *factors, *how, "--replicates", "40", "--out", str(out)]
    if grouped:
        argv += ["--group-by", "job", "--workers", "1", "--cv", "0"]

    def check():
        for model in sorted(out.glob("*.json")) if grouped else [out]:
            wrong = _round_trip(files, model)
            if wrong:
                return wrong
        return ""

    return Case(argv, check)


def _terminal_case(files: Files, draw) -> Case:
    """Group values and column names that would drive a terminal: what reaches stdout and stderr has its
    control characters escaped, and an error stays one line."""
    values = draw(st.lists(st.sampled_from(HOSTILE_TEXT), min_size=1, max_size=3, unique=True))
    column = draw(st.sampled_from(["t", "t\x1b[2J", "time\nx", "t\u202e"]))
    rows = [(v, m, 1 + 0.1 * k + 30 / m) for k, v in enumerate(values) for m in (4, 8, 16, 32)]
    data = files.write(f"term_{next(SERIAL)}.csv", pd.DataFrame(rows, columns=["fw", "m", column]).to_csv(index=False))
    time = draw(st.sampled_from([column, "bogus"]))
    argv = ["fit", str(data), "--time", time, "--factor", "m=m", "--terms", "1 + 1/m", "--group-by", "fw"]
    argv += ["--workers", "1", "--replicates", "0", "--out", str(files.dir / f"term_{next(SERIAL)}")]

    def check():
        raw = _RAW_CONTROL.search(note["out"][0] + note["err"][0])
        return f"a raw control character {raw.group(0)!r} reached the terminal" if raw else ""

    note = {"out": [""], "err": [""]}
    return Case(argv, check, note)


def _csv_case(files: Files, draw) -> Case:
    """Wide headers (read or refused within seconds, linear in the columns) and ';' files with decimal
    commas and grouped thousands (read right, or a mixed column refused by row)."""
    how = draw(st.sampled_from(["wide", "wide", "comma", "comma"]))
    model = files.dir / f"csv_{next(SERIAL)}.json"
    if how == "wide":
        n = draw(st.sampled_from([3, 999, 1000, 1001, 10_000, 100_000]))
        names = ["p", "time_s"] + [f"c{i}" for i in range(n - 2)]
        if draw(st.booleans()):
            names[-1] = "c0" if n > 3 else "p"  # a repeated name
        rows = [",".join([str(p), str(2 + 60 / p)] + ["1"] * (n - 2)) for p in (1, 2, 4, 8)]
        data = files.write(f"wide_{next(SERIAL)}.csv", ",".join(names) + "\n" + "\n".join(rows) + "\n")
        argv = ["fit", str(data), "--time", "time_s", "--factor", "p=p", "--terms", "1 + 1/p", "--lambda", "0"]
        return Case(
            [*argv, "--replicates", "0", "--out", str(model)],
            _coefficients_check(model, {"c0": 2, "c1": 60}),
            seconds=20,
        )
    scale = draw(st.sampled_from([1, 1000, 1_000_000]))  # seconds as written: thousands grouped by points
    mixed = scale >= 1000 and draw(st.integers(0, 2)) == 0  # "62000.000" beside "32.000,000"

    def german(v: float) -> str:
        whole, frac = f"{v:.3f}".split(".")
        return f"{int(whole):,}".replace(",", ".") + "," + frac

    p = [1, 2, 4, 8, 16]
    cells = [german(scale * (2 + 60 / v)) for v in p]
    if mixed:
        cells[0] = f"{scale * (2 + 60 / p[0]):.3f}"  # a decimal point beside decimal commas
    data = files.write(
        f"comma_{next(SERIAL)}.csv", "p;time_s\n" + "".join(f"{a};{b}\n" for a, b in zip(p, cells, strict=True))
    )
    argv = ["fit", str(data), "--time", "time_s", "--factor", "p=p", "--terms", "1 + 1/p", "--lambda", "0"]
    check = _coefficients_check(model, {"c0": 2.0 * scale, "c1": 60.0 * scale}, rel=1e-3)
    note = {"err": [""]}
    if mixed:  # the comma cells of a column that also writes a point are not numbers: dropped, and said

        def check():
            return "" if "dropped row" in note["err"][0] else "a column mixing decimal points and commas was read"

    return Case([*argv, "--replicates", "0", "--out", str(model)], check, note)


def _plan_case(files: Files, draw) -> Case:
    """plan with hostile repeats, grids and prices, on the base model and one with a nodes column: nothing
    non-finite printed, and a node-hour price counts the nodes column."""
    nodes = draw(st.booleans())
    model = files.nodes_model if nodes else files.model
    out = files.dir / f"plan_{next(SERIAL)}.csv"
    big = ["1e300", "1e308", "1e-300", "0", "-8", "nan", "4", "16"]
    if nodes:
        argv = ["plan", str(model), "--at", "nodes=" + draw(st.sampled_from(["2", "8", "0", "-1"]))]
        argv += ["--grid", "p=" + ",".join(draw(st.lists(st.sampled_from(big), min_size=1, max_size=3)))]
    else:
        argv = ["plan", str(model), "--at", "s=" + draw(st.sampled_from(["1", "0.5", "0", "-8000"]))]
        argv += ["--grid", "m=" + ",".join(draw(st.lists(st.sampled_from(big), min_size=1, max_size=3)))]
    argv += ["--repeat", draw(st.sampled_from(["1", "90", "1e308", "1e-300", "0", "inf"]))]
    price = draw(st.sampled_from(["none", "gpu", "node", "node+gpn"]))
    if price == "gpu":
        argv += ["--gpu-hour-price", draw(st.sampled_from(["2", "0", "1e308"]))]
    elif price.startswith("node"):
        argv += ["--node-hour-price", draw(st.sampled_from(["3", "1e308"]))]
        if price == "node+gpn" or not nodes:
            argv += ["--gpus-per-node", draw(st.sampled_from(["8", "0", "5000", "0.5"]))]
    argv += ["--out", str(out)]

    def check():
        if _NONFINITE.search(note["out"][0]):
            return f"non-finite number printed: {_NONFINITE.search(note['out'][0]).group(0)}"
        table = pd.read_csv(out)
        if nodes and "--node-hour-price" in argv and "cost" in table:
            price_ = float(argv[argv.index("--node-hour-price") + 1])
            want = table["time_s"] / 3600 * table["nodes"] * price_
            if not np.allclose(table["cost"], want, rtol=1e-9):
                return "a node-hour price did not count the nodes column"
        return ""

    note = {"out": [""]}
    return Case(argv, check, note)


def _bounded_case(files: Files, draw) -> Case:
    """A model file within every stated limit (50 members × 10,000 replicates) asked for grids of growing
    size: refused before the work starts, or done within a minute (and the 2 GB address space)."""
    model = files.large_model
    n = draw(st.sampled_from([1, 5, 40, 41, 200, 10_000]))
    values = ",".join(str(v) for v in range(1, n + 1))
    command = draw(st.sampled_from(["predict", "plan", "advise"]))
    argv = {
        "predict": ["predict", str(model), "--grid", f"m={values}", "--grid", "s=1", "--interval", "0.9"],
        "plan": ["plan", str(model), "--grid", f"m={values}", "--at", "s=1", "--deadline", "1h"],
        "advise": ["advise", str(model), "--target", "m=64,s=1", "--grid", f"m={values}"],
    }[command]
    return Case(argv, lambda: "", seconds=60)


TARGETS = {"fit": _fit_case, "predict": _predict_case, "advise": _advise_case, "sweep": _sweep_case, "show": _show_case}
#: The classes of issue 32, each a target of its own.
TARGETS.update(
    units=_units_case,
    roundtrip=_roundtrip_case,
    terminal=_terminal_case,
    csv=_csv_case,
    plan=_plan_case,
    bounded=_bounded_case,
)


# -- running ------------------------------------------------------------------------------------------------
class Tally:
    def __init__(self):
        self.counts: Counter = Counter()
        self.examples: dict[str, list[str]] = {}


def run_target(name: str, examples: int, seed: int, files: Files, timeout: float = 60.0) -> Tally:
    """Run ``examples`` generated commands of target ``name`` and count their outcomes."""
    tally = Tally()

    @hseed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(st.data())
    def check(data):
        case = TARGETS[name](files, data.draw)
        run = run_command([str(a) for a in case.argv], files.dir, timeout)
        for key in ("out", "err"):
            if key in case.note:
                case.note[key][0] = getattr(run, key)
        try:
            outcome, why = judge(run, case.check)
        except Exception as exc:
            outcome, why = "silent wrong", f"unreadable output: {type(exc).__name__}: {exc}"
        if case.seconds is not None and run.code is not None and run.seconds > case.seconds:
            outcome, why = "hang", f"took {run.seconds:.1f} s, more than {case.seconds:g} s"
        tally.counts["tried"] += 1
        tally.counts[outcome] += 1
        if outcome not in ("clear error", "success") and len(tally.examples.setdefault(outcome, [])) < 5:
            tally.examples[outcome].append(f"{why} <- {case.argv!r:.400}\n{run.err[-600:]}")

    check()
    return tally


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200, help="commands per target (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a command counts as a hang")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), help="only these (repeatable)")
    args = parser.parse_args(argv)
    files = Files()
    total = Counter()
    print(f"{'target':<8} {'tried':>6} " + " ".join(f"{o:>14}" for o in OUTCOMES) + f" {'seconds':>8}")
    for name in args.target or list(TARGETS):
        t0 = time.perf_counter()
        try:
            tally = run_target(name, args.examples, args.seed, files, args.timeout)
        except BaseException:
            files.close()
            raise
        total.update(tally.counts)
        c = tally.counts
        print(
            f"{name:<8} {c['tried']:>6} "
            + " ".join(f"{c[o]:>14}" for o in OUTCOMES)
            + f" {time.perf_counter() - t0:>8.1f}",
            flush=True,
        )
        for outcome, examples in tally.examples.items():
            for e in examples:
                print(f"    {outcome}: " + e.replace("\n", "\n      "))
    print(f"{'total':<8} {total['tried']:>6} " + " ".join(f"{total[o]:>14}" for o in OUTCOMES))
    files.close()
    return 1 if any(total[o] for o in ("silent wrong", "internal error", "hang")) else 0


if __name__ == "__main__":
    sys.exit(main_())
