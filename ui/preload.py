"""Start loading the browser's Plotly bundle with the page's first message, not with its first chart.

Streamlit fetches its Plotly component (plotly.js, 4.7 MB) only when a page sends its first chart,
and the browser then spends about a second fetching, compiling and running it before any chart is
drawn. :func:`plotly` sends, first of all, a hidden element whose script imports that very module,
so the browser loads it while the server is still fitting and drawing the page; when the first
chart arrives, Streamlit's own import of the same URL finds the module ready (one module per URL).
The module's hashed name is read from the installed Streamlit; without one nothing is sent.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import streamlit as st

KEY = "plotly_preload"
#: Hides the element with its layout wrapper, which would otherwise take a flex gap above the title.
_HIDE = '<style>[data-testid="stLayoutWrapper"]:has(> .st-key-{key}) {{display: none}}</style>'
#: Imports the chunk by the URL Streamlit's own import resolves: its name beside Streamlit's main script.
_IMPORT = (
    '<script type="module">'
    "const main = document.querySelector('script[type=module][src*=\"/static/js/\"]');"
    "if (main) import(new URL('{name}', main.src).href).catch(() => {{}});"
    "</script>"
)


@lru_cache(maxsize=1)
def _chunk() -> str | None:
    """The file name of Streamlit's Plotly component chunk, or None (another Streamlit layout)."""
    js = Path(st.__file__).resolve().parent / "static" / "static" / "js"
    found = sorted(js.glob("PlotlyChart.*.js"))
    return found[0].name if len(found) == 1 else None


def plotly() -> None:
    """Send the hidden import of Streamlit's Plotly chunk (once per page load; a no-op after)."""
    name = _chunk()
    if name is None:
        return
    with st.container(key=KEY):
        st.html(_HIDE.format(key=KEY) + _IMPORT.format(name=name), unsafe_allow_javascript=True)
