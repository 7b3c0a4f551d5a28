"""The Results page's table of fitted constants and exponents, with their units, shares and intervals."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from perfmodel.report import constants_table

SHARE_INTERVAL = "share, 90 %"

COLUMNS = {
    # widths in pixels, narrow where the text is short or has a tooltip, so that every column of a fit with
    # bounds and share intervals fits the default width (about 940 px beside the sidebar at 1400 px)
    "name": st.column_config.TextColumn("name", width=45, help="c_k multiplies term k; other names are exponents"),
    "term": st.column_config.TextColumn("term", width=100, help="The term with the fitted exponents"),
    "meaning": st.column_config.TextColumn(
        "meaning",
        width=115,  # a long one would push the numbers out
        help="Plain-word name of a library term",
    ),
    "category": st.column_config.TextColumn("category", width=100, help="start-up, compute or communication"),
    "overlapped with": st.column_config.TextColumn(
        "overlapped with",
        help="The terms on the other side of the term's overlap: the time the two sides "
        "run at once is counted once (see the overlap γ)",
    ),
    # numbers written by fmt_value (no format here: a column format would override it), wide enough for
    # "-1.234e-05"
    "value": st.column_config.NumberColumn("value", width=80, help="Fitted value"),
    "low": st.column_config.NumberColumn(
        "90 % low", width=80, help="Lower end of the 90 % interval (bootstrap over configurations)"
    ),
    "high": st.column_config.NumberColumn("90 % high", width=80, help="Upper end of the 90 % interval"),
    "unit": st.column_config.TextColumn("unit", width=90, help="Seconds per unit of the term"),
    "share (%)": st.column_config.ProgressColumn(
        "share of time",
        width=90,
        min_value=0.0,
        max_value=100.0,
        format="%.1f %%",
        help="The term's share of the total predicted time over the measured runs",
    ),
    SHARE_INTERVAL: st.column_config.TextColumn(SHARE_INTERVAL, width=95, help="The 90 % interval of the term's share"),
    "bounds": st.column_config.TextColumn("bounds", width=60, help="Search bounds of an exponent"),
}


def frame(res) -> pd.DataFrame:
    """:func:`perfmodel.report.constants_table` as shown: the share's interval in one text column
    ("12.3–15.0 %"), blank for an exponent (a number column would show "None" there)."""
    table = constants_table(res)
    if "share low (%)" in table:
        spans = [
            f"{lo:.1f}–{hi:.1f} %" if not (math.isnan(lo) or math.isnan(hi)) else ""
            for lo, hi in zip(table.pop("share low (%)"), table.pop("share high (%)"), strict=True)
        ]
        table.insert(table.columns.get_loc("share (%)") + 1, SHARE_INTERVAL, spans)
    return table


#: The columns of numbers written by :func:`fmt_value`.
NUMBERS = ("value", "low", "high")


def fmt_value(v: float) -> str:
    """A constant as the table writes it: 4 significant digits, in powers of ten when small or large
    (``5.875e-06``, ``1.16e+08``, ``0.01125``, ``2474``), as the Groups page writes its constants.

    The column's own ``%.4g`` did not: Streamlit's grid writes a ``%g`` number in JavaScript's plain
    notation, ``0.000005875`` (clipped to ``.00005875`` in its column) and ``116000000``."""
    return "" if v is None or math.isnan(v) else f"{v:.4g}"


def show(res) -> None:
    table = frame(res)
    styled = table.style.format({c: fmt_value for c in NUMBERS if c in table.columns})
    st.dataframe(styled, hide_index=True, width="stretch", column_config=COLUMNS)
