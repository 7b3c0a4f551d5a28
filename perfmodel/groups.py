"""One model per group: the same terms fitted to every framework, model, GPU type or call path.

A measurement table often holds many curves at once (TensorFlow, MXNet and PyTorch; models ×
precisions × GPU types; one Extra-P series per call path and metric). :func:`fit_groups` splits the
validated rows by the values of one or more columns and fits each subset with the same model
settings, then cross-validates it::

    >>> fits = perfmodel.fit_groups(frame, by=["model", "platform"], time="epoch_time_s",
    ...                             factors={"p": "gpus", "b": "batch_per_gpu", "N": "samples"},
    ...                             terms="1 + I*b^e1 + I*log2(p)")
    >>> fits.summary            # one row per group: status, formula, constants, shares, MAPE
    >>> fits.results            # {("ResNet-50", "dgx1-p100"): FitResult, ...}
    >>> fits.save("out/")       # out/summary.csv and one model JSON per fitted group

No group is lost. A group the model cannot be fitted to (too few configurations, a log of a value
<= 0, every row dropped) is a ``skipped`` row with the reason. A factor that is constant within a
group cannot be told apart from the intercept there: it is left out of that group's terms (the
multiplicative pieces that depend only on it are folded into the coefficient, a term that becomes a
constant is dropped) and the change is noted.

The executor is a parameter, not a second code path: ``"serial"``, ``"processes"`` (the process
pool of :mod:`perfmodel.search`, one BLAS thread per worker) or a ``dask.distributed.Client``
(:func:`dask_client` connects to a scheduler or starts a ``LocalCluster``). Every group is fitted
with the same seed, independently of the others, so every backend gives the same results.

A use of fitted models: imports from the layers below it (language to search, uncertainty) and
perfmodel.parallel, never from plots, report or the CLI.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import re
import time as _time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .data.measurements import Measurements
from .errors import PerfModelError, did_you_mean
from .fitting.categories import term_categories
from .fitting.evaluate import cross_validate
from .fitting.model import Model, exact_settings
from .fitting.result import FitResult
from .group_files import _label_part, _previous_model_files, file_names, group_label
from .language.expression import ITERATIONS, _lex_check, _names, parse_bounds, parse_expression
from .language.reduce import ITERATION_SYMBOLS, without_constant_factors
from .language.terms import preset_bounds, preset_spec
from .parallel import execute, executor_name
from .search import auto_select, plausible
from .spreadsheet import to_csv
from .uncertainty import compute_intervals


# ----------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------
@dataclass
class GroupOutcome:
    """What happened to one group: its fit, or why it was skipped.

    key : the group's values, one per ``by`` column (NaN shown as ``(missing)`` in ``label``).
    status : ``"ok"`` or ``"skipped"``; ``reason`` says why when skipped.
    notes : what was changed for this group (constant factors left out, rows dropped, no CV).
    result : the :class:`FitResult` (None when skipped); ``cv`` its cross-validated metrics.
    """

    key: tuple
    label: str
    status: str
    reason: str = ""
    notes: list = field(default_factory=list)
    n_rows: int = 0
    n_configurations: int = 0
    result: FitResult | None = None
    cv: dict = field(default_factory=dict)
    cv_method: str = ""
    categories: dict = field(default_factory=dict)  # start-up / compute / communication share
    seconds: float = 0.0


@dataclass
class GroupFits:
    """All groups' outcomes, in the order of their first row in the table.

    ``summary`` is one row per group; ``results`` maps each fitted group's key to its result.
    ``summary, results = fit_groups(...)`` unpacks the two.
    """

    by: list
    outcomes: list
    executor: str
    seconds: float
    dropped: list = field(default_factory=list)
    data: list = field(default_factory=list, repr=False)  # each group's Measurements, as ``outcomes``
    removed: list = field(default_factory=list)  # an earlier run's model files :meth:`save` removed

    def __iter__(self) -> Iterator:
        return iter((self.summary, self.results))

    def __len__(self) -> int:
        return len(self.outcomes)

    @property
    def results(self) -> dict:
        return {o.key: o.result for o in self.outcomes if o.result is not None}

    @property
    def n_ok(self) -> int:
        return sum(o.status == "ok" for o in self.outcomes)

    @property
    def summary(self) -> pd.DataFrame:
        """One row per group: the group's values, ``group`` (a label), ``status``, ``reason``,
        ``formula`` (with numbers), ``expression``, one ``c:TERM`` and ``share:TERM`` column per
        term seen in any group, ``param:NAME`` per free parameter, ``startup_share``,
        ``compute_share``, ``communication_share``, ``mape``, ``cv_mape``, ``r2``, ``rows``,
        ``configurations``, ``notes`` and ``model_file`` (set by :meth:`save`)."""
        rows = [_summary_row(self.by, o) for o in self.outcomes]
        frame = pd.DataFrame(rows)
        lead = [
            *_by_columns(self.by),
            "group",
            "status",
            "reason",
            "configurations",
            "rows",
            "formula",
            "expression",
            "mape",
            "cv_mape",
            "cv_method",
            "r2",
            "startup_share",
            "compute_share",
            "communication_share",
        ]
        rest = [c for c in frame.columns if c not in lead and c not in ("notes", "model_file")]
        coef = [c for c in rest if c.startswith("c:")]
        share = [c for c in rest if c.startswith("share:")]
        other = [c for c in rest if c not in coef and c not in share]
        tail = [c for c in ("notes", "model_file") if c in frame.columns]
        return frame[[c for c in lead if c in frame.columns] + coef + share + other + tail]

    def with_intervals(self, labels=None, replicates: int = 200, gpus_per_node: float | None = None) -> GroupFits:
        """A copy in which the fitted groups named in ``labels`` (default: all) carry prediction
        intervals, computed as ``fit_groups(..., replicates=...)`` computes them (the same
        :func:`~perfmodel.uncertainty.compute_intervals` on the same rows), for a view that needs
        the bands of a few groups only; groups that already have intervals are kept as they are."""
        outcomes = []
        for o, meas in zip(self.outcomes, self.data, strict=True):
            r = o.result
            if r is not None and not r.has_intervals and (labels is None or o.label in labels) and replicates:
                r = FitResult.from_dict(r.to_dict())
                fitted = Measurements(
                    meas.frame, meas.time, {s: c for s, c in meas.factors.items() if s in r.factors}, [], meas.name
                )  # without the factors left out as constant, as it was fitted
                compute_intervals(r, fitted, replicates=int(replicates), gpus_per_node=gpus_per_node)
                o = dataclasses.replace(o, result=r)
            outcomes.append(o)
        return dataclasses.replace(self, outcomes=outcomes)

    def save(self, directory) -> Path:
        """Write ``DIRECTORY/summary.csv`` and one model JSON per fitted group; returns the CSV path.

        A folder that holds an earlier run's ``summary.csv`` loses the model files that summary lists
        and this run does not write (``removed``: their names), so every model file in the folder is
        one the new summary lists; nothing else in the folder is touched."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        previous = _previous_model_files(out)
        names = file_names([o.key for o in self.outcomes])
        summary = self.summary
        files = []
        for o, name in zip(self.outcomes, names, strict=True):
            if o.result is None:
                files.append("")
                continue
            o.result.save(out / name)
            files.append(name)
        summary["model_file"] = files
        path = out / "summary.csv"
        to_csv(summary, path, encoding="utf-8")
        self.removed = sorted(p.name for p in previous if p.name not in set(files))
        for name in self.removed:
            (out / name).unlink(missing_ok=True)
        return path


_RESERVED = {
    "group",
    "status",
    "reason",
    "configurations",
    "rows",
    "formula",
    "expression",
    "mape",
    "cv_mape",
    "cv_method",
    "r2",
    "startup_share",
    "compute_share",
    "communication_share",
    "notes",
    "model_file",
}


def _by_columns(by: Sequence[str]) -> list[str]:
    """Summary column names of the group values (``COL (group)`` when COL is a summary column's name)."""
    return [f"{c} (group)" if c in _RESERVED or c.startswith(("c:", "share:", "param:")) else c for c in by]


def _summary_row(by: Sequence[str], o: GroupOutcome) -> dict:
    row: dict[str, Any] = dict(zip(_by_columns(by), o.key, strict=True))
    row.update(group=o.label, status=o.status, reason=o.reason, configurations=o.n_configurations, rows=o.n_rows)
    r = o.result
    if r is not None:
        row.update(
            formula=r.formula(),
            expression=r.expression,
            mape=r.metrics.get("mape"),
            cv_mape=o.cv.get("mape", math.nan),
            cv_method=o.cv_method,
            r2=r.metrics.get("r2"),
        )
        row.update(
            startup_share=o.categories.get("start-up", 0.0),
            compute_share=o.categories.get("compute", 0.0),
            communication_share=o.categories.get("communication", 0.0),
        )
        for k, term in enumerate(r.terms):
            row[f"c:{term}"] = r.coefficients[f"c{k}"]
        for term in r.terms:
            row[f"share:{term}"] = r.shares.get(term, math.nan)
        for name, v in r.params.items():
            row[f"param:{name}"] = v
    row["notes"] = "; ".join(o.notes)
    return row


def constant_factors(meas: Measurements) -> dict[str, float]:
    """Symbols whose column holds one value in ``meas``: {symbol: value}."""
    out = {}
    for sym in meas.factors:
        v = meas.values(sym)
        if v.size and np.all(v == v[0]):
            out[sym] = float(v[0])
    return out


def _constant_note(meas: Measurements, constant: dict[str, float], changes: list[str]) -> str:
    what = ", ".join(f"{s} ({meas.factors[s]}) = {_label_part(v)}" for s, v in constant.items())
    return f"constant in this group: {what}; left out of its terms ({'; '.join(changes)})"


# ----------------------------------------------------------------------------------------
# one group (a top-level function: it runs in worker processes and on Dask workers)
# ----------------------------------------------------------------------------------------
def _category_shares(result: FitResult, meas: Measurements) -> dict[str, float]:

    contrib = result.contributions(meas)
    total = float(contrib.to_numpy().sum())
    out: dict[str, float] = {}
    for category, term in zip(term_categories(result), contrib.columns, strict=True):
        out[category] = out.get(category, 0.0) + (float(contrib[term].sum()) / total if total else 0.0)
    return out


def fit_group(task: dict) -> GroupOutcome:
    """Fit one group (see :func:`fit_groups`); user errors become a ``skipped`` outcome."""
    t0 = _time.perf_counter()
    meas: Measurements = task["meas"]
    o = GroupOutcome(
        key=task["key"],
        label=task["label"],
        status="ok",
        notes=list(task.get("notes", ())),
        n_rows=meas.n_rows,
        n_configurations=meas.n_configurations if meas.n_rows else 0,
    )
    try:
        if meas.n_rows == 0:
            raise PerfModelError(task.get("empty_reason") or "no usable rows")
        need = task.get("min_configurations")
        if need and o.n_configurations < need:
            raise PerfModelError(f"{o.n_configurations} configuration(s), fewer than the {need} required")
        _fit_one(task, meas, o)
    except PerfModelError as exc:
        o.status, o.reason, o.result, o.cv = "skipped", str(exc), None, {}
    o.seconds = _time.perf_counter() - t0
    return o


def _fit_one(task: dict, meas: Measurements, o: GroupOutcome) -> None:
    constant = constant_factors(meas)
    if len(constant) == len(meas.factors) and meas.factors:
        raise PerfModelError("every factor is constant in this group (one configuration): nothing to fit")
    k = int(task.get("cv") or 0)
    if task.get("auto"):
        drop = dict(constant)
        if {"N", "b"} <= set(meas.factors) and set(ITERATION_SYMBOLS) & set(meas.factors) - set(constant):
            for s in ITERATION_SYMBOLS:  # the iterations I = E·ceil(N/(p·b)) still vary: keep what they need
                drop.pop(s, None)
        if drop:
            o.notes.append(_constant_note(meas, drop, ["the search uses the other factors"]))
            meas = Measurements(
                meas.frame, meas.time, {s: c for s, c in meas.factors.items() if s not in drop}, [], meas.name
            )
        sel = auto_select(meas, **task["auto_settings"], workers=1)
        o.result = sel.best.result
        if task.get("replicates"):
            best, _, averaging = plausible(sel)
            compute_intervals(
                best, meas, replicates=int(task["replicates"]), gpus_per_node=task.get("gpus_per_node"), **averaging
            )
        o.notes.extend(o.result.warnings)
        o.cv, o.cv_method = dict(sel.best.cv), f"{task['auto_settings'].get('k', 5)}-fold (search)"
    else:
        model, meas = _group_model(task, meas, constant, o)
        model = model.clone(**exact_settings(model, meas))  # a linear model's exact optimum in one generation
        o.result = model.fit(meas)  # more parameters than configurations: refused at λ = 0 only, as a single fit
        if task.get("replicates"):
            compute_intervals(
                o.result, meas, replicates=int(task["replicates"]), gpus_per_node=task.get("gpus_per_node")
            )
        o.notes.extend(o.result.warnings)
        if k >= 2:
            _cross_validate_into(model, meas, k, o)
    o.categories = _category_shares(o.result, meas)


def _cross_validate_into(model: Model, meas: Measurements, k: int, o: GroupOutcome) -> None:
    """A group's k-fold cross-validation (the model's seed numbers the folds) into its outcome."""
    try:
        v = cross_validate(model, meas, k=k, seed=model.seed)
        o.cv, o.cv_method = dict(v.metrics), v.method
        assert o.result is not None  # called for fitted groups only
        o.result.validation[v.method] = v.metrics
    except PerfModelError as exc:
        o.notes.append(f"no cross-validation: {exc}")


def cross_validate_group(task: dict, outcome: GroupOutcome) -> GroupOutcome:
    """``outcome`` (of ``fit_group`` on ``task`` with ``cv`` 0) with the cross-validation that
    ``fit_group(task)`` computes (the same model, rows and folds); a copy, ``outcome`` unchanged.
    A skipped group, the automatic search's (cross-validated by the search) or one already
    cross-validated is returned as it is."""
    k = int(task.get("cv") or 0)
    if outcome.result is None or task.get("auto") or k < 2 or outcome.cv_method:
        return outcome
    meas = task["meas"]
    scratch = GroupOutcome(key=outcome.key, label=outcome.label, status="ok")  # its notes are fit_group's
    model, fitted = _group_model(task, meas, constant_factors(meas), scratch)
    model = model.clone(**exact_settings(model, fitted))
    o = dataclasses.replace(outcome, notes=list(outcome.notes), result=FitResult.from_dict(outcome.result.to_dict()))
    t0 = _time.perf_counter()
    _cross_validate_into(model, fitted, k, o)
    o.seconds += _time.perf_counter() - t0
    return o


def _group_model(task: dict, meas: Measurements, constant: dict, o: GroupOutcome) -> tuple[Model, Measurements]:
    """The task's model for this group, with its constant factors left out of the terms."""
    settings = dict(task["settings"])
    terms, preset, bounds = task.get("terms"), task.get("preset"), dict(task.get("bounds") or {})
    if not constant:
        return Model(terms, preset=preset, bounds=bounds or None, **settings), meas
    symbols = list(meas.factors)
    if preset is not None:
        positive = [s for s in symbols if meas.values(s).min() >= 1]
        terms = preset_spec(preset, symbols, positive, env=meas.env())
        bounds = {**preset_bounds(preset, symbols), **bounds}
    elif terms is None:  # as Model.fit says it
        raise PerfModelError("no terms given: pass an expression or a preset")
    spec, changes = without_constant_factors(terms, symbols, constant)
    if not changes:
        return Model(terms, bounds=bounds or None, **settings), meas
    named = _names(ast.parse(_lex_check(terms).strip(), mode="eval"))
    shown = {s: v for s, v in constant.items() if s in named} or constant
    o.notes.append(_constant_note(meas, shown, changes))
    expr, _ = parse_expression(spec, symbols, {})
    old, _ = parse_expression(terms, symbols, {})
    old_index = {t.text: i for i, t in enumerate(old.terms)}
    kept_bounds = {}
    for name, b in bounds.items():
        m = re.fullmatch(r"c(\d+)", name)
        if m is None:
            if name in expr.params:
                kept_bounds[name] = b
            continue
        old_text = old.terms[int(m.group(1))].text if int(m.group(1)) < len(old.terms) else None
        for j, t in enumerate(expr.terms):
            if old_text is not None and old_index.get(t.text) == int(m.group(1)):
                kept_bounds[f"c{j}"] = b
    used = set(expr.symbols)
    if ITERATIONS in used:
        used |= {s for s in ITERATION_SYMBOLS if s in meas.factors}
    factors = {s: c for s, c in meas.factors.items() if s in used or s not in constant}
    meas = Measurements(meas.frame, meas.time, factors, [], meas.name)
    return Model(spec, bounds=kept_bounds or None, **settings), meas


# ----------------------------------------------------------------------------------------
# the one function, and its stages
# ----------------------------------------------------------------------------------------
@dataclass
class GroupPlan:
    """A table split into groups, each a task ready to fit: what :func:`fit_groups` runs, for a
    caller that runs it in stages (some groups first, the cross-validation after) and shows the
    groups as they finish. ``plan.fits(outcomes)`` of every group's ``fit_group`` outcome is what
    ``fit_groups`` returns, whatever the order and the stages.

        >>> plan = plan_groups(frame, ["model", "platform"], time=..., factors=..., terms=...)
        >>> first = plan.fit([0, 3], cv=False)            # two groups, not cross-validated yet
        >>> first = [plan.cross_validate(i, o) for i, o in zip([0, 3], first)]
    """

    by: list
    tasks: list = field(repr=False)
    dropped: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tasks)

    @property
    def labels(self) -> list[str]:
        return [t["label"] for t in self.tasks]

    @property
    def keys(self) -> list[tuple]:
        return [t["key"] for t in self.tasks]

    def fit(
        self,
        indices: Sequence[int] | None = None,
        *,
        cv: bool = True,
        executor="serial",
        workers: int | None = None,
        progress: Callable | None = None,
    ) -> list[GroupOutcome]:
        """The outcomes of the groups at ``indices`` (default: all), in that order; ``cv=False``:
        without their cross-validation (:meth:`cross_validate` adds it)."""
        indices = range(len(self.tasks)) if indices is None else indices
        tasks = [self.tasks[i] if cv else {**self.tasks[i], "cv": 0} for i in indices]
        return execute(fit_group, tasks, executor, workers, progress)

    def cross_validate(self, index: int, outcome: GroupOutcome) -> GroupOutcome:
        """Group ``index``'s ``outcome`` with its cross-validation (:func:`cross_validate_group`)."""
        return cross_validate_group(self.tasks[index], outcome)

    def fits(self, outcomes: dict[int, GroupOutcome], executor: str = "serial", seconds: float = 0.0) -> GroupFits:
        """The :class:`GroupFits` of the groups in ``outcomes`` ({index: outcome}; all of them: what
        :func:`fit_groups` returns), in the table's order."""
        done = sorted(outcomes)
        return GroupFits(
            self.by,
            [outcomes[i] for i in done],
            executor_name(executor),
            seconds,
            list(self.dropped),
            [self.tasks[i]["meas"] for i in done],
        )


def fit_groups(
    frame,
    by: str | Sequence[str],
    *,
    time: str | None = None,
    factors: dict | None = None,
    terms: str | None = None,
    preset: str | None = None,
    auto: bool = False,
    model: Model | None = None,
    cv: int = 5,
    min_configurations: int | None = None,
    executor="processes",
    workers: int | None = None,
    progress: Callable | None = None,
    name: str = "",
    replicates: int = 0,
    gpus_per_node: float | None = None,
    **settings,
) -> GroupFits:
    """Fit the same model to every group of rows with equal values in the ``by`` columns.

    In stages: :func:`plan_groups` (the same arguments but the executor's) and :class:`GroupPlan`.

    Parameters
    ----------
    frame : a DataFrame (one row per run) or :class:`Measurements` (its kept rows are grouped).
    by : a column name or a list of them; NaN values form a group of their own.
    time, factors : the time column and the symbol -> column mapping (as :class:`Measurements`);
        taken from ``frame`` when it is Measurements.
    terms / preset / auto : the model (an expression, a preset name, or the automatic search per
        group); or ``model``, a configured :class:`Model` whose terms and settings are used.
    cv : k of the k-fold cross-validation reported per group (0: none).
        A model without free parameters gets its exact optimum in one DE generation, as in
        :func:`perfmodel.search.lambda_path` (the same fit as a thousand generations).
    min_configurations : skip groups with fewer distinct configurations (default: none; as for a single
        fit, a group with more fitted parameters than configurations is fitted when λ > 0, with a warning).
    gpus_per_node : to tell targets on more nodes than measured (see :func:`perfmodel.compute_intervals`).
    replicates : bootstrap replicates for each group's prediction intervals (0: none; see
        :func:`perfmodel.compute_intervals`).
    executor : ``"serial"``, ``"processes"`` (default; a pool of ``workers`` processes, started
        only when the work justifies it) or a ``dask.distributed.Client``.
    progress : ``progress(done, total)`` after each group.
    **settings : :class:`Model` settings (lam, loss, penalty, seed, bounds, DE settings) or, with
        ``auto``, :func:`perfmodel.search.auto_select`'s (lam, loss, penalty, seed, max_terms,
        k, ...). Anything not given keeps the library's default.

    Returns :class:`GroupFits` (``summary``, ``results``, ``save(dir)``).
    Raises :class:`PerfModelError` for an unknown ``by``/time/factor column or a bad setting.
    """
    t0 = _time.perf_counter()
    plan = plan_groups(
        frame,
        by,
        time=time,
        factors=factors,
        terms=terms,
        preset=preset,
        auto=auto,
        model=model,
        cv=cv,
        min_configurations=min_configurations,
        name=name,
        replicates=replicates,
        gpus_per_node=gpus_per_node,
        **settings,
    )
    outcomes = plan.fit(executor=executor, workers=workers, progress=progress)
    return plan.fits(dict(enumerate(outcomes)), executor, _time.perf_counter() - t0)


def plan_groups(
    frame,
    by: str | Sequence[str],
    *,
    time: str | None = None,
    factors: dict | None = None,
    terms: str | None = None,
    preset: str | None = None,
    auto: bool = False,
    model: Model | None = None,
    cv: int = 5,
    min_configurations: int | None = None,
    name: str = "",
    replicates: int = 0,
    gpus_per_node: float | None = None,
    **settings,
) -> GroupPlan:
    """The groups of :func:`fit_groups` (same arguments, same checks), not fitted yet."""
    by = [by] if isinstance(by, str) else list(by or [])
    if not by:
        raise PerfModelError("name at least one column to group by")
    if isinstance(frame, Measurements):
        time, factors, frame, base_dropped = frame.time, dict(frame.factors), frame.frame, list(frame.dropped)
    else:
        base_dropped = []
    if not isinstance(frame, pd.DataFrame) or frame.empty:
        raise PerfModelError("the data has no rows")
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    columns = list(frame.columns)
    if time is None:
        raise PerfModelError("name the time column (time=...)")
    factors = dict(factors or {})
    if len(set(by)) != len(by):
        raise PerfModelError(f"a group column is named twice: {', '.join(by)}")
    for col in by:
        if col not in columns:
            raise PerfModelError(
                f"group column {col!r} not found{did_you_mean(col, columns)}; columns are: {', '.join(columns)}"
            )
        if col == time:
            raise PerfModelError(f"group column {col!r} is the time column; group by another column")
        for sym, fcol in factors.items():
            if fcol == col:
                raise PerfModelError(
                    f"group column {col!r} is mapped to factor {sym!r}; a group holds one "
                    "value of it, so it cannot also be a factor"
                )
    named = [("time column", time)] + [(f"factor {sym}'s column", col) for sym, col in factors.items()]
    for what, col in named:  # named here, before the table is sliced by them
        if col not in columns:
            raise PerfModelError(
                f"{what} {col!r} not found{did_you_mean(str(col), columns)}; columns are: {', '.join(columns)}"
            )
    spec = _model_spec(model, terms, preset, auto, settings)
    if spec.get("terms") is not None:  # a bad term is the same mistake in every group: say it once
        parse_expression(spec["terms"], list(factors), parse_bounds(spec.get("bounds") or {}), columns=columns)
    keep = list(dict.fromkeys([*by, time, *factors.values(), *(["status"] if "status" in columns else [])]))
    slim = frame[keep]
    meas = Measurements.from_frame(slim, time, factors, name=name)
    # Row numbers of Measurements are 1-based positions in ``frame``; group keys by position.
    group_keys = (
        pd.MultiIndex.from_frame(slim[by].reset_index(drop=True))
        if len(by) > 1
        else pd.Index(slim[by[0]].reset_index(drop=True))
    )
    codes, uniques = pd.factorize(group_keys, use_na_sentinel=False)
    dropped_by_group: dict[int, list] = {}
    for d in meas.dropped:
        dropped_by_group.setdefault(int(codes[d.row - 1]), []).append(d)
    kept_codes = codes[meas.rows - 1]
    order = np.argsort(kept_codes, kind="stable")
    bounds_of = np.searchsorted(kept_codes[order], np.arange(len(uniques) + 1))
    tasks = []
    for g in range(len(uniques)):
        key = tuple(uniques[g]) if len(by) > 1 else (uniques[g],)
        key = tuple(_plain(v) for v in key)
        rows = order[bounds_of[g] : bounds_of[g + 1]]
        sub = Measurements(meas.frame.iloc[rows], time, dict(factors), [], name)
        dropped = dropped_by_group.get(g, [])
        notes = []
        if dropped and rows.size:
            notes.append(
                f"{len(dropped)} row(s) dropped: "
                + "; ".join(str(d) for d in dropped[:3])
                + ("; ..." if len(dropped) > 3 else "")
            )
        empty = (
            (
                f"all {len(dropped)} row(s) were dropped: "
                + "; ".join(str(d) for d in dropped[:3])
                + ("; ..." if len(dropped) > 3 else "")
            )
            if dropped
            else "no rows"
        )
        tasks.append(
            {
                **spec,
                "key": key,
                "label": group_label(key),
                "meas": sub,
                "notes": notes,
                "empty_reason": empty,
                "cv": cv,
                "min_configurations": min_configurations,
                "replicates": int(replicates),
                "gpus_per_node": gpus_per_node,
            }
        )
    return GroupPlan(by, tasks, base_dropped + list(meas.dropped))


def _plain(v):
    """numpy scalars -> Python scalars (stable keys, JSON-able)."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def _model_spec(model: Model | None, terms, preset, auto: bool, settings: dict) -> dict:
    """What every group's task needs to build its model, validated once here."""
    if model is not None:
        if terms is not None or preset is not None or auto or settings:
            raise PerfModelError("give either model=Model(...) or terms/preset/auto with settings, not both")
        params = model.get_params()
        terms, preset, bounds = params.pop("terms"), params.pop("preset"), params.pop("bounds")
        model._check_settings()
        return {"terms": terms, "preset": preset, "bounds": bounds, "settings": params, "auto": False}
    if auto:
        if terms is not None or preset is not None:
            raise PerfModelError("give terms, a preset or auto=True, not several")

        allowed = set(inspect.signature(auto_select).parameters) - {"meas", "progress", "should_stop", "workers"}
        unknown = sorted(set(settings) - allowed)
        if unknown:
            raise PerfModelError(f"unknown setting(s) for the automatic search: {', '.join(unknown)}")
        return {"auto": True, "auto_settings": dict(settings)}
    if terms is None and preset is None:
        raise PerfModelError("choose the model: terms='...', preset=NAME, auto=True or model=Model(...)")
    bounds = settings.pop("bounds", None)
    try:
        m = Model(terms, preset=preset, bounds=bounds, **settings)
    except TypeError as exc:
        raise PerfModelError(str(exc)) from None
    m._check_settings()
    params = m.get_params()
    for k in ("terms", "preset", "bounds"):
        params.pop(k)
    return {"terms": terms, "preset": preset, "bounds": bounds, "settings": params, "auto": False}
