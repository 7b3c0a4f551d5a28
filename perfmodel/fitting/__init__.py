"""Fitting: the cost and its solvers (:mod:`~perfmodel.fitting.problem`), :class:`Model` with its DE
settings (:mod:`~perfmodel.fitting.model`), :class:`FitResult` as plain data
(:mod:`~perfmodel.fitting.result`) with its stored uncertainty evaluated (:mod:`~perfmodel.fitting.members`),
metrics and cross-validation (:mod:`~perfmodel.fitting.evaluate`), diagnostics and term categories.

Imports from the model language and data layers only; nothing here computes intervals (that is
:mod:`perfmodel.uncertainty`, above) or searches (:mod:`perfmodel.search`).
"""

from .evaluate import cross_validate, holdout, metrics
from .model import DEFAULT_LAM, SEARCH_DE, DESettings, Model, exact_settings
from .problem import Problem
from .result import FitResult

__all__ = [
    "Model",
    "DESettings",
    "FitResult",
    "Problem",
    "DEFAULT_LAM",
    "SEARCH_DE",
    "exact_settings",
    "cross_validate",
    "holdout",
    "metrics",
]
