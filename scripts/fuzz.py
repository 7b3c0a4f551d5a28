"""Property-based fuzzing of everything that reads user input (Hypothesis).

Targets: the CSV reader (with validation and a quick fit), the Extra-P reader, the term parser
(with evaluation), the hold-out query, the model-file loader (with show, predict and the Python
export) and the exported Python code itself. The property of every target: the call returns a
result or raises :class:`perfmodel.PerfModelError` with a message; nothing else. The exported code
must also consist only of an import, literal constants and ``def predict``, and compute what
``FitResult.predict`` computes.

    python scripts/fuzz.py                       # 10,000 inputs per target, seed 0
    python scripts/fuzz.py --examples 500 --target term_parser --seed 3

Prints, per target: inputs tried, results, clear errors, other exceptions (the first few shown).
``tests/test_fuzz.py`` runs a seeded slice of the same targets in the test suite.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, Phase, given, reject, seed as hseed, settings, strategies as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from perfmodel import FitResult, Measurements, Model, PerfModelError, report  # noqa: E402
from perfmodel.data import measurements_from_extrap, read_csv, read_extrap  # noqa: E402
from perfmodel.language import parse_expression  # noqa: E402
from perfmodel.language.query import evaluate_query  # noqa: E402

# -- building blocks -----------------------------------------------------------------------------
NUMBERS = [
    "0",
    "1",
    "2",
    "-1",
    "0.5",
    "1e308",
    "1.7e308",
    "-1e308",
    "1e-300",
    "5e-324",
    "1e999",
    "-0",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "9" * 400,
    "9" * 5000,
    "0x10",
    "1_000",
    "1e",
    ".",
    "+",
    "3.",
    ".5",
    "1e-5",
    "12345678901234567890",
    "2e307",
    "4e-310",
]
NASTY = [
    '"""',
    "'''",
    '"',
    "'",
    "\\",
    "\n",
    "\r\n",
    "\r",
    "\x00",
    "\x1b[31m",
    "\u2028",
    "\ufeff",
    "é",
    "🚀",
    ",",
    ";",
    "\t",
    "|",
    " ",
    "#",
    "=",
    "(",
    ")",
    "{",
    "}",
    "__import__('os').system('true')",
    "\"\"\" + __import__('pathlib').Path('PWNED').write_text('x') + \"\"\"",
]
NAMES = [
    "p",
    "N",
    "b",
    "E",
    "I",
    "e",
    "e1",
    "x",
    "y",
    "time",
    "region",
    "metric",
    "repetition",
    "status",
    "if",
    "lambda",
    "None",
    "True",
    "np",
    "log2",
    "exp",
    "_x",
    "__class__",
    "time_s",
    "p.1",
    "",
]
TERM_TOKENS = [
    "p",
    "N",
    "b",
    "E",
    "I",
    "e1",
    "e_b",
    "x",
    "1",
    "2",
    "0",
    "0.5",
    "1e300",
    "1e301",
    "9" * 400,
    "1e999",
    "+",
    "-",
    "*",
    "/",
    "^",
    "**",
    "(",
    ")",
    ",",
    " ",
    "log2(",
    "log(",
    "sqrt(",
    "exp(",
    "min(",
    "max(",
    "ceil(",
    "abs(",
    "__import__",
    "_x",
    "if",
    "lambda",
    ".",
    "[",
    "]",
    "=",
    ":",
    "'",
    '"',
    ";",
    "<",
    ">",
    "~",
    "@",
    "%",
    "&",
    "|",
    "not ",
    "j",
    "1j",
    "\x00",
    "é",
]
QUERY_TOKENS = TERM_TOKENS + ["==", "!=", "<=", ">=", " and ", " or ", " not ", "&&", "||", "q", "time_s"]


def _grammar(names):
    """Expressions built from names, numbers, operators and function calls (mostly well formed)."""
    atoms = st.one_of(
        st.sampled_from(names),
        st.sampled_from(["1", "2", "0.5", "0", "1e300", "1e301", "9" * 400, "1e-300", "16", "17", "1e999"]),
    )
    funcs = ["log2", "log", "log10", "sqrt", "exp", "ceil", "floor", "abs", "min", "max", "__import__", "eval"]

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from([" + ", " - ", "*", "/", "^"]), inner).map("".join),
            st.tuples(st.sampled_from(funcs), inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"max({t[0]}, {t[1]})"),
            inner.map(lambda t: f"({t})"),
            inner.map(lambda t: f"-{t}"),
        )

    return st.recursive(atoms, extend, max_leaves=12)


text_bits = st.one_of(st.sampled_from(NUMBERS), st.sampled_from(NASTY), st.sampled_from(NAMES), st.text(max_size=4))


def _joined(tokens, max_size=30):
    return st.lists(st.one_of(st.sampled_from(tokens), st.text(max_size=2)), max_size=max_size).map("".join)


GOOD_NUMBERS = [str(v) for v in (1, 2, 3, 4, 8, 16, 0.5, 1e3, 1e6)] + [
    "1e308",
    "1.7e308",
    "1e-300",
    "1e307",
    "5e-324",
    "0",
    "-1",
    "1e200",
]


@st.composite
def csv_bytes(draw):
    """A delimited table: hostile headers and cells, a nearly valid table, or raw bytes."""
    kind = draw(st.sampled_from(["bytes"] + ["hostile"] * 4 + ["nearly valid"] * 5))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "nearly valid":  # columns p, N, time with numbers that may be extreme
        header = ["p", "N", "time"]
        if draw(st.booleans()):
            header[draw(st.integers(0, 2))] = draw(text_bits)
        rows = [",".join(header)]
        for _ in range(draw(st.integers(1, 10))):
            cells = [
                draw(st.sampled_from(GOOD_NUMBERS if draw(st.integers(0, 5)) else NUMBERS + NASTY)) for _ in range(3)
            ]
            rows.append(",".join(cells))
        return "\n".join(rows).encode()
    delim = draw(st.sampled_from([",", ";", "\t", "|", " "]))
    ncol = draw(st.integers(1, 4))
    header = [draw(st.one_of(st.sampled_from(NAMES), text_bits)) for _ in range(ncol)]
    rows = [delim.join(header)]
    for _ in range(draw(st.integers(0, 8))):
        cells = [
            draw(st.one_of(st.sampled_from(NUMBERS), st.sampled_from([str(v) for v in range(1, 9)]), text_bits))
            for _ in range(draw(st.integers(ncol - 1, ncol + 1)))
        ]
        rows.append(delim.join(cells))
    text = "\n".join(rows)
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "latin-1", "utf-16"]))
    return text.encode(encoding, "replace")


@st.composite
def extrap_bytes(draw):
    kind = draw(st.sampled_from(["bytes"] + ["hostile"] * 4 + ["nearly valid"] * 5))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "nearly valid":  # one or two parameters, matching POINTS and DATA
        params = draw(st.sampled_from([["p"], ["p", "n"], ["x", "y"], ["p", "p"], ["time"], ["if"]]))
        k = draw(st.integers(1, 5))
        points = ["(" + " ".join(draw(st.sampled_from(GOOD_NUMBERS)) for _ in params) + ")" for _ in range(k)]
        lines = ["PARAMETER " + " ".join(params), "POINTS " + " ".join(points)]
        if draw(st.booleans()):
            lines.append("REGION " + draw(text_bits).replace("\n", " "))
        for _ in range(k + draw(st.integers(-1, 1))):
            lines.append(
                "DATA " + " ".join(draw(st.sampled_from(GOOD_NUMBERS)) for _ in range(draw(st.integers(1, 3))))
            )
        return "\n".join(lines).encode()
    lines = []
    keywords = ["PARAMETER", "POINTS", "REGION", "METRIC", "DATA", "EXPERIMENT", "#", ""]
    n_params = draw(st.integers(1, 3))
    params = [draw(st.sampled_from(NAMES)) for _ in range(n_params)]
    lines.append("PARAMETER " + " ".join(params))
    for _ in range(draw(st.integers(0, 10))):
        kw = draw(st.sampled_from(keywords))
        if kw == "POINTS":
            groups = [
                "("
                + " ".join(
                    draw(st.sampled_from(NUMBERS[:12] + ["1", "2", "4", "8"])) for _ in range(draw(st.integers(1, 3)))
                )
                + ")"
                for _ in range(draw(st.integers(1, 4)))
            ]
            lines.append("POINTS " + " ".join(groups))
        elif kw == "DATA":
            lines.append(
                "DATA "
                + " ".join(draw(st.sampled_from(NUMBERS + ["1", "2.5", "3"])) for _ in range(draw(st.integers(0, 3))))
            )
        else:
            lines.append(kw + " " + draw(text_bits))
    return "\n".join(lines).encode("utf-8", "replace")


@st.composite
def model_texts(draw):
    """A valid model file with random parts replaced, deleted or added, or its text cut or spoiled."""
    base = draw(st.sampled_from(_base_models()))
    d = json.loads(json.dumps(base))
    json_values = st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-2, 2),
            st.sampled_from([10**400, -(2**64), 2**32]),
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from(NAMES + NASTY),
        ),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES + ["c0", "c1", "c9"]), inner, max_size=3)
        ),
        max_leaves=6,
    )
    for _ in range(draw(st.integers(1, 4))):
        path = _random_path(draw, d)
        parent, key = path
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict) and key in parent:
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(NAMES + NASTY + ["c7"]))] = draw(json_values)
        elif isinstance(parent, dict) or (isinstance(parent, list) and key < len(parent)):
            parent[key] = draw(json_values)
    text = json.dumps(d, allow_nan=True)
    spoil = draw(st.sampled_from(["none"] * 7 + ["cut", "deep", "bytes"]))
    if spoil == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif spoil == "deep":
        text = "[" * draw(st.integers(1, 200_000)) + text
    elif spoil == "bytes":
        return text.encode() + draw(st.binary(max_size=8))
    return text


def _random_path(draw, d):
    node, parent, key = d, None, None
    for _ in range(draw(st.integers(1, 3))):
        if isinstance(node, dict) and node:
            k = draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            k = draw(st.integers(0, len(node) - 1))
        else:
            break
        parent, key, node = node, k, node[k]
    if parent is None:
        return d, draw(st.sampled_from(sorted(d)))
    return parent, key


_BASE: list = []


def _base_models() -> list[dict]:
    """Two small fitted models (one with a free exponent and a negative term), as model-file dicts."""
    if not _BASE:
        rng = np.random.default_rng(0)
        p = np.repeat([1.0, 2, 4, 8, 16], 2)
        N = np.tile([1000.0, 4000], 5)
        frame = pd.DataFrame(
            {"workers": p, "samples": N, "t": 2 + 0.01 * N / p + 0.3 * np.log2(p) + rng.normal(0, 0.01, p.size)}
        )
        meas = Measurements.from_frame(frame, "t", {"p": "workers", "N": "samples"})
        for spec, nonneg in (("1 + N/p + log2(p)", True), ("1 + N/p^e1 - p", False)):
            _BASE.append(Model(spec, maxiter=20, nonneg=nonneg).fit(meas).to_dict())
    return _BASE


@st.composite
def hostile_results(draw):
    """A quick fit to data whose column and dataset names are arbitrary text."""
    names = draw(
        st.lists(
            st.one_of(st.sampled_from(NASTY + NAMES), st.text(max_size=12)), min_size=2, max_size=2, unique_by=str.strip
        )
    )
    symbols = draw(st.sampled_from([("p", "N"), ("np", "x"), ("numpy", "np"), ("E", "b")]))
    p = np.array([1.0, 2, 4, 8, 1, 2, 4, 8])
    n = np.array([1.0, 1, 1, 1, 3, 3, 3, 3])
    frame = pd.DataFrame({names[0].strip() or "a": p, names[1].strip() or "b_": n})
    cols = list(frame.columns)
    frame["time s"] = 1 + 2 * n / p
    spec = draw(
        st.sampled_from(
            [f"1 + {symbols[1]}/{symbols[0]}", f"1 + {symbols[0]}^e1", f"1 - log2({symbols[0]}) + {symbols[1]}"]
        )
    )
    try:
        # strict=False: two drawn names that strip to the same column leave one column for two symbols
        meas = Measurements.from_frame(frame, "time s", dict(zip(symbols, cols, strict=False)), name=draw(text_bits))
        return Model(spec, maxiter=5, popsize=4, nonneg=False).fit(meas)
    except PerfModelError:  # e.g. a column named like the free exponent: not an export input
        reject()


def _comparisons():
    side = _grammar(["p", "N", "b", "E", "time_s", "q", "I"])
    one = st.tuples(side, st.sampled_from([" > ", " >= ", " < ", " <= ", " == ", " != ", " = ", " <> "]), side).map(
        "".join
    )
    return st.lists(one, min_size=1, max_size=3).flatmap(
        lambda parts: st.sampled_from([" and ", " or ", " & ", " | ", " and not "]).map(lambda j: j.join(parts))
    )


ENV = {
    "p": np.array([1.0, 2, 4, 8]),
    "N": np.array([1e3, 2e3, 4e3, 8e3]),
    "b": np.array([32.0, 32, 64, 64]),
    "E": np.array([1.0, 1, 2, 2]),
    "time_s": np.array([3.0, 2, 1.5, 1.2]),
}


# -- targets ---------------------------------------------------------------------------------------
def target_csv(content: bytes):
    frame = read_csv(content)
    cols = list(frame.columns)
    # strict=False: a fuzzed CSV has any number of columns; the first ones (at most three) become factors
    meas = Measurements.from_frame(frame, cols[-1], {s: c for s, c in zip(["p", "N", "if"], cols[:-1], strict=False)})
    meas.summary()
    return Model("1 + p" if "p" in meas.factors else "1", maxiter=3, popsize=4).fit(meas)


def target_extrap(content: bytes):
    frame = read_extrap(content)
    meas = measurements_from_extrap(frame)
    return meas.summary()


def target_term_parser(spec: str):
    expr, _ = parse_expression(spec, ["p", "N", "b", "E"], {"e1": (0, 2)}, columns=["time_s"])
    env = {k: v for k, v in ENV.items() if k != "time_s"}
    expr.check_domain(env)
    theta = np.array([lo for lo, _ in expr.bounds.values()])
    return expr.term_values(env, theta)


def target_query(query: str):
    return evaluate_query(query, ENV)


def target_model_file(text):
    res = FitResult.from_json(text)
    res.formula()
    res.report()
    frame = pd.DataFrame({col: [1.0, 2.0, 4.0] for col in res.factors.values()})
    res.predict(frame)
    check_exported_code(res)
    return res


def target_export(res: FitResult):
    return check_exported_code(res)


def check_exported_code(res: FitResult):
    """The exported code: only an import, literal constants and ``def predict``; same predictions."""
    code = report.python_snippet(res)
    tree = ast.parse(code)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.FunctionDef)):
            continue
        if isinstance(node, ast.Assign):
            ast.literal_eval(node.value)  # raises unless a literal
            continue
        raise AssertionError(f"unexpected top-level statement in the export: {ast.dump(node)[:80]}")
    [fn] = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert fn.name == "predict" and [a.arg for a in fn.args.args] == list(res.factors)
    namespace: dict = {}
    exec(compile(code, "export.py", "exec"), namespace)  # checked above: nothing but definitions
    values = {s: np.array([1.0, 2.0, 4.0]) for s in res.factors}
    want = res.predict(values)
    with np.errstate(all="ignore"):
        got = np.broadcast_to(namespace["predict"](*values.values()), want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-9, equal_nan=True)
    return code


TARGETS = {
    "csv": (csv_bytes(), target_csv),
    "extrap": (extrap_bytes(), target_extrap),
    "term_parser": (
        st.one_of(_grammar(["p", "N", "b", "E", "I", "e1", "x"]), _joined(TERM_TOKENS)),
        target_term_parser,
    ),
    "query": (st.one_of(_comparisons(), _joined(QUERY_TOKENS)), target_query),
    "model_file": (model_texts(), target_model_file),
    "export": (hostile_results(), target_export),
}


# -- running ------------------------------------------------------------------------------------------
class Tally:
    def __init__(self):
        self.counts: Counter = Counter()
        self.others: list[str] = []


def run_target(name: str, examples: int, seed: int, raise_other: bool) -> Tally:
    """Feed ``examples`` generated inputs to target ``name``; count results, clear errors and others.

    With ``raise_other`` an exception other than PerfModelError propagates (Hypothesis then shrinks
    it and the test fails); otherwise it is counted and the run goes on."""
    strategy, fn = TARGETS[name]
    tally = Tally()

    @hseed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate] + ([Phase.shrink] if raise_other else []),
    )
    @given(strategy)
    def check(value):
        tally.counts["tried"] += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn(value)
        except PerfModelError as exc:
            msg = str(exc)
            if not msg.strip():
                raise AssertionError(f"PerfModelError without a message for {value!r:.200}") from None
            tally.counts["clear error"] += 1
            return
        except Exception as exc:
            tally.counts["other exception"] += 1
            if len(tally.others) < 5:
                tally.others.append(
                    f"{type(exc).__name__}: {exc!s:.200} <- {value!r:.300}\n"
                    + "".join(traceback.format_exc().splitlines(True)[-4:])
                )
            if raise_other:
                raise
            return
        tally.counts["result"] += 1

    check()
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per target (default 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), help="only these (repeatable)")
    args = parser.parse_args(argv)
    total_other = 0
    print(f"{'target':<12} {'tried':>7} {'results':>8} {'clear errors':>13} {'other exceptions':>17} {'seconds':>8}")
    for name in args.target or list(TARGETS):
        t0 = time.perf_counter()
        tally = run_target(name, args.examples, args.seed, raise_other=False)
        c = tally.counts
        total_other += c["other exception"]
        print(
            f"{name:<12} {c['tried']:>7} {c['result']:>8} {c['clear error']:>13} {c['other exception']:>17} "
            f"{time.perf_counter() - t0:>8.1f}",
            flush=True,
        )
        for other in tally.others:
            print("    " + other.replace("\n", "\n    "))
    return 1 if total_other else 0


if __name__ == "__main__":
    sys.exit(main())
