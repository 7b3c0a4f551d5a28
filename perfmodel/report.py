"""Exports of a fitted model: JSON, predictions CSV, LaTeX, Python, and a standalone HTML report.

* The model JSON is exactly :meth:`FitResult.to_json` (the file the CLI writes and reads).
* The HTML report holds the formula, metrics, constants and the interactive Plotly charts;
  plotly.js is inlined once, so the file opens without a network connection.

Tables here (constants, metrics, predictions) are plain DataFrames shared by the app and the report.

Presentation: imports from every layer below it (never from the CLI or the app).
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import wording
from .data.measurements import Measurements
from .errors import PerfModelError
from .fitting.evaluate import METRIC_LABELS
from .plan import efficient, fmt_cost, fmt_duration, recommend
from .plots import report_figures
from .plots.groups import group_quality_table
from .plots.plan import plan_deadline_figure, plan_frontier_figure
from .plots.scaling import ScalingData, scaling_data
from .plots.style import TIME_UNIT, fmt_num, term_styles, view_unit
from .spreadsheet import to_csv
from .version import __version__

METRIC_ORDER = ("mape", "smape", "max_pct_error", "rmse", "r2", "adj_r2")
#: Metrics of the fit's own rows only: blank in a validation's column of :func:`metrics_table`.
IN_SAMPLE_ONLY = ("adj_r2",)
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"format": "png", "scale": 2}}


def model_json(result) -> str:
    """The model file: the same JSON the CLI writes (``FitResult.to_json``)."""
    return result.to_json()


def coefficient_unit(term_formula: str) -> str:
    """Unit of a term's constant: seconds, or seconds per unit of the term."""
    if term_formula in ("1", ""):
        return TIME_UNIT
    if term_formula.isidentifier():
        return f"{TIME_UNIT} / {term_formula}"
    return f"{TIME_UNIT} / ({term_formula})"


def constants_table(result) -> pd.DataFrame:
    """One row per fitted constant and free exponent.

    Columns: name, term (formula with fitted exponents), meaning (plain words), category,
    value, unit, share (% of the total predicted time over the data; blank for exponents),
    bounds (exponents only); for a model with overlaps also ``overlapped with`` (the terms of the
    other side); with the fit's intervals also ``low`` and ``high`` (its 90 % interval) and
    ``share low (%)``, ``share high (%)``.
    """
    ci = result.constant_intervals(0.9) if result.has_intervals else {}
    si = result.share_intervals(0.9) if result.has_intervals else {}
    rows: list[dict] = []
    for k, s in enumerate(term_styles(result)):
        c = result.coefficients[f"c{k}"] * result.signs[k]
        rows.append(
            {
                "name": f"c{k}",
                "term": "1 (constant)" if s.text == "1" else s.formula,
                "meaning": s.label if s.label != s.formula else "",
                "category": s.category,
                "value": float(c),
                "unit": coefficient_unit("" if s.text == "1" else s.formula),
                "share (%)": float(result.shares.get(s.text, float("nan"))) * 100,
                "bounds": "",
                "overlapped with": s.overlapped_with,
            }
        )
    overlaps = result._expression().overlaps
    gammas = {grp.param for grp in overlaps}
    for name, v in result.params.items():
        lo, hi = result.param_bounds.get(name, [float("nan"), float("nan")])
        term, meaning = (
            (
                "overlap γ",
                "how far the overlap's sides hide each other (1: not at all, large: the smaller side is hidden)",
            )
            if name in gammas
            else ("exponent", "free exponent")
        )
        rows.append(
            {
                "name": name,
                "term": term,
                "meaning": meaning,
                "category": "",
                "value": float(v),
                "unit": "–",
                "share (%)": float("nan"),
                "bounds": f"[{lo:g}, {hi:g}]",
                "overlapped with": "",
            }
        )
    columns = ["name", "term", "meaning", "category", "value", "unit", "share (%)", "bounds"]
    if overlaps:  # which terms each term overlaps with (the other side of its overlap)
        columns.insert(columns.index("category") + 1, "overlapped with")
    if ci:
        for r in rows:
            name = r["name"]
            sign = result.signs[int(name[1:])] if name in result.coefficients else 1
            lo, hi = sorted(v * sign for v in ci[name])
            r["low"], r["high"] = lo, hi
            of_term = result.terms[int(name[1:])] if name in result.coefficients else None
            lo_s, hi_s = si.get(of_term, (float("nan"), float("nan")))
            r["share low (%)"], r["share high (%)"] = lo_s * 100, hi_s * 100
        i = columns.index("value") + 1
        columns[i:i] = ["low", "high"]
        i = columns.index("share (%)") + 1
        columns[i:i] = ["share low (%)", "share high (%)"]
    return pd.DataFrame(rows, columns=columns)


def metrics_table(result, validation: dict | None = None) -> pd.DataFrame:
    """Metrics by row (MAPE, ...): an ``in-sample`` column and one column per validation method.

    ``validation`` maps a method label (e.g. ``"5-fold cross-validation"``) to a metrics dict;
    by default ``result.validation``. A validation's adjusted R² is NaN: it is an in-sample measure
    (:func:`~perfmodel.fitting.evaluate.out_of_sample`), and a model file written before said so may
    hold one that only repeats the R².
    """
    validation = result.validation if validation is None else validation
    data = {"in-sample": [result.metrics.get(k, float("nan")) for k in METRIC_ORDER]}
    for method, vm in (validation or {}).items():
        data[method] = [float("nan") if k in IN_SAMPLE_ONLY else vm.get(k, float("nan")) for k in METRIC_ORDER]
    return pd.DataFrame(data, index=[METRIC_LABELS.get(k, k) for k in METRIC_ORDER])


def predictions_frame(result, meas: Measurements, cv_predicted: np.ndarray | None = None) -> pd.DataFrame:
    """Per measured row: factors (original column names), measured and predicted time, error %,
    the prediction's 90 % interval (when the fit has intervals), and each term's contribution."""
    env = meas.env()
    out = pd.DataFrame({"row": meas.rows})
    for sym, col in meas.factors.items():
        out[col] = env[sym]
    pred = result.predict(meas)
    out[f"measured_{TIME_UNIT}"] = meas.y
    out[f"predicted_{TIME_UNIT}"] = pred
    out["error_pct"] = (pred - meas.y) / meas.y * 100
    if result.has_intervals:  # the 90 % interval of each run's prediction
        band = result.predict(meas, interval=0.9)
        out[f"predicted_low_{TIME_UNIT}"] = band["predicted_low"].to_numpy()
        out[f"predicted_high_{TIME_UNIT}"] = band["predicted_high"].to_numpy()
    if cv_predicted is not None:
        cv = np.asarray(cv_predicted, float)
        out[f"cv_predicted_{TIME_UNIT}"] = cv
        out["cv_error_pct"] = (cv - meas.y) / meas.y * 100
    contrib = result.contributions(meas)
    for s in term_styles(result):
        out[f"contribution: {s.formula if s.text != '1' else 'constant'}"] = contrib[s.text].to_numpy()
    return out


def predictions_csv(result, meas: Measurements, cv_predicted: np.ndarray | None = None) -> str:
    return to_csv(predictions_frame(result, meas, cv_predicted), float_format="%.6g")


def latex_snippet(result) -> str:
    """The fitted formula as a LaTeX equation."""
    return "\\begin{equation}\n" + result.latex() + "\n\\end{equation}\n"


def python_snippet(result) -> str:
    """A self-contained Python function computing the fitted model with numpy.

    The code is generated only from a validated model (the result is round-tripped through the
    model-file loader, so symbols are identifiers and terms are re-rendered by the safe parser)
    and numbers written with ``repr``; column names and the dataset name, which come from the
    data, appear only as ``repr`` string literals. Raises :class:`PerfModelError` otherwise.
    """
    from .fitting.result import FitResult

    checked = FitResult.from_dict(result.to_dict())
    symbols = list(checked.factors)
    numpy = next(a for a in ("np", "numpy", "_np") if a not in symbols)
    expr = checked.python_expression(numpy=numpy)
    formula = checked.formula()
    if not _SAFE_DOC.fullmatch(formula):  # pragma: no cover - the parser renders only these characters
        raise PerfModelError("the model's formula has characters that cannot go into generated code")
    doc = f"Predicted time ({TIME_UNIT}) of the model fitted by perfmodel {__version__}: {formula}"
    lines = [
        f"import numpy as {numpy}" if numpy != "numpy" else "import numpy",
        "",
        "#: Data column of each argument (as in the measurements the model was fitted to).",
        f"COLUMNS = {dict(checked.factors)!r}",
        f"DATASET = {checked.dataset!r}",
        "",
        "",
        f"def predict({', '.join(symbols)}):",
        f'    """{doc}',
        "",
        "    Arguments: " + (", ".join(symbols) or "none") + " (see COLUMNS); arrays or numbers.",
        '    """',
    ]
    for sym in symbols:
        lines.append(f"    {sym} = {numpy}.asarray({sym}, dtype=float)")
    # The iteration count I = E·ceil(N/(p·b)) takes E = 1 and p = 1 when they are not factors.
    for name, why in (
        ("E", "one epoch (E is not a factor of this model)"),
        ("p", "one worker (p is not a factor of this model)"),
    ):
        if name not in symbols and re.search(rf"(?<![A-Za-z0-9_.]){name}(?![A-Za-z0-9_(])", expr):
            lines.append(f"    {name} = 1.0  # {why}")
    lines.append(f"    return {expr}")
    code = "\n".join(lines) + "\n"
    compile(code, "predict.py", "exec")  # generated code must at least be valid Python
    return code


#: Characters a formula rendered from a validated model consists of.
_SAFE_DOC = re.compile(r"[A-Za-z0-9_ =+\-*/^().,;·]*")


# -- HTML report -----------------------------------------------------------------------------------
_CSS = """
body { font-family: Inter, 'Source Sans Pro', 'Helvetica Neue', Arial, sans-serif; color: #1f2937;
       max-width: 1150px; margin: 2rem auto; padding: 0 1.5rem; line-height: 1.45; }
h1 { font-size: 1.9rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.35rem; margin-top: 2.2rem; border-bottom: 1px solid #e5e7eb; padding-bottom: 0.3rem; }
.meta { color: #6b7280; }
.formula { font-family: 'JetBrains Mono', Menlo, Consolas, monospace; font-size: 1.15rem; background: #f3f4f6;
           padding: 0.8rem 1rem; border-radius: 6px; overflow-x: auto; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.95rem; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 0.35rem 0.8rem; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.headline { font-size: 1.1rem; background: #eff6ff; border-left: 4px solid #3b82f6; padding: 0.6rem 0.9rem; }
.warn { background: #fffbeb; border-left: 4px solid #f59e0b; padding: 0.5rem 0.9rem; margin: 0.4rem 0; }
.figure { margin: 1.2rem 0; }
details pre { background: #f9fafb; padding: 0.6rem; overflow-x: auto; }
"""


def _fmt_value(v) -> str:
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(v):
            return ""
        return f"{v:.4g}"
    return html.escape(str(v))


def _table(frame: pd.DataFrame, index: bool = False) -> str:
    cols = ([""] if index else []) + [str(c) for c in frame.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for idx, row in frame.iterrows():
        cells = [f"<th>{html.escape(str(idx))}</th>"] if index else []
        for v in row:
            cls = ' class="num"' if isinstance(v, (int, float, np.number)) else ""
            cells.append(f"<td{cls}>{_fmt_value(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _scaling_symbol(result, scaling: dict) -> str:
    """The factor of the report's scaling view: the view's, else p, else the first factor."""
    return str(
        scaling.get("symbol")
        if scaling.get("symbol") in result.factors
        else ("p" if "p" in result.factors else next(iter(result.factors)))
    )


def _scaling_view(result, meas: Measurements | None, scaling: dict) -> tuple[str, ScalingData, str]:
    """(symbol, curve, time unit) of the report's scaling view: the unit is the scaling charts', which
    the headline and the warnings beside it speak in."""
    symbol = _scaling_symbol(result, scaling)
    d = scaling_data(result, symbol, scaling.get("fixed"), meas, scaling.get("x_max"))
    return symbol, d, view_unit(d.total, d.high, d.points_y)


def _scaling_warnings(result, meas: Measurements | None, scaling: dict) -> list[str]:
    """Warnings for the far end of the report's scaling view (far extrapolation, batch below one sample)."""
    if not result.factors:
        return []
    symbol, d, unit = _scaling_view(result, meas, scaling)
    return result.prediction_warnings({symbol: d.x[-1:], **{s: [v] for s, v in d.fixed.items()}}, unit)


def lead(result, meas: Measurements | None, scaling: dict | None = None) -> str:
    """The report's first paragraph, in the app's words (:mod:`perfmodel.wording`): the poor-fit verdict
    when the fit is too poor to quote, else the Scaling page's headline for the report's scaling view
    (``scaling``: keys ``symbol``, ``fixed``, ``x_max``, as :func:`html_report` takes them)."""
    verdict = wording.poor_fit(result)
    if verdict is not None:
        return (
            f"<div class='warn verdict'><strong>{html.escape(verdict)}</strong> The charts below show what it "
            "predicts, not what a run will take.</div>"
        )
    if not result.factors:
        return ""
    symbol, d, unit = _scaling_view(result, meas, scaling or {})
    words = wording.headline(
        result, symbol, d.fixed, result.factor_ranges[symbol][1], float(d.x[-1]), unit=unit, crossover=d.crossover
    )
    return f"<p class='headline'>{words.html()}</p>"


def plan_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The plan (:func:`perfmodel.plan.plan`) for people: the grid's factors, time with its interval (in
    the unit that reads well for it, as ``perfmodel plan`` prints it), GPU-hours and cost with 2 decimals, efficiency and the probabilities in %."""
    a = frame.attrs
    factors = [s for s in a.get("factors", []) if s not in (a.get("at") or {})]
    out = pd.DataFrame({s: [fmt_num(v) for v in frame[s]] for s in factors})
    out["time (interval)"] = [  # each in its own unit, as `perfmodel plan` prints it: 27 min (25–32 min)
        fmt_duration(t, lo, hi)
        for t, lo, hi in zip(frame["time_s"], frame["time_low"], frame["time_high"], strict=True)
    ]
    out["GPU-hours"] = [f"{v:.2f}" for v in frame["gpu_hours"]]
    if a.get("cost_unit") != "GPU-hours":
        out["cost"] = [f"{v:.2f}" for v in frame["cost"]]
        out["cost interval"] = [
            f"{lo:.2f}–{hi:.2f}" for lo, hi in zip(frame["cost_low"], frame["cost_high"], strict=True)
        ]
    else:
        out["GPU-hours interval"] = [
            f"{lo:.2f}–{hi:.2f}" for lo, hi in zip(frame["gpu_hours_low"], frame["gpu_hours_high"], strict=True)
        ]
    out["efficiency"] = [f"{v:.0%}" for v in frame["efficiency"]]
    out["efficient frontier"] = ["yes" if f else "" for f in efficient(frame)]
    for col, key, label in (("p_deadline", "deadline", "P(deadline)"), ("p_budget", "budget", "P(budget)")):
        if a.get(key) is not None:
            out[label] = [f"{v:.0%}" if math.isfinite(v) else "–" for v in frame[col]]
    return out


def _plan_section(frame: pd.DataFrame, measured_max: float | None, first_figure: bool) -> list[str]:
    a = frame.attrs
    settings = [
        f"{float(a.get('repeat', 1)):g} × the modelled unit",
        "at " + ", ".join(f"{s} = {fmt_num(v)}" for s, v in (a.get("at") or {}).items()) if a.get("at") else "",
        f"deadline {fmt_duration(a['deadline'])}" if a.get("deadline") is not None else "no deadline",
        f"budget {fmt_cost(frame, a['budget'])}" if a.get("budget") is not None else "no budget",
        "cost in GPU-hours" if a.get("cost_unit") == "GPU-hours" else "cost in the price's currency",
        f"{float(a.get('level', 0.9)):.0%} intervals",
    ]
    lines = recommend(frame)
    parts = ["<h2>Plan</h2>", "<p>" + html.escape("; ".join(x for x in settings if x)) + ".</p>"]
    if lines:
        parts.append("<ul>" + "".join(f"<li>{html.escape(wording.sentence(x))}</li>" for x in lines) + "</ul>")
    parts.append(_table(plan_table(frame)))
    figs = [plan_frontier_figure(frame), plan_deadline_figure(frame, measured_max=measured_max)]
    for i, fig in enumerate(figs):
        parts.append(
            f"<div class='figure'>{figure_html(fig, include_plotlyjs=first_figure and i == 0, div_id=f'plan{i}')}</div>"
        )
    return parts


def figure_html(fig: go.Figure, include_plotlyjs: bool, div_id: str | None = None) -> str:
    """One figure as an HTML fragment; plotly.js is inlined when ``include_plotlyjs``."""
    return fig.to_html(
        full_html=False,
        include_plotlyjs=True if include_plotlyjs else False,
        include_mathjax=False,
        config=PLOTLY_CONFIG,
        div_id=div_id,
    )


def html_report(
    result,
    meas: Measurements | None,
    figures: dict[str, go.Figure] | None = None,
    cv_predicted: np.ndarray | None = None,
    title: str | None = None,
    scaling: dict | None = None,
    plan: pd.DataFrame | None = None,
) -> str:
    """A standalone HTML page: formula, metrics, constants, settings and the interactive charts;
    with ``plan`` (a :func:`perfmodel.plan.plan` table) also a Plan section: its settings, the
    recommendations, the table and its two charts.

    ``figures`` (title -> figure) defaults to :func:`perfmodel.plots.report_figures`, whose scaling
    view takes ``scaling`` (keys ``symbol``, ``fixed``, ``x_max``, ``log_x``, ``log_y``). plotly.js
    is inlined in the first chart, so the page needs no network. It opens with the headline of that
    view, or the verdict on a fit too poor to quote (:func:`lead`), in the words of the app and the CLI.
    ``meas`` None (a model file without its data): the charts that need no measured runs only.
    """
    if figures is None:
        figures = report_figures(result, meas, cv_predicted=cv_predicted, **(scaling or {}))
    name = result.dataset or (meas.name if meas is not None else "") or "measurements"
    title = title or f"Execution-time model: {name}"
    s = result.settings
    conv = result.convergence
    now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        lead(result, meas, scaling),
        f"<p class='meta'>Generated by perfmodel {html.escape(__version__)} on {now}. "
        f"{result.n_rows} measured runs in {result.n_configurations} configurations; factors: "
        + html.escape(", ".join(f"{k} = {v}" for k, v in result.factors.items()) or "none")
        + f"; time column: {html.escape(result.time)}.</p>",
        "<h2>Model</h2>",
        f"<div class='formula'>{html.escape(result.formula())}</div>",
        "<details><summary>LaTeX and Python</summary>"
        f"<pre>{html.escape(result.latex())}</pre><pre>{html.escape(python_snippet(result))}</pre></details>",
        "<h2>Accuracy</h2>",
        "<p>In-sample metrics compare the model with the runs it was fitted to; cross-validated metrics "
        "(when present) predict each configuration from a model fitted without it. Adjusted R² is the fit's "
        "only: it corrects R² for the parameters fitted to the same runs, which held-out runs did not pay.</p>",
        _table(metrics_table(result), index=True),
        "<h2>Constants and exponents</h2>",
        _table(constants_table(result)),
    ]
    if result.has_intervals:
        facts = pd.DataFrame(result.interval_facts(0.9), columns=["", "how the 90 % intervals were made"])
        parts += [
            "<h2>Intervals</h2>",
            "<p>90 % intervals: each constant's low and high in the table above, bands on the charts below.</p>",
            _table(facts),
        ]
    else:
        parts.append("<p class='meta'>This fit carries no intervals (fitted with <code>--replicates 0</code>).</p>")
    notes = list(result.warnings) + _scaling_warnings(result, meas, scaling or {})
    if notes or result.dropped:
        parts.append("<h2>Warnings</h2>")
        parts += [f"<div class='warn'>{html.escape(w)}</div>" for w in notes]
        if result.dropped:
            parts.append(
                f"<div class='warn'>{len(result.dropped)} row(s) left out of the fit: "
                + html.escape("; ".join(result.dropped[:20]))
                + (" …" if len(result.dropped) > 20 else "")
                + "</div>"
            )
    parts.append("<h2>Charts</h2>")
    for i, fig in enumerate(figures.values()):
        parts.append(f"<div class='figure'>{figure_html(fig, include_plotlyjs=(i == 0), div_id=f'fig{i}')}</div>")
    if plan is not None:
        p_max = result.factor_ranges["p"][1] if "p" in result.factor_ranges else None
        parts += _plan_section(plan, p_max, first_figure=not figures)
    settings = {
        "expression": result.expression,
        "λ (lambda)": s.get("lam"),
        "penalty": s.get("penalty"),
        "loss": s.get("loss"),
        "seed": s.get("seed"),
        "weight of each larger measured p": result.scale_weight,
        "strategy": s.get("strategy"),
        "population size": s.get("popsize"),
        "max generations": s.get("maxiter"),
        "tolerance": s.get("tol"),
        "generations run": conv.get("nit"),
        "cost evaluations": conv.get("nfev"),
        "fit time (s)": conv.get("seconds"),
        "cost": result.cost,
    }
    frame = pd.DataFrame(
        {
            "setting": list(settings),
            "value": [fmt_num(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in settings.values()],
        }
    )
    parts += [
        "<h2>Fit settings</h2>",
        _table(frame),
        "<p class='meta'>Model fitted by regularised differential evolution "
        "(Kavarakuntla et al., IEEE Access 2024). Load the model JSON with "
        "<code>perfmodel.FitResult.load(path)</code>.</p>",
        "</body></html>",
    ]
    return "\n".join(parts)


def groups_report(
    fits, figures: dict[str, go.Figure | None], headline: str = "", title: str | None = None, by=()
) -> str:
    """A standalone HTML page of a group comparison (the Groups page; ``perfmodel fit --group-by``'s
    groups): the headline (``headline``, Markdown with ``**`` and backslash escapes, as the page shows it),
    the ``figures`` (title -> figure; None left out), and the table of each group's errors and time split.
    plotly.js is inlined in the first chart."""
    title = title or "Groups compared"
    text = re.sub(r"\\(.)", r"\1", headline or "")
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(text))
    now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='headline'>{text}</p>" if text else "",
        f"<p class='meta'>Generated by perfmodel {html.escape(__version__)} on {now}. {fits.n_ok} of {len(fits)} "
        f"groups fitted by {html.escape(', '.join(map(str, by)) or 'group')}, each with the same terms.</p>",
    ]
    shown = [(t, f) for t, f in figures.items() if f is not None]
    for i, (_, fig) in enumerate(shown):
        parts.append(f"<div class='figure'>{figure_html(fig, include_plotlyjs=(i == 0), div_id=f'g{i}')}</div>")
    parts += ["<h2>Errors and time split per group</h2>", _table(group_quality_table(fits)), "</body></html>"]
    return "\n".join(p for p in parts if p)
