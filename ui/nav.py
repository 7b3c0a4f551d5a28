"""The dashboard's pages, and the guard each page calls first.

Why the guard: with a ``pages/`` folder next to ``app.py``, a freshly started Streamlit server
answers its very first request in the legacy "pages folder" mode until ``st.navigation`` has been
called once. If that first request is a deep link (``/scaling?dataset=...``), Streamlit runs the
page file directly, without ``app.py`` (no session defaults, no sidebar). :func:`guard` notices
that ``app.py`` did not run, calls ``st.navigation`` (which ends the legacy mode for the server)
and reruns, so the same URL is then served through ``app.py``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent


def pages() -> list:
    """Data, Model, Results, Scaling, [Plan, Compare, Groups if present], Export.

    No page icons: a Material icon becomes the tab's favicon, which the browser fetches online,
    and emoji need a colour-emoji font that headless browsers often lack."""
    out = [
        st.Page("pages/data.py", title="Data", default=True),
        st.Page("pages/model.py", title="Model"),
        st.Page("pages/results.py", title="Results"),
        st.Page("pages/scaling.py", title="Scaling"),
    ]
    if (ROOT / "pages" / "plan.py").exists():
        out.append(st.Page("pages/plan.py", title="Plan"))
    if (ROOT / "pages" / "compare.py").exists():
        out.append(st.Page("pages/compare.py", title="Compare"))
    if (ROOT / "pages" / "groups.py").exists():
        out.append(st.Page("pages/groups.py", title="Groups"))
    out.append(st.Page("pages/export.py", title="Export"))
    return out


#: Pages drawn from the measurements alone: the session's first fit may follow them.
DRAWN_FROM_DATA = ("Data",)


def drawn_from_data(page) -> bool:
    """True for a page (of :func:`pages`) that needs no fitted model to be drawn.

    Outside a script run (a process-pool worker started by the forkserver re-runs app.py as its
    main module) the page has no title: False."""
    return getattr(page, "title", None) in DRAWN_FROM_DATA


def guard() -> None:
    """First line of every page: make sure the page runs through app.py (see the module docstring).

    app.py initialises the session before it runs a page, so a session without that mark was
    started by Streamlit running the page file directly."""
    if st.session_state.get("initialised"):
        return
    st.navigation(pages(), position="hidden")
    st.rerun()
