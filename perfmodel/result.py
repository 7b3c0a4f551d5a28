"""FitResult: a fitted model as plain data that round-trips through JSON."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .data import Measurements
from .errors import PerfModelError
from .evaluate import metrics as compute_metrics
from .expression import Expression, parse_expression

FORMAT = "perfmodel.fit/1"


@dataclass
class FitResult:
    """Everything a fit produced. Coefficients are named ``c0..`` in term order.

    Attributes
    ----------
    expression : the fitted expression (normalised user syntax).
    terms : term texts; ``signs`` their signs (-1 for a term written with a top-level minus).
    coefficients : {"c0": value, ...} in seconds per unit of the term.
    params : free parameters (exponents) {"e1": value}; ``param_bounds`` their bounds.
    time, factors : the time column and the symbol -> column mapping used.
    settings : λ, penalty, loss, seed and the DE settings (everything needed to refit).
    cost, loss, penalty : the minimised cost and its parts; ``convergence`` DE's report.
    metrics : in-sample metrics; ``shares`` each term's share of the total predicted time.
    factor_ranges : {symbol: [min, max]} of the data (the measured range).
    """

    expression: str
    terms: list
    signs: list
    coefficients: dict
    params: dict
    param_bounds: dict
    time: str
    factors: dict
    settings: dict
    cost: float
    loss: float
    penalty: float
    convergence: dict
    metrics: dict
    shares: dict
    factor_ranges: dict
    n_rows: int
    n_configurations: int
    dataset: str = ""
    dropped: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    validation: dict = field(default_factory=dict)
    version: str = __version__

    # -- construction -------------------------------------------------------
    @classmethod
    def build(cls, model, expr: Expression, meas: Measurements, coefs, theta, problem, z, info) -> "FitResult":
        params = {p: float(v) for p, v in zip(expr.params, theta)}
        coefficients = {f"c{k}": float(c) for k, c in enumerate(coefs)}
        loss, pen = problem.parts(z)
        warnings = []
        for name, (lo, hi) in expr.bounds.items():
            v = params[name]
            if min(v - lo, hi - v) <= 1e-3 * (hi - lo):
                warnings.append(f"{name} = {v:.4g} is at its bound [{lo:g}, {hi:g}]; widen the bounds of "
                                f"{name} if that is not intended")
        if not info.get("success", True) and not info.get("stopped"):
            warnings.append(f"differential evolution did not converge: {info.get('message')}")
        if info.get("stopped"):
            warnings.append("the search was stopped early; the best model so far is shown")
        settings = model.get_params()
        settings["terms"] = expr.spec if model.terms is not None else None
        res = cls(
            expression=expr.text(), terms=[t.text for t in expr.terms], signs=[t.sign for t in expr.terms],
            coefficients=coefficients, params=params,
            param_bounds={k: list(v) for k, v in expr.bounds.items()},
            time=meas.time, factors=dict(meas.factors), settings=settings,
            cost=float(info["cost"]), loss=loss, penalty=pen,
            convergence={k: v for k, v in info.items() if k != "cost"},
            metrics={}, shares={},
            factor_ranges={s: [float(meas.values(s).min()), float(meas.values(s).max())] for s in meas.factors},
            n_rows=meas.n_rows, n_configurations=meas.n_configurations, dataset=meas.name,
            dropped=[str(d) for d in meas.dropped], warnings=warnings)
        pred = res.predict(meas)
        res.metrics = compute_metrics(meas.y, pred, res.n_params)
        contrib = res.contributions(meas)
        total = float(contrib.to_numpy().sum())
        res.shares = {t: (float(contrib[t].sum()) / total if total else float("nan")) for t in res.terms}
        return res

    # -- evaluation ---------------------------------------------------------
    @property
    def n_params(self) -> int:
        return len(self.coefficients) + len(self.params)

    def _expression(self) -> Expression:
        expr, _ = parse_expression(self.expression, list(self.factors),
                                   {k: tuple(v) for k, v in self.param_bounds.items()})
        return expr

    def _env(self, data) -> dict[str, np.ndarray]:
        if isinstance(data, Measurements):
            if set(self.factors) - set(data.factors):
                missing = sorted(set(self.factors) - set(data.factors))
                raise PerfModelError(f"the data does not map symbol(s) {', '.join(missing)}")
            return data.env()
        if isinstance(data, dict):
            data = pd.DataFrame({k: np.atleast_1d(v) for k, v in data.items()})
        if not isinstance(data, pd.DataFrame):
            raise PerfModelError(f"expected a DataFrame, Measurements or dict, got {type(data).__name__}")
        env = {}
        for sym, col in self.factors.items():
            name = col if col in data.columns else sym if sym in data.columns else None
            if name is None:
                raise PerfModelError(f"column {col!r} (symbol {sym}) is missing; the data has: "
                                     f"{', '.join(map(str, data.columns))}")
            values = pd.to_numeric(data[name], errors="coerce").to_numpy(dtype=float)
            bad = ~np.isfinite(values)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise PerfModelError(f"row {i + 1}, column {name!r}: not a finite number "
                                     f"({data[name].iloc[i]!r})")
            env[sym] = values
        return env

    def term_values(self, data) -> np.ndarray:
        """Term values (signs included), shape (K, n)."""
        env = self._env(data)
        n = len(next(iter(env.values()))) if env else len(data)
        expr = self._expression()
        vals = expr.term_values(env, np.array([self.params[p] for p in expr.params]))
        return np.vstack([np.broadcast_to(v, (n,)) for v in vals])

    def contributions(self, data) -> pd.DataFrame:
        """Per-row contribution of each term, ``c_k·term_k(x)``: DataFrame (n, K), columns = terms."""
        T = self.term_values(data)
        c = np.array(list(self.coefficients.values()))
        return pd.DataFrame((c[:, None] * T).T, columns=self.terms)

    def predict(self, data) -> np.ndarray:
        """Predicted time (seconds) for each row of ``data`` (DataFrame, Measurements or dict), shape (n,)."""
        T = self.term_values(data)
        return np.array(list(self.coefficients.values())) @ T

    def outside_range(self, data) -> np.ndarray:
        """True for rows outside the measured range of any factor (extrapolation), shape (n,)."""
        env = self._env(data)
        n = len(next(iter(env.values()))) if env else 0
        out = np.zeros(n, bool)
        for s, (lo, hi) in self.factor_ranges.items():
            out |= (env[s] < lo) | (env[s] > hi)
        return out

    # -- formulas -------------------------------------------------------------
    def formula(self, digits: int = 4) -> str:
        """The formula with fitted numbers, e.g. ``T = 1.9 + 162.2·N/p + ...``."""
        parts = []
        for k, (term, sign) in enumerate(zip(self.terms, self.signs)):
            c = sign * self.coefficients[f"c{k}"]
            text = _fmt(abs(c), digits) if term == "1" else f"{_fmt(abs(c), digits)}·{term}"
            parts.append(("- " if c < 0 else "+ ") + text if parts else ("-" if c < 0 else "") + text)
        out = "T = " + " ".join(parts)
        for name, v in self.params.items():
            out = _replace_name(out, name, _fmt(v, digits))
        return out

    def python_expression(self) -> str:
        """A plain Python/numpy expression of the fitted model over the factor symbols."""
        parts = []
        for k, (term, sign) in enumerate(zip(self.terms, self.signs)):
            c = sign * self.coefficients[f"c{k}"]
            body = repr(c) if term == "1" else f"{c!r} * ({term})"
            parts.append(body)
        text = " + ".join(parts).replace("^", "**")
        for name, v in self.params.items():
            text = _replace_name(text, name, f"({v!r})")
        for fn in ("log2", "log10", "log", "sqrt", "ceil", "floor", "exp", "abs", "min", "max"):
            np_fn = {"min": "minimum", "max": "maximum"}.get(fn, fn)
            text = _replace_call(text, fn, f"np.{np_fn}")
        used = self._expression().symbols
        if "I" in used:
            epochs = "E * " if "E" in self.factors else ""
            workers = "p * " if "p" in self.factors else ""
            text = _replace_name(text, "I", f"({epochs}np.ceil(N / ({workers}b)))")
        if "b" not in self.factors and "B" in self.factors and ("b" in used or "I" in used):
            text = _replace_name(text, "b", "(B / p)" if "p" in self.factors else "B")  # per-worker batch
        return text

    def latex(self, digits: int = 4) -> str:
        """The fitted formula in LaTeX, e.g. ``T = 1.9 + 162.2\\,\\frac{N}{p}``."""
        from .latex import to_latex

        return to_latex(self._expression(), list(self.coefficients.values()), self.params, digits)

    # -- reports ------------------------------------------------------------
    def report(self) -> str:
        """A sectioned, lmfit-style text report."""
        s = self.settings
        lines = ["[[Model]]", f"    T = {self.expression}",
                 f"    factors: {', '.join(f'{k}={v}' for k, v in self.factors.items()) or 'none'}; "
                 f"time: {self.time}",
                 "[[Fit Statistics]]",
                 f"    rows: {self.n_rows} ({self.n_configurations} configurations); parameters: {self.n_params}",
                 f"    loss: {s['loss']}; penalty: {s['penalty']}; lambda: {s['lam']:g}; seed: {s['seed']}",
                 f"    cost: {self.cost:.6g} = loss {self.loss:.6g} + {s['lam']:g} x penalty {self.penalty:.6g}",
                 f"    DE: {self.convergence.get('nit')} generations, {self.convergence.get('nfev')} evaluations, "
                 f"{self.convergence.get('seconds', float('nan')):.2f} s, {self.convergence.get('message')}"]
        for key, val in self.metrics.items():
            lines.append(f"    {key}: {val:.6g}")
        for method, vm in self.validation.items():
            lines.append(f"    {method}: " + ", ".join(f"{k} {v:.4g}" for k, v in vm.items()))
        lines.append("[[Variables]]")
        for k, term in enumerate(self.terms):
            lines.append(f"    c{k}: {self.coefficients[f'c{k}']:<14.8g} term {'-' if self.signs[k] < 0 else ''}"
                         f"{term}  (share {self.shares.get(term, float('nan')) * 100:5.1f} %)")
        for name, v in self.params.items():
            lo, hi = self.param_bounds[name]
            lines.append(f"    {name}: {v:<14.8g} bounds [{lo:g}, {hi:g}]")
        lines += ["[[Formula]]", "    " + self.formula()]
        if self.warnings or self.dropped:
            lines.append("[[Warnings]]")
            lines += [f"    {w}" for w in self.warnings]
            lines += [f"    dropped {d}" for d in self.dropped]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"format": FORMAT, **_jsonable(asdict(self))}

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=True)

    def save(self, path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def from_dict(cls, d: dict) -> "FitResult":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise PerfModelError(f"not a perfmodel model file (expected format {FORMAT!r})")
        fields = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        from dataclasses import MISSING

        required = [k for k, f in cls.__dataclass_fields__.items()
                    if f.default is MISSING and f.default_factory is MISSING]
        missing = [k for k in required if k not in fields]
        if missing:
            raise PerfModelError(f"model file lacks field(s): {', '.join(missing)}")
        res = cls(**fields)
        expr = res._expression()  # validates the stored expression with the same safe parser
        if [t.text for t in expr.terms] != list(res.terms) or len(res.coefficients) != len(res.terms) \
                or set(res.params) != set(expr.params):
            raise PerfModelError("model file is inconsistent: its terms, coefficients and parameters "
                                 "do not match its expression")
        return res

    @classmethod
    def from_json(cls, text: str) -> "FitResult":
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PerfModelError(f"the model file is not valid JSON: {exc.msg} at line {exc.lineno}") from None
        return cls.from_dict(d)

    @classmethod
    def load(cls, path) -> "FitResult":
        p = Path(path)
        if not p.exists():
            raise PerfModelError(f"model file not found: {p}")
        try:
            return cls.from_json(p.read_text())
        except PerfModelError as exc:
            raise PerfModelError(f"{p}: {exc}") from None


def _fmt(v: float, digits: int) -> str:
    if v == 0:
        return "0"
    if not math.isfinite(v):
        return str(v)
    return f"{v:.{digits}g}"


def _replace_name(text: str, name: str, value: str) -> str:
    import re

    return re.sub(rf"(?<![A-Za-z0-9_.]){re.escape(name)}(?![A-Za-z0-9_(])", value, text)


def _replace_call(text: str, name: str, value: str) -> str:
    import re

    return re.sub(rf"(?<![A-Za-z0-9_.]){re.escape(name)}\(", value + "(", text)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj
