"""Every CSV the product writes, written the way a spreadsheet and a person read it.

* **Integers as integers**: a column whose numbers are all whole is written as integers (``32``,
  ``1281167``), not as ``32.0`` or ``1.28117e+06`` (a float column comes out of pandas as ``32.0`` even
  when it holds GPU counts: a grid parsed as floats, a column with a missing value; ``sweep --plan``
  would then pass ``--gpus 32.0`` to the job).
* **Formulas made inert**: every CSV the product writes from user text (``predict --out``, ``advise --out``, ``plan --out``,
``fit --group-by``'s ``summary.csv``, the sweep file, the app's downloads) goes through
:func:`to_csv` (or :func:`safe_cell` per cell): a text cell, or a column name, that begins with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading apostrophe (``=HYPERLINK(…)``
-> ``'=HYPERLINK(…)``), so Excel, LibreOffice and Google Sheets show it as text. Numbers stay numbers
(``-2.5``, ``+1e3``). The apostrophe is reversible: :func:`read_cell` gives the original back, so a
sweep resumed from its own file sees the values it wrote (a text that itself begins with apostrophes
before such a character gets one more, and loses one when read).

The lowest layer: imports nothing from perfmodel.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: First characters that make a spreadsheet read a cell as a formula (or a DDE command).
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def safe_cell(value):
    """``value`` as a spreadsheet shows it without running it: text beginning with a trigger (after
    any apostrophes) gets a leading ``'``; numbers and other values are returned unchanged."""
    if not isinstance(value, str) or not value.lstrip("'").startswith(TRIGGERS) or _is_number(value):
        return value
    return "'" + value


def read_cell(value):
    """The value :func:`safe_cell` was given (one leading apostrophe removed where it added one)."""
    if isinstance(value, str) and value.startswith("'") and value.lstrip("'").startswith(TRIGGERS):
        return value[1:]
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with :func:`safe_cell` applied to its column names and text cells."""
    out = frame.copy()
    out.columns = [safe_cell(c) for c in out.columns]
    for k in range(out.shape[1]):
        column = out.iloc[:, k]
        if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            out.isetitem(k, column.map(safe_cell))  # type: ignore[arg-type]  # a Series: pandas takes it, its stubs omit it
    return out


#: Whole numbers beyond this are not exact in a float; such columns stay floats.
_EXACT = 2.0**53


def integers_as_integers(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` in which every float column whose finite values are all whole numbers
    (and missing values, written as empty cells) has a nullable integer dtype."""
    out = frame.copy()
    for col in out.columns:
        values = out[col]
        if not pd.api.types.is_float_dtype(values.dtype):
            continue
        v = values.to_numpy(dtype=float)
        finite = v[np.isfinite(v)]
        if np.isinf(v).any() or finite.size == 0 or np.abs(finite).max() >= _EXACT:
            continue
        if np.array_equal(finite, np.round(finite)):
            out[col] = values.round().astype("Int64")
    return out


def to_csv(frame: pd.DataFrame, path=None, **kwargs):
    """``frame.to_csv(path, index=False, **kwargs)`` with whole-number columns as integers and formula
    cells neutralised (see the module's docstring); returns the text when ``path`` is None."""
    kwargs.setdefault("index", False)
    return safe_frame(integers_as_integers(frame)).to_csv(path, **kwargs)
