"""User text shown by Streamlit elements that render Markdown."""

from __future__ import annotations

import re

#: Characters Markdown (and Streamlit's own :colour[...] / :material/...: / $LaTeX$ syntax) gives a meaning.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$=^&])")


def md(text) -> str:
    """User text (column names, cell values, terms, file names) made inert for ``st.markdown`` and
    every other element that renders Markdown: each special character is backslash-escaped, so
    ``I*b^0.9 + I*log2(p)`` keeps its asterisks and ``[x](javascript:…)`` stays text."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")
