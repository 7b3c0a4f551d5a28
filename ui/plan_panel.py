"""Plan-page components: the plan's inputs, the recommendation a manager reads first and the table.

The plan itself is :func:`perfmodel.plan.plan` on the shown fit; the sentence is the first line of
:func:`perfmodel.plan.recommend` (read from the same table, so the two always agree). The inputs keep
their values in ``st.session_state`` (keys ``w:plan:*``; a copy under ``plan:settings`` brings them back
after another page was shown), go into the link (:func:`ui.links.set_page_params`, query keys
:data:`LINK_KEYS`), and the plan's arguments are kept under ``plan:kwargs`` for the Export page.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import streamlit as st

from perfmodel import PerfModelError, wording
from perfmodel.plan import default_grid as plan_default_grid, efficient, fmt_duration, parse_duration, plan, recommend
from perfmodel.plots.scaling import typical_value
from perfmodel.plots.style import FACTOR_WORDS, fmt_num

from . import links
from .text import md

LEVELS = (0.5, 0.8, 0.9, 0.95, 0.99)
PRICING = {"none": "none: cost in GPU-hours", "gpu": "per GPU-hour", "node": "per node-hour"}
#: Query keys of the Plan page's settings in a link.
LINK_KEYS = ("at", "grid", "repeat", "pricing", "price", "gpn", "deadline", "budget", "level")
MAX_GRID = 64


def default_grid(res, meas) -> list[float]:
    """The smallest measured p, then the powers of two above it up to 8 × the largest measured p
    (:func:`perfmodel.plan.default_grid`, as ``perfmodel report`` plans)."""
    return plan_default_grid(res)


def _fmt_list(values) -> str:
    return ", ".join(fmt_num(v) if float(v).is_integer() and abs(v) < 10_000 else f"{float(v):g}" for v in values)


def parse_grid(text: str, what: str = "Workers p") -> list[float]:
    """``"8, 16 32"`` -> [8.0, 16.0, 32.0] (positive numbers, at most :data:`MAX_GRID`)."""
    parts = [t for t in re.split(r"[,;\s]+", str(text).strip()) if t]
    if not parts:
        raise PerfModelError(f"{what}: give at least one value, e.g. 8, 16, 32")
    out = []
    for t in parts:
        try:
            v = float(t)
        except ValueError:
            raise PerfModelError(f"{what}: {t!r} is not a number") from None
        if not (math.isfinite(v) and v > 0):
            raise PerfModelError(f"{what}: {t!r} is not a positive number")
        out.append(v)
    if len(out) > MAX_GRID:
        raise PerfModelError(f"{what}: at most {MAX_GRID} values, got {len(out)}")
    return sorted(set(out))


def _parse_at(text: str) -> dict:
    out = {}
    for part in str(text or "").split(","):
        k, sep, v = part.partition("=")
        try:
            out[k.strip()] = float(v) if sep else None
        except ValueError:
            pass
    return {k: v for k, v in out.items() if v is not None and math.isfinite(v)}


#: GPUs per node the widget takes (a link's value outside is ignored with a notice, not clamped)
MAX_GPN = 4096


def _seed_from_link(res, meas, defaults: dict) -> None:
    """Put the opening link's plan settings into the widgets (once per session). A value outside what the
    widget takes is not clamped to another: it is ignored, and a notice says so while the widget keeps
    the value used instead (``plan:ignored``: [(widget, value, notice)], shown by :func:`controls`)."""
    ss = st.session_state
    got = links.linked_page_params(LINK_KEYS)
    if not got:
        return
    ignored = ss.setdefault("plan:ignored", [])
    for s, v in _parse_at(got.get("at", "")).items():
        if s in defaults["at"]:
            ss[f"w:plan:at:{s}"] = v
    for key, widget in (("grid", "w:plan:grid"), ("deadline", "w:plan:deadline"), ("budget", "w:plan:budget")):
        if key in got:
            ss[widget] = str(got[key])
    for key, widget, cast in (
        ("repeat", "w:plan:repeat", float),
        ("price", "w:plan:price", float),
        ("gpn", "w:plan:gpn", int),
        ("level", "w:plan:level", float),
    ):
        try:
            raw = float(got[key]) if key in got else None
        except (TypeError, ValueError, OverflowError):
            raw = float("nan")
        if raw is None:
            continue
        whole = key != "gpn" or (math.isfinite(raw) and raw == int(raw) and 1 <= raw <= MAX_GPN)
        if math.isfinite(raw) and raw > 0 and whole and (key != "level" or raw in LEVELS):
            ss[widget] = cast(raw)
        elif got[key] != "":
            need = {
                "gpn": f"GPUs per node: a whole number from 1 to {MAX_GPN}",
                "level": "one of " + ", ".join(f"{v:g}" for v in LEVELS),
            }.get(key, "a positive number")
            ignored.append((widget, ss.get(widget), f"ignored the link's {key} {str(got[key])[:40]!r} ({need})"))
    if got.get("pricing") in PRICING:
        ss["w:plan:pricing"] = got["pricing"]


def _defaults(res, meas) -> dict:
    return {
        "at": {s: typical_value(res, s, meas) for s in res.target_factors() if s != "p"},
        "grid": _fmt_list(default_grid(res, meas)),
        "repeat": 1.0,
        "pricing": "none",
        "price": 2.0,
        "gpn": int(st.session_state.get("gpus_per_node") or 8),
        "deadline": "",
        "budget": "",
        "level": 0.9,
    }


def controls(res, meas) -> tuple[dict | None, list[str]]:
    """The plan's inputs. Returns (the keyword arguments of :func:`perfmodel.plan.plan`, or None, and
    the input errors, each naming its field)."""
    ss = st.session_state
    if ss.get("plan:data") != ss.get("data_key"):  # other data: its own defaults, not the last data's values
        for k in [k for k in ss if str(k).startswith("w:plan:")]:
            del ss[k]
        ss.pop("plan:settings", None)
        ss.pop("plan:ignored", None)
        ss["plan:data"] = ss.get("data_key")
    d = _defaults(res, meas)
    kept = ss.get("plan:settings") or {}
    # a widget not drawn in the last run lost its state: bring back the kept value, else the default
    for s, v in d["at"].items():
        ss.setdefault(f"w:plan:at:{s}", kept.get(f"w:plan:at:{s}", v))
    for k in ("grid", "repeat", "pricing", "price", "gpn", "deadline", "budget", "level"):
        ss.setdefault(f"w:plan:{k}", kept.get(f"w:plan:{k}", d[k]))
    _seed_from_link(res, meas, d)
    for widget, used, note in ss.get("plan:ignored", []):
        if ss.get(widget) == used:  # until the widget is changed by hand
            st.warning(md(note), icon=":material/link_off:")
    errors: list[str] = []

    st.markdown("**The run**")
    others = list(d["at"])
    c = st.columns(max(len(others), 1) + 2)
    at = {}
    for i, s in enumerate(others):
        words = FACTOR_WORDS.get(s, (res.factors[s],))[0]
        whole = s not in meas.factors or bool(np.all(np.mod(meas.values(s), 1) == 0))
        at[s] = float(
            c[i].number_input(
                f"{md(s)}: {md(words)}",
                key=f"w:plan:at:{s}",
                min_value=0.0,
                step=1.0 if whole else None,
                format="%.0f" if whole else "%.6g",
                help=f"Hold {md(s)} at this value in every configuration of the plan (default: its most frequent "
                "measured value, as on the Scaling page).",
            )
        )
    grid_text = c[-2].text_input(
        "Workers p to compare",
        key="w:plan:grid",
        help="Comma-separated values of p; empty: the default, the smallest measured p "
        "and the powers of two above it up to 8 × the largest.",
    )
    repeat = c[-1].number_input(
        "Repeat (× the modelled unit)",
        key="w:plan:repeat",
        min_value=0.001,
        step=1.0,
        format="%g",
        help="How many times the measured unit runs: epochs or steps (1: once).",
    )
    try:
        grid = parse_grid(grid_text) if grid_text.strip() else default_grid(res, meas)  # empty: the default
    except PerfModelError as exc:
        errors.append(str(exc))
        grid = None

    st.markdown("**Price**")
    c = st.columns([2, 1, 1])
    pricing = c[0].radio(
        "Price",
        list(PRICING),
        key="w:plan:pricing",
        format_func=PRICING.get,
        horizontal=True,
        help="Without a price the cost is counted in GPU-hours (p × hours); a node-hour price "
        "counts whole nodes (p / GPUs per node, rounded up).",
    )
    price = c[1].number_input(
        "Price per GPU-hour" if pricing != "node" else "Price per node-hour",
        key="w:plan:price",
        min_value=0.0,
        step=0.5,
        format="%.2f",
        disabled=pricing == "none",
        help="In your currency; the costs are in the same unit.",
    )
    gpn = c[2].number_input(
        "GPUs per node",
        key="w:plan:gpn",
        min_value=1,
        max_value=MAX_GPN,
        step=1,
        disabled=pricing != "node",
        help="For a node-hour price: how many of the p workers share one node.",
    )
    st.markdown("**Deadline and budget**")
    c = st.columns([1, 1, 1])
    deadline_text = c[0].text_input(
        "Deadline",
        key="w:plan:deadline",
        placeholder="e.g. 90m, 12h, 2d",
        help="When the run must be done: seconds, or a number with s, m, h or d (90m, 12h, 2d); empty: no deadline.",
    )
    budget_text = c[1].text_input(
        "Budget",
        key="w:plan:budget",
        placeholder="GPU-hours" if pricing == "none" else "in the price's currency",
        help="The most the run may cost, in the cost's unit (GPU-hours without a price); empty: no budget.",
    )
    level = c[2].select_slider(
        "Interval level",
        options=list(LEVELS),
        key="w:plan:level",
        format_func=lambda v: f"{v:.0%}",
        help="The width of the ranges, and the probability a recommendation must reach "
        "(e.g. 90 %: the cheapest configuration that meets the deadline 9 times in 10).",
    )
    deadline = budget = None
    if deadline_text.strip():
        try:
            deadline = parse_duration(deadline_text.strip(), what="Deadline")
        except PerfModelError as exc:
            errors.append(str(exc))
    if budget_text.strip():
        try:
            budget = float(budget_text)
            if not (math.isfinite(budget) and budget > 0):
                raise ValueError
        except ValueError:
            errors.append(
                f"Budget: {budget_text.strip()!r} is not a positive number (in "
                f"{'GPU-hours' if pricing == 'none' else 'the price' + chr(39) + 's currency'})"
            )
            budget = None
    if pricing != "none" and not price > 0:
        errors.append("Price: give a positive price, or choose 'none: cost in GPU-hours'")

    settings = {
        f"w:plan:{k}": ss[f"w:plan:{k}"]
        for k in ("grid", "repeat", "pricing", "price", "gpn", "deadline", "budget", "level")
    }
    settings.update({f"w:plan:at:{s}": v for s, v in at.items()})
    ss["plan:settings"] = settings
    _register_link(d, at, grid_text, repeat, pricing, price, gpn, deadline_text, budget_text, level)
    if errors or grid is None:
        return None, errors
    kwargs = {
        "at": at,
        "grid": {"p": grid},
        "repeat": float(repeat),
        "deadline": deadline,
        "budget": budget,
        "level": float(level),
    }
    if pricing == "gpu":
        kwargs["price"] = float(price)
    elif pricing == "node":
        kwargs.update(node_price=float(price), gpus_per_node=int(gpn))
    return kwargs, []


def _register_link(d, at, grid_text, repeat, pricing, price, gpn, deadline_text, budget_text, level) -> None:
    """The settings that differ from the defaults go into the link."""
    changed_at = {s: v for s, v in at.items() if v != d["at"][s]}
    links.set_page_params(
        {
            "at": ",".join(f"{s}={v:g}" for s, v in changed_at.items()),
            "grid": grid_text.strip() if grid_text.strip() != d["grid"] else "",
            "repeat": f"{repeat:g}" if repeat != 1 else "",
            "pricing": pricing if pricing != "none" else "",
            "price": f"{price:g}" if pricing != "none" else "",
            "gpn": str(int(gpn)) if pricing == "node" else "",
            "deadline": deadline_text.strip(),
            "budget": budget_text.strip(),
            "level": f"{level:g}" if level != d["level"] else "",
        }
    )


def make(res, kwargs: dict) -> pd.DataFrame | None:
    """The plan of the shown fit (kept for the Export page); an error shown and None when it fails."""
    try:
        frame = plan(res, **kwargs)
    except PerfModelError as exc:
        st.error(md(str(exc)), icon=":material/error:")
        return None
    st.session_state["plan:kwargs"] = (st.session_state.get("data_key"), kwargs)
    return frame


def current(res, meas) -> tuple[pd.DataFrame | None, bool]:
    """The plan for the Export page: (frame, made on the Plan page). Without a visit to the Plan page,
    the default plan (no deadline, no budget, cost in GPU-hours); None when the model has no p or the
    plan fails."""
    if res is None or "p" not in res.factors:
        return None, False
    key, kwargs = st.session_state.get("plan:kwargs") or (None, None)
    made = (
        kwargs is not None
        and key == st.session_state.get("data_key")
        and set(kwargs.get("at", {})) == {s for s in res.target_factors() if s != "p"}
    )
    if not made:
        kwargs = {
            "at": {s: typical_value(res, s, meas) for s in res.target_factors() if s != "p"},
            "grid": {"p": default_grid(res, meas)},
        }
    try:
        return plan(res, **kwargs), made
    except PerfModelError:
        return None, False


def recommendation(frame: pd.DataFrame) -> None:
    """The first recommendation as the headline (a sentence with its ranges), the others below it."""
    lines = recommend(frame)
    a = frame.attrs
    if a.get("deadline") is None and a.get("budget") is None:
        st.info(
            "Set a **deadline** or a **budget** above for a recommendation: the cheapest configuration that "
            "meets the deadline, or the fastest within the budget, with the chosen probability.",
            icon=":material/lightbulb:",
        )
        rest = lines
    elif lines:
        head, rest = lines[0], lines[1:]
        kind = st.warning if head.startswith("no configuration") else st.success
        kind(md(wording.sentence(head)), icon=":material/lightbulb:")
    else:  # pragma: no cover - recommend always says something when a deadline or budget is set
        rest = []
    for line in rest:
        st.markdown(f"- {md(wording.sentence(line))}")
    if not frame["p_deadline"].notna().any() and (a.get("deadline") is not None or a.get("budget") is not None):
        st.caption("The probabilities need the fit's intervals (being computed; the page is redrawn with them).")
    else:
        st.caption(
            f"Ranges are {a.get('level', 0.9):.0%} intervals. A configuration meets the deadline (the budget) "
            "with the probability that a simulated run, drawn from the model's plausible fits and the noise "
            "of a run, is done in time (within it)."
        )


def table(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The plan for people: times in one unit, money with 2 decimals, probabilities in %; and the
    column configs of ``st.dataframe``."""
    factors = [s for s in frame.attrs.get("factors", []) if s not in (frame.attrs.get("at") or {})]
    gpu_h = frame.attrs.get("cost_unit") == "GPU-hours"
    view = pd.DataFrame({s: frame[s] for s in factors})
    view["time"] = [  # each in the unit that reads well for it, as the CLI and the report write it
        fmt_duration(t, lo, hi)
        for t, lo, hi in zip(frame["time_s"], frame["time_low"], frame["time_high"], strict=True)
    ]
    view["GPU-hours"] = frame["gpu_hours"]
    if not gpu_h:
        view["cost"], view["cost low"], view["cost high"] = frame["cost"], frame["cost_low"], frame["cost_high"]
    else:
        view["GPU-hours low"], view["GPU-hours high"] = frame["gpu_hours_low"], frame["gpu_hours_high"]
    view["efficiency"] = frame["efficiency"] * 100
    view["on the frontier"] = efficient(frame)
    if frame.attrs.get("deadline") is not None:
        view["P(deadline)"] = frame["p_deadline"] * 100
    if frame.attrs.get("budget") is not None:
        view["P(budget)"] = frame["p_budget"] * 100
    level = frame.attrs.get("level", 0.9)
    cfg = {s: st.column_config.NumberColumn(s, format="%g", help=FACTOR_WORDS.get(s, (s,))[0]) for s in factors}
    cfg.update(
        {
            "time": st.column_config.TextColumn(
                "time (interval)", help=f"Predicted wall time of the run, with its {level:.0%} interval."
            ),
            "GPU-hours": st.column_config.NumberColumn("GPU-hours", format="%.2f", help="p × hours."),
            "GPU-hours low": st.column_config.NumberColumn("GPU-h low", format="%.2f"),
            "GPU-hours high": st.column_config.NumberColumn("GPU-h high", format="%.2f"),
            "cost": st.column_config.NumberColumn("cost", format="%.2f", help="In the price's currency."),
            "cost low": st.column_config.NumberColumn("cost low", format="%.2f"),
            "cost high": st.column_config.NumberColumn("cost high", format="%.2f"),
            "efficiency": st.column_config.NumberColumn(
                "efficiency", format="%.0f %%", help="GPU-hours at the smallest p / GPU-hours here."
            ),
            "on the frontier": st.column_config.CheckboxColumn(
                "frontier", help="No other configuration is both faster and cheaper."
            ),
            "P(deadline)": st.column_config.NumberColumn(
                "P(deadline)", format="%.0f %%", help="Probability of meeting the deadline."
            ),
            "P(budget)": st.column_config.NumberColumn(
                "P(budget)", format="%.0f %%", help="Probability of staying within the budget."
            ),
        }
    )
    return view, {k: v for k, v in cfg.items() if k in view.columns}


def show_table(frame: pd.DataFrame) -> None:
    view, cfg = table(frame)
    st.dataframe(view, hide_index=True, width="stretch", column_config=cfg, key="plan_table")
