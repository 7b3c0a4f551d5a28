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

import pandas as pd  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz as base  # noqa: E402  (scripts/fuzz.py: NUMBERS, NASTY, the term grammar; puts ROOT on sys.path)

from perfmodel import FitResult  # noqa: E402
from perfmodel.cli import main  # noqa: E402
from perfmodel.spreadsheet import TRIGGERS  # noqa: E402

ROOT = base.ROOT
RCV1 = ROOT / "data" / "ernest" / "rcv1.csv"
OUTCOMES = ("clear error", "success", "silent wrong", "internal error", "hang")
MEMORY_CAP = 2_000_000_000  # bytes of address space per command
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


def run_command(argv: list[str], cwd: Path, timeout: float) -> Run:
    """``main(argv)`` in a forked child in its own session; the whole session is killed on timeout."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.setsid()
                resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
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
    note = draw(st.sampled_from(GROUP_VALUES))
    data = files.write(
        f"rows_{next(SERIAL)}.csv",
        pd.DataFrame(
            {"cores": [r[0] for r in rows], "input_fraction": [r[1] for r in rows], "note": [note] * len(rows)}
        ).to_csv(index=False),
    )
    out = files.dir / f"pred_{next(SERIAL)}.csv"
    argv = ["predict", str(model), str(data), "--out", str(out)]
    if draw(st.booleans()):
        argv += ["--interval", draw(st.sampled_from(LEVELS))]

    def check():
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


TARGETS = {"fit": _fit_case, "predict": _predict_case, "advise": _advise_case, "sweep": _sweep_case, "show": _show_case}


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
