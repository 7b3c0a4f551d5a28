"""Prediction intervals: bootstrap replicates, plausible models, and calibration on extrapolation.

A fitted model carries its uncertainty as plain data (``FitResult.uncertainty``), so intervals
come from the model file alone:

* **members**: parameter vectors of one or more expressions, each with a weight. For a user's
  terms there is one member, the model itself; for ``--auto`` the plausible candidates (within
  noise of the best validation score), weighted by ``exp(-(score - best) / noise)``. Each member
  holds ``replicates`` refits on bootstrap resamples of the measurements.
* **the bootstrap** (noise): a *cluster wild bootstrap* (Cameron, Gelbach & Miller 2008) with
  Webb's six-point weights: the relative residual of each configuration (the mean of its repeats
  against the fit), inflated by ``sqrt(G / (G - P))`` for the ``P`` fitted parameters, is flipped
  and scaled by one random weight per configuration, so repeats stay together and the design
  (the configurations the user chose to measure) is kept. Where there are no residual degrees of
  freedom (as many or more fitted parameters than configurations, which λ > 0 allows) the
  configuration means are perturbed by the noise level instead (below). Every replicate is refitted
  by projected Levenberg-Marquardt warm-started from the fit, all replicates at once (arrays of
  shape replicates × parameters), with the fit's own cost (loss + λ·penalty) and bounds.
* **noise** of a new measurement: ``sigma``, the RMS of the inflated relative residuals with
  ``df = G - P`` degrees of freedom (Student-t quantiles, so two degrees of freedom give wide
  intervals); without residual degrees of freedom, the pooled spread of the repeats, and without
  repeats either, a stated prior (:data:`PRIOR_SIGMA`).
* **calibration on extrapolation** (split-conformal style): on "train on the smaller scales, test
  on the larger" splits of the measurements themselves, the model is refitted (with its bootstrap)
  on the smaller scales and asked for the larger ones. Each held-out configuration gives its log
  error ``e``, the spread ``b`` of its un-widened band and its distance ``d`` beyond the training
  range in doublings. Extrapolation adds an error of spread ``κ·d``: with enough points for a
  conformal quantile (9 at the 90 % level) ``κ`` is the conformal quantile of the ``κ`` each point
  needs to be covered; with fewer, the moment estimate
  ``κ² = (κ0² + Σ max(e² − b², 0) / d²) / (1 + n)``, shrunk towards the stated prior ``κ0``
  (:data:`PRIOR_KAPPA`) by one pseudo-point. So intervals grow with the distance from what was
  measured, by as much as the data's own extrapolation errors say.

An interval at ``x`` (level ``1 - α``), in log units around the point prediction ``t``:
``low = t·exp(-sqrt(hl² + q² + (z·κ·d)²))``, ``high = t·exp(sqrt(hu² + q² + (z·κ·d)²))``, where
``hl, hu`` are the distances from ``log t`` to the members' weighted α/2 and 1 - α/2 quantiles, ``q``
the noise quantile, ``z`` the normal quantile of the level and ``d`` the distance beyond the measured
range in doublings (0 inside it).

Where it lives: :mod:`~perfmodel.uncertainty.bootstrap` (replicates of one fit),
:mod:`~perfmodel.uncertainty.calibration` (members of every plausible model, the "train small,
test large" calibration) and :func:`compute_intervals` here. What they compute is plain data,
:class:`perfmodel.fitting.members.Uncertainty`, stored in the FitResult and evaluated there. This
layer imports from the data, fitting and search layers, never from the uses of models or presentation.
"""

from __future__ import annotations

from ..data import Measurements
from ..errors import PerfModelError
from ..fitting.members import DEFAULT_LEVEL, DEFAULT_REPLICATES, Uncertainty, distance, normal_quantile
from .bootstrap import bootstrap
from .calibration import compute, extrapolation_splits, refit_model, scale_axis, submodels
from .prior import load_prior, topology


def compute_intervals(
    result,
    data,
    *,
    candidates: list | None = None,
    scores: list | None = None,
    noise_scale: float | None = None,
    replicates: int | None = None,
    calibrate: bool = True,
    prior: dict | bool = True,
    gpus_per_node: float | None = None,
    references: bool = True,
):
    """Fill ``result.uncertainty`` from ``data`` (the measurements it was fitted on); returns ``result``.

    ``candidates``, ``scores``, ``noise_scale``: other plausible fits with validation scores (this
    fit's first), as the automatic search gives them (:func:`perfmodel.search.plausible`); see
    :func:`compute` (also for ``prior`` and ``gpus_per_node``).
    """
    if not isinstance(data, Measurements):
        raise PerfModelError("compute_intervals needs the Measurements the model was fitted on")
    unc = compute(
        result,
        data,
        candidates=candidates,
        scores=scores,
        noise_scale=noise_scale,
        replicates=replicates or DEFAULT_REPLICATES,
        calibrate=calibrate,
        prior=prior,
        gpus_per_node=gpus_per_node,
        references=references,
    )
    return result.attach_uncertainty(unc)


__all__ = [
    "compute_intervals",
    "compute",
    "load_prior",
    "topology",
    "bootstrap",
    "extrapolation_splits",
    "scale_axis",
    "submodels",
    "refit_model",
    "Uncertainty",
    "DEFAULT_LEVEL",
    "DEFAULT_REPLICATES",
    "distance",
    "normal_quantile",
]
