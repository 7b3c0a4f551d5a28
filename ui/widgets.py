"""Shared widgets: the sidebar at a glance, guards for pages that need a fit, small formatters."""

from __future__ import annotations

import re

import streamlit as st

from perfmodel.plots.style import fmt_num

from . import fitting
from .text import md

PAGES = {
    "data": "pages/data.py",
    "model": "pages/model.py",
    "results": "pages/results.py",
    "scaling": "pages/scaling.py",
    "export": "pages/export.py",
}


def flash(where: str, text: str, kind: str = "success") -> None:
    """Keep a message for the next run, to be shown by :func:`show_flash` at ``where`` (the place
    of the action that caused it, not the top of the page)."""
    st.session_state.setdefault("flashes", {})[where] = (kind, text)


def show_flash(where: str) -> None:
    """Show (once) the message kept for ``where``."""
    kind, text = st.session_state.get("flashes", {}).pop(where, (None, None))
    if text:
        icon = {"success": ":material/check_circle:", "info": ":material/info:"}.get(kind, ":material/info:")
        getattr(st, kind)(text, icon=icon)


def fmt_lambda(v: float) -> str:
    v = float(v)
    if v == 0:
        return "0"
    return f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e") if v < 0.01 else f"{v:g}"


def fmt_pct(v) -> str:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return "–"
    return "–" if v != v else f"{v:.1f} %"


def sidebar_formula(res) -> str:
    """The fitted formula one term per line, so a narrow sidebar never breaks it inside a number."""
    head, _, body = res.formula(3).partition(" = ")
    parts = body.replace(" - ", " + -").split(" + ")
    lines = [f"{head} = {parts[0]}"] + [f"− {p[1:]}" if p.startswith("-") else f"+ {p}" for p in parts[1:]]
    return "\n".join(lines)


def sidebar() -> None:
    """The current dataset, model and fit at a glance."""
    ss = st.session_state
    sb = st.sidebar
    data, meas, res = ss.get("data"), ss.get("meas"), ss.get("result")
    sb.markdown("#### Dataset")
    if data is None or meas is None:
        sb.caption("No data loaded.")
    else:
        sb.markdown(f"**{md(data['title'])}**")
        factors = ", ".join(md(f"{s} = {c}" if s != c else s) for s, c in meas.factors.items())
        sb.caption(
            f"{meas.n_rows} runs · {meas.n_configurations} configurations  \n"
            f"factors: {factors}  \ntime: {md(meas.time)}"
        )
    sb.markdown("#### Model")
    if res is None:
        sb.caption("Not fitted yet." if not ss.get("fit_error") else "The last fit failed (see the Model page).")
        return
    # Inline code in Markdown, not st.code: the code block's highlighter is a 1.5 MB script that the
    # browser would otherwise load and parse before the first page of every session is complete.
    sb.container(key="sidebar_formula").markdown(
        "  \n".join(f"`{line.strip()}`" for line in sidebar_formula(res).splitlines())
    )
    s = res.settings
    sb.caption(
        f"λ = {fmt_lambda(s.get('lam', 0))} ({str(s.get('penalty', '')).upper()}) · "
        f"{s.get('loss')} loss · seed {s.get('seed')}" + (f" · fitted with {res.weighting}" if res.weighting else "")
    )
    sb.markdown("#### Fit")
    c1, c2 = sb.columns(2)
    c1.metric(
        "MAPE (fit)",
        fmt_pct(res.metrics.get("mape")),
        help="In-sample: mean absolute percentage error on the runs the model was fitted to.",
    )
    cv = ss.get("cv") or {}
    cv_m = (cv.get("metrics") or {}).get("mape")
    c2.metric(
        "MAPE (CV)",
        fmt_pct(cv_m),
        help=f"{cv.get('label', 'cross-validation')}: each configuration predicted by a model fitted without it."
        if cv
        else "Cross-validating…"
        if ss.get("cv:pending")
        else "Cross-validation is switched off (Model page).",
    )
    sb.caption("MAPE: the typical error, in % of the measured time; CV: on configurations the fit did not see.")
    if fitting.is_stale():
        sb.warning(
            "The terms or settings changed since this fit; press **Fit model** on the Model page.",
            icon=":material/update:",
        )
    if ss.get("fit_error"):
        sb.error("The last fit failed; the previous model is shown.", icon=":material/error:")


def _latex_terms(tex: str) -> list[str]:
    """``T = a + b - c`` -> ["T = a", "+ b", "- c"]: split at the top level's + and - (outside braces)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(tex):
        depth += ch in "{(" and 1 or (ch in "})" and -1) or 0
        if depth == 0 and ch in "+-" and tex[i - 1 : i] == " " and tex[i + 1 : i + 2] == " ":
            parts.append(tex[start:i].strip())
            start = i
    parts.append(tex[start:].strip())
    return [p for p in parts if p]


def _shown_length(tex: str) -> int:
    """About how many characters a LaTeX snippet shows (commands and braces not counted)."""
    return len(re.sub(r"\\[A-Za-z]+|[{}\\ ]", "", tex))


def latex_lines(tex: str, width: int = 48) -> str:
    """A formula broken into lines of about ``width`` shown characters (at its top-level + and -), aligned
    at its ``=``: a long fitted formula is read whole in a narrow column, never cut off or scrolled."""
    terms = _latex_terms(tex)
    if _shown_length(tex) <= width or len(terms) < 2:
        return tex
    lines, line = [], ""
    for term in terms:
        if line and _shown_length(line + term) > width:
            lines.append(line)
            line = term
        else:
            line = f"{line} {term}".strip()
    lines.append(line)
    head, eq, rest = lines[0].partition("=")
    first = f"{head.strip()} &= {rest.strip()}" if eq else f"& {lines[0]}"
    return "\\begin{aligned} " + " \\\\ ".join([first, *(f"& {x}" for x in lines[1:])]) + " \\end{aligned}"


def require_result() -> None:
    """Stop the page with a pointer to the Model page when there is no fitted model."""
    ss = st.session_state
    if ss.get("result") is not None:
        return
    if ss.get("meas") is None:
        st.info("Load a dataset or upload a file first.", icon=":material/table:")
        st.page_link(PAGES["data"], label="Go to the Data page", icon=":material/arrow_forward:")
    else:
        if ss.get("fit_error"):
            st.error(md(ss["fit_error"]), icon=":material/error:")
        st.info("No fitted model yet: choose terms and press **Fit model**.", icon=":material/functions:")
        st.page_link(PAGES["model"], label="Go to the Model page", icon=":material/arrow_forward:")
    st.stop()


def factor_caption(meas) -> str:
    ranges = meas.summary()["factor_ranges"]
    return " · ".join(f"{s}: {fmt_num(lo)}–{fmt_num(hi)}" for s, (lo, hi, _) in ranges.items())
