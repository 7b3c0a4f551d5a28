"""The search's outcome: validated candidates, the selection among them, and its report.

:class:`Candidate` (one expression, validated and refitted), :class:`Selection` (the outcome of
:func:`perfmodel.search.auto_select`), the rules that order candidates (simplest first within noise,
the small-data rule that shows the paper's model when the validation is too small to choose) and
:func:`plausible`, the models an interval averages over.

Imports from the fitting layer and :mod:`perfmodel.search.pool` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..fitting.model import Model
from ..fitting.result import FitResult
from .pool import preset_specs


@dataclass
class Candidate:
    """One expression found by the search, validated and refitted on all data.

    ``cv`` and ``holdout`` are the metrics of :func:`cross_validate` and :func:`holdout`
    (MAPE etc., percent) with the search's DE settings; ``result`` is the refit on all data
    with the final settings (None for candidates that were only validated).
    """

    spec: str
    result: FitResult | None
    cv: dict
    holdout: dict
    score: float
    n_params: int
    se: float = 0.0
    bounds: dict = field(default_factory=dict)
    origin: str = "screened"  # "screened" (exponents fixed), "free exponents", "preset", "law" or "law: NAME"
    screen_score: float = float("nan")
    readability: int = 0  # readability cost, see readability_cost (0: library terms only)

    @property
    def scale_weight(self) -> float:
        """How much more each larger measured worker count weighed in its fit (1: every row alike)."""
        return self.result.scale_weight if self.result is not None else 1.0

    def model(self, **settings) -> Model:
        """A :class:`Model` of this expression (``settings`` override λ, loss, seed, DE ...)."""
        base = dict(self.result.settings) if self.result is not None else {}
        base = {k: v for k, v in base.items() if k not in ("terms", "preset", "bounds")}
        return Model(self.spec, bounds=self.bounds or None, **{**base, **settings})


@dataclass
class Selection:
    """The outcome of :func:`auto_select`.

    ``candidates``: within noise of the best score, simplest first (fewest parameters plus the
    readability cost, then that cost, then the score), at most ``n_best``, each refitted on all
    data; ``best`` is the first.
    ``evaluated``: every refined candidate by score. ``trace``: the screening steps.
    """

    candidates: list[Candidate]
    evaluated: list[Candidate]
    trace: list[dict]
    holdout_query: str | None
    k: int
    seed: int
    settings: dict
    pool: dict
    n_screened: int
    seconds: float
    workers: int
    stopped: bool = False
    noise: float = 0.0
    prior: str = ""  # why the paper's model is shown first without winning the validation (see module doc)
    #: {expression: why} of the candidates set aside because a term the data cannot see carries
    #: their prediction at the standard horizon (see :mod:`perfmodel.search.horizon`)
    set_aside: dict = field(default_factory=dict)
    #: why the first is first when the scaling laws were chosen between by the corpus's rule
    #: (:mod:`perfmodel.search.laws`); empty for the term search
    rule: str = ""
    #: {law: what it says} of the laws listed, in their order
    law_words: dict = field(default_factory=dict)

    @property
    def best(self) -> Candidate:
        if not self.candidates:
            raise PerfModelError("the automatic search found no usable model")
        return self.candidates[0]

    def explain(self) -> list[str]:
        """Why the first candidate is first, in plain words (one sentence each): the small-data rule,
        the choice of the simplest among candidates the data cannot tell apart, the candidates set aside."""
        out: list[str] = []
        if not self.candidates:
            return out
        first = self.candidates[0]
        if self.rule:
            return [
                f"#1 is {self.rule}. Each law is a formula you can read; the others are listed as alternatives, "
                "and where they predict otherwise beyond the measurements the warnings name them."
            ]
        if self.prior:
            out.append(
                f"Too few measurements for the validation to choose between the candidates ({self.prior}): "
                "#1 is the paper's model, listed first for that reason."
            )
        elif len(self.candidates) > 1:
            j, low = min(enumerate(self.candidates), key=lambda e: e[1].score)
            if low is first:
                out.append(
                    f"#1 predicts the runs it was not fitted on best (score {first.score:.2f}) and is also "
                    "the simplest listed."
                )
            else:
                out.append(
                    f"#1 is listed first although its score ({first.score:.2f}) is not the lowest "
                    f"({low.score:.2f}, #{j + 1}): every candidate listed predicts the runs it was not fitted "
                    f"on about equally well (within the score's noise, ±{self.noise:.2f}), and then the simplest "
                    f"is preferred: #1 has {_size(first)}, #{j + 1} has {_size(low)}."
                )
        if self.set_aside:
            out.append(
                f"{len(self.set_aside)} candidate(s) were set aside before the choice: a term the "
                "measurements hardly see would carry most of their prediction at larger scales."
            )
        return out

    def table(self):
        """The refined candidates as a DataFrame (one row each, best score first)."""
        import pandas as pd

        chosen = {c.spec for c in self.candidates}
        rows = []
        for c in self.evaluated:
            rows.append(
                {
                    "expression": c.spec,
                    "n_params": c.n_params,
                    "readability": c.readability,
                    "score": c.score,
                    "se": c.se,
                    "cv_mape": c.cv.get("mape", float("nan")),
                    "holdout_mape": c.holdout.get("mape", float("nan")),
                    "origin": c.origin,
                    "within_noise": c.spec in chosen or c.score <= self.evaluated[0].score + self.noise
                    if self.evaluated
                    else False,
                    "chosen": c.spec in chosen,
                }
            )
        return pd.DataFrame(rows)

    def report(self) -> str:
        """A sectioned text report: what was searched, the candidates, the best model."""
        s = self.settings
        if self.rule:
            return self._law_report()
        lines = [
            "[[Automatic term selection]]",
            f"    term pool: {self.pool.get('total', 0)} terms ({self.pool.get('library', 0)} library, "
            f"{self.pool.get('pmnf', 0)} PMNF blocks, {self.pool.get('interaction', 0)} interactions)",
            f"    screened {self.n_screened} term sets by exact least squares (beam {s.get('beam')}, "
            f"up to {s.get('max_terms')} terms); refined {len(self.evaluated)} by differential evolution",
            f"    validation: {self.k}-fold CV (seed {self.seed})"
            + (
                f" + hold-out of the largest scale ({self.holdout_query})"
                if self.holdout_query
                else " (no largest-scale hold-out: no factor p or N with >= 3 values)"
            ),
            "    score = "
            + ("½·CV MAPE + ½·hold-out MAPE" if self.holdout_query else "CV MAPE")
            + f"; within noise: score <= best + {self.noise:.3g}",
            f"    loss: {s.get('loss')}; lambda: {s.get('lam'):g}; {self.seconds:.1f} s on "
            f"{self.workers} process(es)" + ("; STOPPED early" if self.stopped else ""),
        ]
        if self.prior:
            lines.append(f"    note: {self.prior}")
        for spec, why in list(self.set_aside.items())[:5]:
            lines.append(f"    set aside: {spec}: {why}")
        if len(self.set_aside) > 5:
            lines.append(f"    set aside: {len(self.set_aside) - 5} more for the same reason")
        lines.append(
            "[[Candidates]]  (simplest first among those within noise of the best: parameters + readability cost)"
        )
        lines.append(f"    {'#':>2} {'params':>6} {'score':>8} {'CV MAPE':>8} {'hold-out':>8}  expression")
        for i, c in enumerate(self.candidates, 1):
            lines.append(
                f"    {i:>2} {c.n_params:>6} {c.score:>8.3f} {c.cv.get('mape', float('nan')):>8.3f} "
                f"{c.holdout.get('mape', float('nan')):>8.3f}  {c.spec}"
            )
        others = [c for c in self.evaluated if c.spec not in {d.spec for d in self.candidates}]
        if others:
            lines.append("[[Other refined candidates]]")
            for c in others[:8]:
                lines.append(
                    f"       {c.n_params:>6} {c.score:>8.3f} {c.cv.get('mape', float('nan')):>8.3f} "
                    f"{c.holdout.get('mape', float('nan')):>8.3f}  {c.spec}"
                )
        if self.candidates and self.best.result is not None:
            lines.append("[[Best model]]")
            lines += ["    " + line for line in self.best.result.report().splitlines()]
        return "\n".join(lines)

    def _law_report(self) -> str:
        lines = [
            "[[Scaling laws]]",
            f"    chosen: {self.rule}",
            f"    {len(self.candidates)} laws fitted on all data ({self.seconds:.1f} s); corpus error: the median "
            "error of the law's extrapolations of the corpus's series in this cell; hold-out: its error at "
            + (f"{self.holdout_query} when fitted without it" if self.holdout_query else "the largest scale (none)"),
            f"    {'#':>2} {'law':<14} {'corpus err %':>12} {'hold-out %':>10}  expression",
        ]
        for i, c in enumerate(self.candidates, 1):
            lines.append(
                f"    {i:>2} {c.origin[5:]:<14} {c.score:>12.2f} {c.holdout.get('mape', float('nan')):>10.3f}  {c.spec}"
            )
        for name, words in self.law_words.items():
            lines.append(f"    {name}: {words}")
        if self.candidates and self.best.result is not None:
            lines.append("[[Best model]]")
            lines += ["    " + line for line in self.best.result.report().splitlines()]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "rule": self.rule,
            "law_words": dict(self.law_words),
            "candidates": [_cand_dict(c) for c in self.candidates],
            "evaluated": [_cand_dict(c, with_result=False) for c in self.evaluated],
            "trace": self.trace,
            "holdout_query": self.holdout_query,
            "k": self.k,
            "seed": self.seed,
            "settings": self.settings,
            "pool": self.pool,
            "n_screened": self.n_screened,
            "seconds": self.seconds,
            "workers": self.workers,
            "stopped": self.stopped,
            "noise": self.noise,
            "prior": self.prior,
            "set_aside": dict(self.set_aside),
        }


def _cand_dict(c: Candidate, with_result: bool = True) -> dict:
    d = {
        "spec": c.spec,
        "bounds": {k: list(v) for k, v in c.bounds.items()},
        "cv": c.cv,
        "holdout": c.holdout,
        "score": c.score,
        "se": c.se,
        "n_params": c.n_params,
        "origin": c.origin,
        "readability": c.readability,
    }
    if with_result and c.result is not None:
        d["result"] = c.result.to_dict()
    return d


def _size(c: Candidate) -> str:
    """A candidate's size in words: ``2 fitted parameters (constants and exponents)``, with its
    hard-to-read terms (the readability cost) when it has any."""
    text = f"{c.n_params} fitted parameter{'s' if c.n_params != 1 else ''} (constants and exponents)"
    return text + (
        f" and a readability cost of {c.readability} (terms that are products or powers of factors)"
        if c.readability
        else ""
    )


def simplest_first(c: Candidate) -> tuple:
    """Order among candidates within noise of the best: fitted parameters plus readability cost,
    then the readability cost, then the score."""
    return (c.n_params + c.readability, c.readability, c.score)


#: Fewest configurations the hold-out split must train on for the validation to choose the model
#: (a constant and one scaling term fit 2 configurations exactly; see the module doc).
MIN_VALIDATION_CONFIGURATIONS = 3


PRIOR_NOTE = (
    "the validation trains on {n} configuration(s), too few to choose between structures; the paper's "
    "generic data-parallel model is shown first, the validated candidates after it"
)


def validation_configurations(meas: Measurements, splits) -> int:
    """Configurations the hold-out split trains on (without a hold-out: the smallest fold's)."""
    cfg = meas.configurations()
    held = [tr for name, tr, te in splits if name.startswith("hold-out")]
    trains = held or [tr for name, tr, te in splits if name != "all"]
    return min(len(np.unique(cfg[tr])) for tr in trains)


def structural_prior(meas: Measurements, n_validation: int, evaluated: list[Candidate]) -> Candidate | None:
    """The data-parallel preset's candidate when the validation, training on ``n_validation``
    configurations, is too small to choose (else None)."""
    if n_validation >= MIN_VALIDATION_CONFIGURATIONS:
        return None
    specs = preset_specs(meas, names=("data-parallel",))
    if not specs:
        return None
    return next((c for c in evaluated if c.origin == "preset" and c.spec == specs[0][0]), None)


#: A candidate of library terms alone is within noise of the best up to this many times the noise
#: (two standard errors instead of one; see the module doc, *Score*).
READABLE_BAND = 1.0


def plausible(selection: Selection, shown: Candidate | None = None) -> tuple[FitResult, list[FitResult], dict]:
    """The displayed model of ``selection`` (``shown``, one of its candidates; default the best), the
    other plausible ones (its other candidates within noise of the best score) and the keyword
    arguments :func:`perfmodel.compute_intervals` needs for model averaging:
    ``candidates``, their validation ``scores`` (the displayed model's first), the score noise
    ``noise_scale``. When the validation was too small to choose (``selection.prior``),
    the paper's model shown first counts as plausible as the best validated one (its score is no
    evidence), so the intervals weigh them alike; the shown model still predicts. (Letting their
    ensemble predict instead was measured on the 61 short real series with 3 GPU counts: median error
    4.1 % against 3.5 %, 3 series above 20 % against 6.)"""
    shown = selection.best if shown is None else shown
    if selection.rule and shown.result is not None:  # the laws: the others are the structures' evidence
        return shown.result, [], {"candidates": None, "scores": None, "noise_scale": float(selection.noise)}
    others = [c for c in selection.candidates if c is not shown and c.result is not None]
    score = {id(c): c.score for c in selection.candidates}
    if selection.prior:
        score[id(selection.best)] = min(score.values())
    scores = [score[id(shown)]] + [score[id(c)] for c in others]
    results = [c.result for c in others if c.result is not None]  # every one of them: others have results
    kwargs = {
        "candidates": results or None,
        "scores": scores if others else None,
        "noise_scale": float(selection.noise),
    }
    assert shown.result is not None  # the shown candidate was refitted on all the data
    return shown.result, results, kwargs
