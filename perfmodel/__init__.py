"""perfmodel: interpretable execution-time models of distributed deep-learning jobs.

Fit ``T = Σ c_k·term_k(p, N, b, ...)`` to measured run times by minimising a regularised
cost with differential evolution (Kavarakuntla et al., IEEE Access 2024), then predict,
decompose and plot.

>>> import perfmodel
>>> r = perfmodel.Model("1 + N/p + log2(p)", lam=0.01).fit(df, time="time_s",
...                                                      factors={"p": "gpus", "N": "samples"})
>>> r.predict(df2), r.contributions(df2), r.to_json()

The package is layered, each layer importing only from those below it (docs/architecture.md):
``language`` (expressions, terms, presets, overlap) < ``data`` (readers, Measurements, datasets,
schema) < ``fitting`` (cost, DE, FitResult, evaluating stored intervals) < ``uncertainty`` (bootstrap members,
calibration) < ``search`` (automatic term selection, λ path) < ``compare``, ``groups``,
``advise``, ``sweep`` (uses of models) < ``plots``, ``report`` (presentation) < ``cli``;
``parallel`` (the one executor) and ``errors`` serve all of them.
"""

from .data.measurements import Measurements
from .data.readers import read_csv, read_extrap, read_table
from .errors import PerfModelError
from .fitting import FitResult, Model, cross_validate, holdout, metrics
from .groups import fit_groups
from .language import PRESETS, library, parse_expression, preset_spec
from .plan import plan
from .uncertainty import compute_intervals
from .version import __version__


def fit(data, terms=None, *, time=None, factors=None, **kwargs) -> FitResult:
    """Shortcut: ``Model(terms, **kwargs).fit(data, time, factors)``."""
    return Model(terms, **kwargs).fit(data, time, factors)


def predict(result: FitResult, data):
    """Shortcut for ``result.predict(data)``."""
    return result.predict(data)


def contributions(result: FitResult, data):
    """Shortcut for ``result.contributions(data)``."""
    return result.contributions(data)


__all__ = [
    "Measurements",
    "Model",
    "FitResult",
    "PerfModelError",
    "fit",
    "predict",
    "contributions",
    "read_csv",
    "read_extrap",
    "read_table",
    "metrics",
    "cross_validate",
    "holdout",
    "parse_expression",
    "library",
    "preset_spec",
    "PRESETS",
    "fit_groups",
    "compute_intervals",
    "plan",
    "__version__",
]
