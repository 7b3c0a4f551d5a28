"""Reference structures: the models any series is compared with, fitted beside the user's.

An interval must include the structures the data cannot rule out. Beside the search's plausible
candidates (the members), every fit carries the point fits of four fixed structures on
the same measurements: ``data-parallel`` (start-up + compute + tree all-reduce + per-worker cost),
``ernest`` (Venkataraman et al. 2016: θ0 + θ1·N/p + θ2·log p + θ3·p, and a linear term for each other
factor that varies), ``pollux`` (Qiao et al. 2021: compute and synchronisation with their overlap)
and ``power-law`` (the empirical scaling law T = c·p^a·x^b… over the varying factors, a straight line
on log-log axes: what a spreadsheet's trend line extrapolates). Where they and the point prediction disagree beyond
the measured range, the interval widens towards them by the prior's ``structure_scale`` (learned
from the corpus, ``scripts/learn_prior.py``): see
:meth:`perfmodel.fitting.members.Uncertainty.structures`.

Imports from the data and fitting layers only.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..fitting.members import Member
from ..fitting.model import Model, exact_settings
from ..language.terms import NODES, preset_spec

#: The reference structures (presets of :data:`perfmodel.language.terms.PRESETS`), fitted as
#: ``perfmodel fit --preset NAME`` fits them (a linear one by its exact solution, the same fit in one
#: generation).
REFERENCE_PRESETS = ("data-parallel", "ernest", "pollux", "power-law")


def point_member(result, label: str) -> Member:
    """``result``'s point fit as a :class:`Member` of weight 0 with one replicate, the point itself."""
    expr = result._expression()
    c = np.array(list(result.coefficients.values()), float)
    theta = result._theta(expr)
    return Member(
        expression=result.expression,
        param_bounds=dict(result.param_bounds),
        factors=list(result.factors),
        weight=0.0,
        point_coefficients=c,
        point_params=theta,
        coefficients=c[None, :],
        params=theta[None, :],
        label=label,
    )


def ernest_spec(meas: Measurements) -> str:
    """Ernest's terms (the ``ernest`` preset) and a linear term for each other factor that varies (the
    batch size, say): a structure for the whole of the data, as the corpus's prior was learned with."""
    symbols = [s for s in meas.factors if s != NODES]
    vary = meas.scaling_factors()
    positive = [s for s in symbols if meas.values(s).min() >= 1]
    spec = preset_spec("ernest", symbols, positive, vary, env=meas.env())
    have = {t.strip() for t in spec.split("+")}
    return " + ".join([spec] + [x for x in symbols if x not in ("p", "N") and x in vary and x not in have])


def topology_free(meas: Measurements) -> Measurements:
    """``meas`` without the topology symbol ``nodes`` among its factors (the column stays): what a
    structure without an inter-node term is fitted on."""
    if NODES not in meas.factors:
        return meas
    factors = {k: v for k, v in meas.factors.items() if k != NODES}
    return Measurements(meas.frame, meas.time, factors, list(meas.dropped), meas.name)


def power_law_spec(meas: Measurements) -> str:
    """One term, a product of a free power of each varying factor with positive values (``p^e1`` at
    least): ``c·p^e1·B^e2``, a straight line in log-log coordinates. The topology (``nodes``) is never
    one of them."""
    vary = meas.scaling_factors()
    others = [s for s in meas.factors if s not in ("p", NODES) and s in vary and meas.values(s).min() > 0]
    symbols = ["p"] + [s for s in others if not _moves_with_p(meas, s)]
    return "*".join(f"{s}^e{i + 1}" for i, s in enumerate(symbols))


#: |correlation| of log s with log p over the configurations above which s moved with p (a global batch
#: grown with the workers): its exponent and p's cannot be told apart, and a target that moves one without
#: the other would be read off a direction never measured (MLPerf's ResNet on TPU v3: B = 256·p to 128 chips
#: then held; the two exponents fitted along B ∝ p put the time at 512 chips 20× too high)
COLLINEAR = 0.99


def _moves_with_p(meas: Measurements, symbol: str) -> bool:
    """True when ``symbol``'s log moved with log p over the measured configurations (|r| >= COLLINEAR)."""
    if "p" not in meas.factors:
        return False
    first = np.unique(meas.configurations(), return_index=True)[1]
    lp, ls = np.log(meas.values("p")[first]), np.log(meas.values(symbol)[first])
    if np.ptp(lp) == 0 or np.ptp(ls) == 0:
        return False
    with np.errstate(all="ignore"):
        r = np.corrcoef(lp, ls)[0, 1]
    return bool(np.isfinite(r) and abs(r) >= COLLINEAR)


def _reference_model(name: str, meas: Measurements, seed: int) -> Model:
    """The structure ``name`` as a Model (fitted on :func:`topology_free` data but for Pollux's)."""
    if name == "ernest":
        return Model(terms=ernest_spec(meas), seed=seed)
    if name == "power-law":
        return Model(terms=power_law_spec(meas), seed=seed)
    return Model(preset=name, seed=seed)


def reference_members(meas: Measurements, seed: int = 0, presets=REFERENCE_PRESETS) -> list[Member]:
    """Point fits of the reference structures on ``meas`` (a structure that cannot be fitted on these
    factors, or whose fit is not finite, is left out); none without a ``p`` factor (workers), which the
    structures scale with."""
    out: list[Member] = []
    if "p" not in meas.factors:
        return out
    for name in presets:
        try:  # a reference's numerical warnings are not the user's fit's: a structure that fails is left out
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                model = _reference_model(name, meas, seed)
                res = model.clone(**exact_settings(model, meas)).fit(meas)  # a linear structure: solved exactly
        except PerfModelError:
            continue
        m = point_member(res, name)
        if np.isfinite(m.point_coefficients).all() and np.isfinite(m.point_params).all():
            out.append(m)
    return out
