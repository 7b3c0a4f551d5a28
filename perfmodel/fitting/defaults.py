"""The model proposed for new data when the user names none: the app's first fit and ``perfmodel fit``
without ``--terms``, ``--preset`` or ``--auto`` both take it from :func:`default_spec`, so the two start
from the same model.

It is the paper's ``data-parallel`` preset (logs of positive values only) from 3 configurations on, even
with more parameters than configurations: the default λ > 0 regularises it, and with so few
measurements its structure predicts larger runs better than any sum the data could choose (see
:mod:`perfmodel.search`, *Too few configurations*). Otherwise the simpler sums ``1 + x + y`` and
``1 + x``, when the data has enough configurations for them, else the constant ``1``.
"""

from __future__ import annotations

from ..errors import PerfModelError
from ..language import PRESETS, parse_expression, preset_bounds, preset_spec
from ..language.expression import DEFAULT_PARAM_BOUNDS

#: The preset proposed for new data.
DEFAULT_PRESET = "data-parallel"


def default_bounds_for(param: str, symbols) -> tuple[float, float]:
    """Bounds of a free exponent: the presets' defaults for their names, else the core's [-3, 3]."""
    for preset in PRESETS:
        b = preset_bounds(preset, list(symbols))
        if param in b:
            return float(b[param][0]), float(b[param][1])
    return float(DEFAULT_PARAM_BOUNDS[0]), float(DEFAULT_PARAM_BOUNDS[1])


def _params(spec: str, symbols) -> list[str]:
    try:
        return list(parse_expression(spec, list(symbols))[0].params)
    except PerfModelError:
        return []


def positive_symbols(meas) -> list[str]:
    """The factors whose values are all >= 1 (log2 of them is defined and non-negative)."""
    return [s for s in meas.factors if meas.values(s).min() >= 1]


def default_spec(meas) -> str:
    """The terms proposed for the :class:`~perfmodel.data.measurements.Measurements` ``meas`` (module doc)."""
    syms = list(meas.factors)
    candidates = [
        preset_spec(DEFAULT_PRESET, syms, positive_symbols(meas), meas.scaling_factors()),
        " + ".join(["1", *[s for s in syms if s in meas.scaling_factors()]]),
        f"1 + {syms[0]}" if syms else "1",
    ]
    for i, spec in enumerate(candidates):
        try:
            expr, _ = parse_expression(spec, syms, {p: default_bounds_for(p, syms) for p in _params(spec, syms)})
            expr.check_domain(meas.env(), meas.rows)
        except PerfModelError:
            continue
        if (i == 0 and meas.n_configurations >= 3) or len(expr.terms) + len(expr.params) <= meas.n_configurations:
            return spec
    return "1"


def default_bounds(spec: str, symbols) -> dict[str, tuple[float, float]]:
    """{free parameter: bounds} of ``spec`` as :func:`default_spec` proposes it."""
    return {p: default_bounds_for(p, symbols) for p in _params(spec, symbols)}


def default_model(meas) -> tuple[str, dict[str, tuple[float, float]]]:
    """(:func:`default_spec` of ``meas``, the bounds of its free parameters)."""
    spec = default_spec(meas)
    return spec, default_bounds(spec, meas.factors)
