"""FitResult: a fitted model as plain data that round-trips through JSON.

Imports from the model language, data and fitting layers only: a FitResult evaluates its stored
intervals (fitting.members) but never computes them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.measurements import Measurements, configuration_ids, nodes_of
from ..data.schema import FORMAT, loads as schema_loads, validate_model_dict
from ..errors import PerfModelError
from ..language.expression import Expression, parse_expression, unmapped_name_notice, unmapped_names
from ..version import __version__
from . import interval_facts
from .diagnostics import dropped_terms, factor_span, fit_warnings, prediction_warnings
from .evaluate import metrics as compute_metrics
from .formula_text import _fmt, _replace_name, python_text
from .members import Uncertainty, bounded_noise


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
    uncertainty : what intervals need (bootstrap members, noise, calibration; see
        :mod:`perfmodel.uncertainty`), filled by :meth:`compute_intervals`; {} without intervals.
    factor_span : the directions the measured configurations varied in (log2 units;
        :func:`perfmodel.fitting.diagnostics.factor_span`), to tell a target that changes the factors in a
        combination never measured; {} for a file written before it.
    rate : {"column": the throughput column, "work": units of work per run or a column} when the time
        was made from a throughput (:func:`perfmodel.data.throughput.time_from_throughput`); {} otherwise.
    gpus_per_node : the GPUs (workers) per node of the measured runs, from the ``nodes`` column or as
        given (:meth:`perfmodel.Measurements.node_topology`); a target without a ``nodes`` value spans
        ceil(p / gpus_per_node) nodes. None when not known.
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
    uncertainty: dict = field(default_factory=dict)
    rate: dict = field(default_factory=dict)
    factor_span: dict = field(default_factory=dict)
    gpus_per_node: float | None = None
    version: str = __version__

    # -- construction -------------------------------------------------------
    @classmethod
    def build(cls, model, expr: Expression, meas: Measurements, coefs, theta, problem, z, info) -> FitResult:
        params = {p: float(v) for p, v in zip(expr.params, theta, strict=True)}
        coefficients = {f"c{k}": float(c) for k, c in enumerate(coefs)}
        loss, pen = problem.parts(z)
        warnings = [unmapped_name_notice(n) for n in unmapped_names(expr)]
        gammas = {grp.param for grp in expr.overlaps}
        for name, (lo, hi) in expr.bounds.items():
            v = params[name]
            if name in gammas and min(v - lo, hi - v) <= 1e-3 * (hi - lo):
                warnings.append(
                    f"{name} = {v:.4g}, the overlap's "
                    + (
                        "lower limit: its two sides add up (no time hidden)"
                        if v - lo <= hi - v
                        else "upper limit: the time is about the larger side's, the smaller one is hidden"
                    )
                )
            elif min(v - lo, hi - v) <= 1e-3 * (hi - lo):
                warnings.append(
                    f"{name} = {v:.4g} is at its bound [{lo:g}, {hi:g}]; widen the bounds of {name} "
                    "if that is not intended"
                )
        if info.get("underdetermined"):
            n_cfg, n_par = info["underdetermined"]
            warnings.append(
                f"{n_par} fitted parameters from {n_cfg} configurations: more unknowns than "
                f"measurements, so the penalty (λ = {model.lam:g}) decides between models that fit "
                "equally well; treat the split between terms with care, the intervals are wide"
            )
        # A model linear in its constants (no free exponent) is solved exactly, and DE only checks that
        # optimum (one generation, :func:`perfmodel.fitting.model.exact_settings`): its "maximum number of
        # iterations" is no failure to converge.
        exact = expr.is_linear and model.loss != "log"
        if not info.get("success", True) and not info.get("stopped") and not exact:
            message = str(info.get("message") or "").rstrip(".")
            warnings.append(f"differential evolution did not converge: {message}")
        if info.get("stopped"):
            warnings.append("the search was stopped early; the best model so far is shown")
        settings = model.get_params()
        settings["terms"] = expr.spec if model.terms is not None else None
        res = cls(
            expression=expr.text(),
            terms=[t.text for t in expr.terms],
            signs=[t.sign for t in expr.terms],
            coefficients=coefficients,
            params=params,
            param_bounds={k: list(v) for k, v in expr.bounds.items()},
            time=meas.time,
            factors=dict(meas.factors),
            settings=settings,
            cost=float(info["cost"]),
            loss=loss,
            penalty=pen,
            convergence={k: v for k, v in info.items() if k != "cost"},
            metrics={},
            shares={},
            factor_ranges={s: [float(meas.values(s).min()), float(meas.values(s).max())] for s in meas.factors},
            n_rows=meas.n_rows,
            n_configurations=meas.n_configurations,
            dataset=meas.name,
            dropped=[str(d) for d in meas.dropped],
            warnings=warnings,
            factor_span=factor_span(_one_row_each(meas)),
            gpus_per_node=meas.node_topology()[0],
        )
        pred = res.predict(meas)
        res.metrics = compute_metrics(meas.y, pred, res.n_params)
        contrib = res.contributions(meas)
        unit = float(np.max(np.abs(contrib.to_numpy()))) or 1.0  # sums of times near 1e308 stay finite
        unit = unit if math.isfinite(unit) else 1.0
        total = float((contrib / unit).to_numpy().sum())
        res.shares = {t: (float((contrib[t] / unit).sum()) / total if total else float("nan")) for t in res.terms}
        with np.errstate(all="ignore"):
            res.warnings += fit_warnings(res, meas, problem.term_matrix(np.asarray(theta, float)))
        return res

    # -- evaluation ---------------------------------------------------------
    @property
    def n_params(self) -> int:
        return len(self.coefficients) + len(self.params)

    def target_factors(self) -> list[str]:
        """The symbols a target configuration must give: every factor but ``nodes`` where it follows from
        ``p`` (the model knows the GPUs per node; a target may still give its own nodes)."""
        derived = bool(self.gpus_per_node) and "p" in self.factors
        return [s for s in self.factors if not (derived and s == "nodes")]

    def with_nodes(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (columns named by symbol) with ``nodes`` = ceil(p / GPUs per node) added where the model
        maps nodes, knows the GPUs per node and the frame has p but no nodes (columns in factor order)."""
        if "nodes" in frame.columns or "nodes" not in self.factors or not self.gpus_per_node or "p" not in frame:
            return frame
        out = frame.copy()
        out["nodes"] = nodes_of(out["p"].to_numpy(float), self.gpus_per_node).astype(np.int64)
        return out[[s for s in self.factors if s in out.columns] + [c for c in out.columns if c not in self.factors]]

    def _expression(self) -> Expression:
        expr, _ = parse_expression(
            self.expression, list(self.factors), {k: tuple(v) for k, v in self.param_bounds.items()}
        )
        return expr

    def _env(self, data) -> dict[str, np.ndarray]:
        if isinstance(data, Measurements):
            missing = sorted(set(self.factors) - set(data.factors))
            if missing == ["nodes"] and self.gpus_per_node and "p" in data.factors:  # the nodes p spans
                have = data.env()
                return {s: have[s] if s != "nodes" else nodes_of(have["p"], self.gpus_per_node) for s in self.factors}
            if missing:
                raise PerfModelError(f"the data does not map symbol(s) {', '.join(missing)}")
            return data.env()
        if isinstance(data, dict):
            data = pd.DataFrame({k: np.atleast_1d(v) for k, v in data.items()})
        if not isinstance(data, pd.DataFrame):
            raise PerfModelError(f"expected a DataFrame, Measurements or dict, got {type(data).__name__}")
        env: dict[str, np.ndarray] = {}
        for sym, col in sorted(self.factors.items(), key=lambda kv: kv[0] == "nodes"):  # nodes after p
            name = col if col in data.columns else sym if sym in data.columns else None
            if name is None and sym == "nodes" and self.gpus_per_node and "p" in env:
                env[sym] = nodes_of(env["p"], self.gpus_per_node)  # topology: the nodes p workers span
                continue
            if name is None:
                raise PerfModelError(
                    f"column {col!r} (symbol {sym}) is missing; the data has: {', '.join(map(str, data.columns))}"
                )
            values = pd.to_numeric(data[name], errors="coerce").to_numpy(dtype=float)
            bad = ~np.isfinite(values)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise PerfModelError(f"row {i + 1}, column {name!r}: not a finite number ({data[name].iloc[i]!r})")
            env[sym] = values
        return {sym: env[sym] for sym in self.factors}

    def term_values(self, data) -> np.ndarray:
        """Term values (signs included), shape (K, n)."""
        env = self._env(data)
        n = len(next(iter(env.values()))) if env else len(data)
        expr = self._expression()
        vals = expr.term_values(env, np.array([self.params[p] for p in expr.params]))
        return np.vstack([np.broadcast_to(v, (n,)) for v in vals])

    def contributions(self, data) -> pd.DataFrame:
        """Per-row contribution of each term, ``c_k·term_k(x)``: DataFrame (n, K), columns = terms."""
        expr, parts, theta = self._parts(data)
        with np.errstate(all="ignore"):
            contrib = expr.combine(parts, theta)
        return pd.DataFrame(contrib.T, columns=self.terms)

    def overlap_savings(self, data) -> pd.DataFrame:
        """Per row, the time each overlap hides (a + b − overlap, seconds; 0 at g = 1): one column per
        overlap parameter, none without overlaps. See :mod:`perfmodel.language.overlap`."""
        from ..language.overlap import saved

        expr, parts, theta = self._parts(data)
        vals = saved(expr.overlaps, expr.params, parts, theta)
        return pd.DataFrame(
            {grp.param: v for grp, v in zip(expr.overlaps, vals, strict=True)}, index=range(parts.shape[1])
        )

    def _parts(self, data, expr: Expression | None = None) -> tuple[Expression, np.ndarray, np.ndarray]:
        """(expression, c_k·term_k per row shape (K, n), the free parameters' values)."""
        expr = self._expression() if expr is None else expr
        c = np.array(list(self.coefficients.values()))
        return expr, c[:, None] * self.term_values(data), self._theta(expr)

    def _theta(self, expr: Expression) -> np.ndarray:
        return np.array([self.params[p] for p in expr.params], float)

    def predict(self, data, interval: float | None = None):
        """Predicted time (seconds) for each row of ``data`` (DataFrame, Measurements or dict).

        Without ``interval``: an array of shape (n,), the formula's own prediction. With
        ``interval=0.9``: a DataFrame with the columns ``predicted_time`` (the same numbers),
        ``predicted_low`` and ``predicted_high`` (a 90 % prediction interval for one new measurement;
        see :mod:`perfmodel.uncertainty`). The displayed formula makes every number: other models and
        the corpus only widen the interval.
        """
        unc = self._uncertainty(required=interval is not None)
        if unc is None or interval is None:
            expr = self._expression()
            if not expr.overlaps:
                return np.array(list(self.coefficients.values())) @ self.term_values(data)
            expr, parts, theta = self._parts(data, expr)
            with np.errstate(all="ignore"):
                return expr.predict_from(parts, theta)
        t, low, high = _interval_by_configuration(unc, self._env(data), float(interval))
        return pd.DataFrame({"predicted_time": t, "predicted_low": low, "predicted_high": high})

    @property
    def n_replicates(self) -> int:
        """Parameter vectors the stored intervals evaluate per configuration (every member's replicates)."""
        unc = self._uncertainty()
        return sum(len(m.coefficients) for m in unc.members) if unc is not None else 0

    def check_work(self, n_configurations: int, what: str = "the grid") -> None:
        """Refuse, before it starts, a command that would evaluate more than :data:`MAX_PREDICTIONS`
        replicate predictions: the model file's replicates × ``n_configurations`` (``what``: the
        configurations, for the message). A model file within every stated limit holds up to 500,000
        replicates; at a 100-configuration grid that was 5e7 predictions, half a minute and 3.4 GB."""
        S = self.n_replicates
        if S * int(n_configurations) > MAX_PREDICTIONS:
            raise PerfModelError(
                f"{what} has {int(n_configurations):,} configurations and the model file {S:,} replicates: "
                f"{S * int(n_configurations):,} predictions, above the limit {MAX_PREDICTIONS:,}; give at most "
                f"{max(1, MAX_PREDICTIONS // max(S, 1)):,} configurations at once"
            )

    def check_defined(self, data, describe=None) -> None:
        """Refuse configurations where a term is undefined (not finite, e.g. ``N/p`` at p = 0 or
        ``log(p)`` at p < 0), where a factor measured only positive is 0 or negative (``N = -8000``: not
        an extrapolation but another regime, and no distance beyond the range to widen the interval by),
        or where the predicted time is not positive, as ``fit`` refuses such rows:
        a PerfModelError naming the row (``describe(i)``, default ``row i+1``), the term and the values."""
        env = self._env(data)
        n = len(next(iter(env.values()))) if env else 0
        describe = describe or (lambda i: f"row {i + 1}")

        def at(i):
            return ", ".join(f"{self.factors.get(s, s)} = {env[s][i]:g}" for s in env)

        expr = self._expression()
        with np.errstate(all="ignore"):
            vals = expr.term_values(env, self._theta(expr))
            for k, v in enumerate(vals):
                bad = ~np.isfinite(np.broadcast_to(np.asarray(v, float), (n,)))
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    raise PerfModelError(
                        f"{describe(i)}: term {expr.terms[k].text!r} is undefined there ({at(i)}), "
                        "so the model predicts no time"
                    )
            t = np.asarray(self.predict(data), float)
        bad = ~(t > 0) | ~np.isfinite(t)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise PerfModelError(
                f"{describe(i)}: the predicted time is {t[i]:.4g} s, not a positive time ({at(i)}); "
                "the model does not hold there"
            )
        for s, (lo, hi) in self.factor_ranges.items():  # a sign never measured: no extrapolation, another regime
            x = env.get(s)
            if x is not None and lo > 0 and not (x > 0).all():
                i = int(np.flatnonzero(~(x > 0))[0])
                col = self.factors.get(s, s)
                raise PerfModelError(
                    f"{describe(i)}: {col} = {x[i]:g}, but every measured {col} was positive ({lo:g} to {hi:g}); "
                    f"the model does not hold at {col} <= 0 ({at(i)})"
                )

    # -- uncertainty --------------------------------------------------------
    @property
    def has_intervals(self) -> bool:
        return bool(self.uncertainty)

    def _uncertainty(self, required: bool = False):
        if not self.uncertainty:
            if required:
                raise PerfModelError(
                    "this fit carries no intervals: call perfmodel.compute_intervals(result, data) with "
                    "the measurements it was fitted on (the CLI's fit does this)"
                )
            return None
        cached = self.__dict__.get("_unc_cache")
        if cached is None or cached[0] is not self.uncertainty:
            cached = (self.uncertainty, Uncertainty.from_dict(self.uncertainty))
            self.__dict__["_unc_cache"] = cached
        return cached[1]

    def attach_uncertainty(self, unc) -> FitResult:
        """Store ``unc`` (an :class:`~perfmodel.fitting.members.Uncertainty`, as
        :func:`perfmodel.compute_intervals` computes it) as :attr:`uncertainty`; returns ``self``.

        What is stored is what a model file's reader accepts, by the reader's own rules: a noise beyond
        what an interval can say is capped (:func:`~perfmodel.fitting.members.bounded_noise`) with a
        warning that the fit is too poor to quote, and the block is then read back as a model file is
        (:meth:`Uncertainty.from_dict`); should that refuse it, the fit keeps no intervals and says why,
        rather than write a file that ``show``, ``predict``, ``plan`` and ``advise`` refuse."""
        noise, note = bounded_noise(unc.noise)
        if note:
            unc = dataclasses.replace(unc, noise=noise)
            self.warnings.append(note)
        block = unc.to_dict()
        try:
            Uncertainty.from_dict(json.loads(json.dumps(block, allow_nan=True)))
        except PerfModelError as exc:
            self.uncertainty = {}
            self.__dict__.pop("_unc_cache", None)
            self.warnings.append(f"no intervals stored: {exc} (please report this)")
            return self
        self.uncertainty = block
        self.__dict__["_unc_cache"] = (self.uncertainty, unc)
        return self

    def constant_intervals(self, level: float = 0.9) -> dict[str, tuple[float, float]]:
        """{name: (low, high)} for every constant ``c0..`` and free parameter, at ``level``."""
        return self._uncertainty(required=True).constants(level)

    def share_intervals(self, level: float = 0.9) -> dict[str, tuple[float, float]]:
        """{term: (low, high)} of each term's share of the measured time, at ``level``."""
        return self._uncertainty(required=True).shares(self.terms, level, self.shares)

    @property
    def dropped_terms(self) -> list[str]:
        """Terms whose coefficient is 0: left out of the displayed formula."""
        return dropped_terms(self)

    def prediction_warnings(self, data, unit: str = "s") -> list[str]:
        """Warnings for predicting at ``data``: far extrapolation, a per-worker batch below one sample,
        node crossings, other structures that disagree; times in ``unit`` (seconds by default)."""
        return prediction_warnings(self, self._env(data), unit)

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
        from ..language.overlap import assemble

        pieces: list[tuple[float, str] | None] = []  # None: a dropped term
        for k, (term, sign) in enumerate(zip(self.terms, self.signs, strict=True)):
            c = sign * self.coefficients[f"c{k}"]
            if c == 0:  # dropped (see dropped_terms)
                pieces.append(None)
                continue
            text = _fmt(abs(c), digits) if term == "1" else f"{_fmt(abs(c), digits)}·{term}"
            pieces.append((c < 0, text))

        def join(items):
            out = ""
            for i, (neg, text) in enumerate(items):
                out += (("-" if neg else "") if i == 0 else (" - " if neg else " + ")) + text
            return out or "0"

        body = assemble(
            self._expression().overlaps,
            len(self.terms),
            pieces,
            join,
            lambda a, b, g: (False, f"overlap({a}, {b}; {g})"),
        )
        out = "T = " + body
        for name, v in self.params.items():
            out = _replace_name(out, name, _fmt(v, digits))
        return out

    def python_expression(self, numpy: str = "np") -> str:
        """A plain Python/numpy expression of the fitted model over the factor symbols.

        Built from the terms as re-rendered by the safe parser and numbers written with
        ``repr``, so it holds only names, numbers, operators and ``numpy.<function>`` calls."""
        return python_text(self, numpy)

    def latex(self, digits: int = 4) -> str:
        """The fitted formula in LaTeX, e.g. ``T = 1.9 + 162.2\\,\\frac{N}{p}``."""
        from ..language.latex import to_latex

        return to_latex(self._expression(), list(self.coefficients.values()), self.params, digits)

    # -- reports ------------------------------------------------------------
    @property
    def scale_weight(self) -> float:
        """How much more each larger measured worker count weighed in the fit (1: every row alike;
        files written before the setting existed read as 1)."""
        return float(self.settings.get("scale_weight", 1.0))

    @property
    def weighting(self) -> str:
        """How the fit weighed the measured scales, in words ("" when every row weighed alike)."""
        w = self.scale_weight
        return "" if w == 1.0 else f"each larger measured p weighing {w:g}x the one before"

    def report(self) -> str:
        """A sectioned, lmfit-style text report."""
        s = self.settings
        lines = [
            "[[Model]]",
            f"    T = {self.expression}",
            f"    factors: {', '.join(f'{k}={v}' for k, v in self.factors.items()) or 'none'}; time: {self.time}",
            "[[Fit Statistics]]",
            f"    rows: {self.n_rows} ({self.n_configurations} configurations); parameters: {self.n_params}",
            f"    loss: {s['loss']}; penalty: {s['penalty']}; lambda: {s['lam']:g}; seed: {s['seed']}"
            + (f"; fitted with {self.weighting}" if self.weighting else ""),
            f"    cost: {self.cost:.6g} = loss {self.loss:.6g} + {s['lam']:g} x penalty {self.penalty:.6g}",
            f"    DE: {self.convergence.get('nit')} generations, {self.convergence.get('nfev')} evaluations, "
            f"{self.convergence.get('seconds', float('nan')):.2f} s, {self.convergence.get('message')}",
        ]
        for key, val in self.metrics.items():
            lines.append(f"    {key}: {val:.6g}")
        for method, vm in self.validation.items():
            lines.append(f"    {method}: " + ", ".join(f"{k} {v:.4g}" for k, v in vm.items()))
        lines.append("[[Variables]]")
        for k, term in enumerate(self.terms):
            lines.append(
                f"    c{k}: {self.coefficients[f'c{k}']:<14.8g} term {'-' if self.signs[k] < 0 else ''}"
                f"{term}  (share {self.shares.get(term, float('nan')) * 100:5.1f} %)"
            )
        for name, v in self.params.items():
            lo, hi = self.param_bounds[name]
            lines.append(f"    {name}: {v:<14.8g} bounds [{lo:g}, {hi:g}]")
        if self.has_intervals:
            lines.append(self.intervals_report())
        lines += ["[[Formula]]", "    " + self.formula()]
        if self.warnings or self.dropped:
            lines.append("[[Warnings]]")
            lines += [f"    {w}" for w in self.warnings]
            lines += [f"    dropped {d}" for d in self.dropped]
        return "\n".join(lines)

    def interval_facts(self, level: float = 0.9) -> list[tuple[str, str]]:
        """How the intervals were made, as (what, value) pairs (:func:`perfmodel.fitting.interval_facts.facts`)."""
        return interval_facts.facts(self._uncertainty(required=True), level)

    def intervals_report(self, level: float = 0.9) -> str:
        """The [[Intervals]] section: how the intervals were made and each constant's interval."""
        unc = self._uncertainty(required=True)
        facts = self.interval_facts(level)
        lines = ["[[Intervals]]", f"    {facts[0][1]}"] + [
            f"    {what}: {text}" if what != "predictor" else f"    {text}" for what, text in facts[1:]
        ]
        for name, (lo, hi) in unc.constants(level).items():
            value = self.coefficients.get(name, self.params.get(name))
            lines.append(f"    {name}: {value:<14.8g} {level:.0%} interval [{lo:.6g}, {hi:.6g}]")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"format": FORMAT, **_jsonable(asdict(self))}

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=True)

    def save(self, path) -> None:
        """Write the model file (UTF-8 JSON) after reading it back as every command reads one, so a file
        written here is a file ``show``, ``predict``, ``plan`` and ``advise`` accept (else nothing is
        written and a PerfModelError names the field)."""
        text = self.to_json()
        try:
            type(self).from_json(text)
        except PerfModelError as exc:
            raise PerfModelError(f"the fitted model would not load again ({exc}); nothing written") from None
        Path(path).write_text(text, encoding="utf-8")

    @classmethod
    def from_dict(cls, d: dict) -> FitResult:
        """A result from a parsed model file, validated against :data:`perfmodel.schema.MODEL_SCHEMA`
        and against its own expression (terms, signs, coefficients, parameters)."""
        validate_model_dict(d)
        fields = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        res = cls(**fields)
        expr = res._expression()  # validates the stored expression with the same safe parser
        names = [f"c{k}" for k in range(len(expr.terms))]
        if (
            [t.text for t in expr.terms] != list(res.terms)
            or list(res.coefficients) != names
            or set(res.params) != set(expr.params)
            or set(res.param_bounds) != set(expr.params)
        ):
            raise PerfModelError(
                "model file is inconsistent: its terms, coefficients and parameters do not match its expression"
            )
        signs = [t.sign for t in expr.terms]
        if list(res.signs) != signs:
            raise PerfModelError(
                f"model file is inconsistent: signs {[int(v) for v in res.signs]} do not "
                f"match the signs of the expression's terms {[int(v) for v in signs]}"
            )
        bad = [k for k, v in res.coefficients.items() if not math.isfinite(v)]
        bad += [k for k, v in res.params.items() if not math.isfinite(v)]
        if bad:
            raise PerfModelError(f"model file: {bad[0]} is not a finite number")
        span = res.factor_span
        symbols = span.get("symbols", [])
        if span and (
            len(span.get("center", [])) != len(symbols)
            or any(len(row) != len(symbols) for row in span.get("directions", []))
        ):
            raise PerfModelError(
                "model file: factor_span's center and each of its directions need one number per symbol "
                f"({len(symbols)}: {', '.join(map(str, symbols))})"
            )
        unknown = sorted((set(res.factor_ranges) | set(res.factor_span.get("symbols", []))) - set(res.factors))
        if unknown:
            raise PerfModelError(
                f"model file: factor_ranges or factor_span names {unknown[0]!r}, which is not a factor"
            )
        if res.uncertainty:
            unc = Uncertainty.from_dict(res.uncertainty)
            best = unc.members[0]
            if [t.text for t in best.parsed().terms] != list(res.terms) or list(best.factors) != list(res.factors):
                raise PerfModelError(
                    f"model file: the intervals' first member {best.expression!r} is not the "
                    f"model's expression {res.expression!r}"
                )
            other = [f for m in unc.members for f in m.factors if f not in res.factors]
            if other:
                raise PerfModelError(f"model file: an interval member uses {other[0]!r}, which is not a factor")
            res.__dict__["_unc_cache"] = (res.uncertainty, unc)
        return res

    @classmethod
    def from_json(cls, text: str | bytes) -> FitResult:
        return cls.from_dict(schema_loads(text))

    @classmethod
    def load(cls, path) -> FitResult:
        p = Path(path)
        if not p.exists():
            raise PerfModelError(f"model file not found: {p}")
        if p.is_dir():
            raise PerfModelError(f"{p}: is a folder, not a model file")
        try:
            return cls.from_json(p.read_bytes())
        except PerfModelError as exc:
            raise PerfModelError(f"{p}: {exc}") from None


#: Replicate predictions a command may ask of a model file (its replicates × the configurations):
#: about ten seconds of work (see :meth:`FitResult.check_work`).
MAX_PREDICTIONS = 20_000_000
#: Replicate predictions held at once when intervals are evaluated (replicates × configurations).
CELLS = 2_000_000


def _interval_by_configuration(unc, env: dict, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(point, low, high) at each row of ``env``: evaluated once per distinct configuration (repeats
    share it) in chunks of at most :data:`CELLS` replicate predictions, so the memory is bounded by the
    chunk, not by the rows (a million rows of a 200-replicate fit asked for 1.5 GiB at once)."""
    if not env:
        return unc.interval(env, level)
    ids = configuration_ids(list(env.values()))
    first = np.unique(ids, return_index=True)[1]
    configs = {s: np.asarray(v, float)[first] for s, v in env.items()}
    S = sum(len(m.coefficients) for m in unc.members)
    step = max(1, CELLS // max(S, 1))
    parts = [unc.interval({s: v[i : i + step] for s, v in configs.items()}, level) for i in range(0, len(first), step)]
    return tuple(np.concatenate([part[k] for part in parts])[ids] for k in range(3))


def _one_row_each(meas: Measurements) -> dict:
    """Symbol -> values of each distinct configuration once (repeats left out): what
    :func:`factor_span` needs, without sorting every row of a million-row file."""
    first = np.unique(meas.configurations(), return_index=True)[1]
    return {s: v[first] for s, v in meas.env().items()}


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
