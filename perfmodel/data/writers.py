"""Writing tables as CSV the way a person reads them: a column whose numbers are all whole is
written as integers (``32``, ``1281167``), not as ``32.0`` or ``1.28117e+06``.

A float column comes out of pandas as ``32.0`` even when it holds GPU counts (a grid parsed as
floats, a column with a missing value); ``sweep --plan`` would then pass ``--gpus 32.0`` to the
job. Every CSV the product writes goes through :func:`to_csv`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Whole numbers beyond this are not exact in a float; such columns stay floats.
_EXACT = 2.0 ** 53


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


def to_csv(frame: pd.DataFrame, path=None, **kwargs) -> str | None:
    """``frame.to_csv(path, index=False, **kwargs)`` with whole-number columns as integers;
    returns the text when ``path`` is None (pandas' own convention)."""
    kwargs.setdefault("index", False)
    return integers_as_integers(frame).to_csv(path, **kwargs)
