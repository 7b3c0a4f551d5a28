"""perfmodel: interpretable execution-time models of distributed deep-learning jobs.

Fit ``T = Σ c_k·term_k(p, N, b, ...)`` to measured run times by minimising a regularised
cost with differential evolution (Kavarakuntla et al., IEEE Access 2024), then predict,
decompose and plot.

>>> import perfmodel
>>> r = perfmodel.Model("1 + N/p + log2(p)", lam=0.01).fit(df, time="time_s",
...                                                      factors={"p": "gpus", "N": "samples"})
>>> r.predict(df2), r.contributions(df2), r.to_json()
"""

__version__ = "0.1.0"

from .data import Measurements, read_csv, read_extrap, read_table  # noqa: E402
from .errors import PerfModelError  # noqa: E402
from .evaluate import cross_validate, holdout, metrics  # noqa: E402
from .expression import parse_expression  # noqa: E402
from .fit import Model  # noqa: E402
from .groups import fit_groups  # noqa: E402
from .result import FitResult  # noqa: E402
from .terms import PRESETS, library, preset_spec  # noqa: E402


def fit(data, terms=None, *, time=None, factors=None, **kwargs) -> FitResult:
    """Shortcut: ``Model(terms, **kwargs).fit(data, time, factors)``."""
    return Model(terms, **kwargs).fit(data, time, factors)


def predict(result: FitResult, data):
    """Shortcut for ``result.predict(data)``."""
    return result.predict(data)


def contributions(result: FitResult, data):
    """Shortcut for ``result.contributions(data)``."""
    return result.contributions(data)


__all__ = ["Measurements", "Model", "FitResult", "PerfModelError", "fit", "predict", "contributions",
           "read_csv", "read_extrap", "read_table", "metrics", "cross_validate", "holdout",
           "parse_expression", "library", "preset_spec", "PRESETS", "fit_groups"]
