"""The laws people fit to scaling data, as formulas of the term language, and the corpus's rule among them.

A short series (two to four GPU counts, the common case) cannot choose its own terms: any model with a
constant and one scaling term fits two points exactly, and a search over many terms picks whatever
bends through the noise (``1/p + p^2.5`` on four configurations). What extrapolates is one of a few
laws whose shape is physics, each an interpretable formula here:

* ``power-law``: ``c·p^a`` (times a power of each other varying factor): a straight line on log-log
  axes, what a spreadsheet's trend line extrapolates; the efficiency falls by the same factor every
  doubling;
* ``weighted-power-law``: the same formula fitted with each larger measured worker count weighing
  :data:`WEIGHTED_SCALE` times the one before (``Model(scale_weight=...)``): the trend line that follows
  the largest scales, where the extrapolation starts;
* ``amdahl``: start-up + parallel work, ``c0 + c1·W`` (``W`` the work per worker: ``1/p``, or the
  iterations times the per-iteration compute where the batch or data size is mapped);
* ``usl``: the Universal Scalability Law (Gunther): parallel work, contention growing with the
  workers, coherency growing with their pairs: ``W + I·(p−1) + I·p·(p−1)`` per iteration ``I``;
* ``data-parallel``: the paper's model (start-up, per-iteration compute, tree all-reduce, per-worker
  cost; :data:`perfmodel.language.terms.PRESETS`);
* ``pollux``: Pollux's step time, compute overlapped with a synchronisation that appears with the
  second worker and, across machines, with the nodes (AdaptDL ``goodput.py``);
* ``ernest``: Ernest's ``θ0 + θ1·N/p + θ2·log p + θ3·p`` (and a linear term for each other factor that
  varies).

Which one a series gets is a *rule learned from the corpus* (``scripts/learn_prior.py``, leave one
source out; stored in the prior file as ``law_rule``): series are put in cells by the parallel
efficiency of their last measured doubling (ideal, well, partly, stopped) and by how many worker
counts were measured (two, or three and more), and each cell takes the law whose extrapolations of
the corpus's deep-learning series in that cell erred least (the median over splits); the weighted power
law only in the classes that still scaled (:data:`WEIGHTED_CLASSES`) and only where it beats the power
law by more than :data:`REFINEMENT_SE` standard errors. Without a rule
(no prior file), the power law. The topology symbol ``nodes`` is never a factor of a law; only
Pollux's structure uses it, as the machines its network crosses.

Imports from the data, language and fitting layers only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from ..data.measurements import Measurements
from ..errors import PerfModelError
from ..fitting.extrapolation import scaling_shortfall
from ..fitting.internode import internode_term, per_iteration_time
from ..language.terms import NODES, iterations
from ..uncertainty.references import ernest_spec, power_law_spec, topology_free

#: the power law's formula with its larger scales weighing more (:data:`WEIGHTED_SCALE`)
WEIGHTED_LAW = "weighted-power-law"
#: the laws, in the order a table lists them
LAWS = ("power-law", WEIGHTED_LAW, "amdahl", "usl", "data-parallel", "pollux", "ernest")
#: how much more each larger measured worker count weighs in the weighted power law's fit
WEIGHTED_SCALE = 4.0
#: the efficiency classes whose cells may take the weighted power law: not a series that had stopped
#: scaling, whose largest scales are another regime (contention, oversubscription, a saturated network)
WEIGHTED_CLASSES = ("ideal", "well", "partly")
#: the weighted power law replaces the power law in a cell only when its median error there is lower by
#: more than this many standard errors (a refinement of the same formula must earn its place)
REFINEMENT_SE = 1.0

#: what each law says, in one line (for the report, the app and the CLI)
LAW_WORDS = {
    "power-law": "a power law c·p^a: a straight line on log-log axes, the efficiency falling by the same factor each doubling",
    WEIGHTED_LAW: f"a power law c·p^a fitted with each larger measured worker count weighing {WEIGHTED_SCALE:g}× the one before: the trend line that follows the largest scales",
    "amdahl": "Amdahl's law: a start-up that does not shrink plus work shared by the workers",
    "usl": "the Universal Scalability Law: shared work, contention that grows with the workers and coherency with their pairs",
    "data-parallel": "the paper's data-parallel model: start-up, per-iteration compute, a tree all-reduce and a per-worker cost",
    "pollux": "Pollux's step time: compute overlapped with a synchronisation that appears with the second worker (and across nodes)",
    "ernest": "Ernest's model: fixed cost, work shared by the workers, a tree aggregation (log p) and a per-worker cost",
}

#: efficiency of the last measured doubling at or above which a series is in each class (highest first)
EFFICIENCY_CLASSES = (("ideal", 0.97), ("well", 0.9), ("partly", 0.7), ("stopped", -math.inf))
#: without a learned rule: the power law (what a spreadsheet would draw)
DEFAULT_LAW = "power-law"
#: most measured worker counts for which a law is chosen by the corpus's rule alone; with more, the
#: series can choose its own terms (the term search runs, and the laws are among its candidates)
MAX_LAW_SCALES = 4


def _symbols(meas: Measurements) -> list[str]:
    return [s for s in meas.factors if s != NODES]


def _work(meas: Measurements) -> tuple[str, str]:
    """(the work per worker W, the iteration count I) for ``meas``'s factors: ``I·b^e_b`` where the
    per-worker batch varies, ``I`` where it does not, ``1/p`` without an iteration count."""
    syms = _symbols(meas)
    vary = set(meas.scaling_factors())
    it = iterations(syms) or "1/p"
    derived_b = "B" in syms and "b" not in syms
    if ("b" in syms and "b" in vary) or (derived_b and vary & {"B", "p"}):
        return ("b^e_b" if it == "1" else f"{it}*b^e_b"), it
    return it, it


class LawSpec(TypedDict, total=False):
    """The :class:`~perfmodel.fitting.model.Model` keywords of a law: its terms or a preset's name, and
    how its fit weighs the scales."""

    terms: str
    preset: str
    scale_weight: float


def law_spec(name: str, meas: Measurements) -> LawSpec:
    """The :class:`~perfmodel.fitting.model.Model` keywords of law ``name`` for ``meas``: ``{"terms": ...}``,
    or ``{"preset": ...}`` for a preset (expanded for the factors at fit time, as ``--preset`` does), and
    the fit's ``scale_weight`` where it is not 1."""
    if name == "power-law":
        return {"terms": power_law_spec(meas)}
    if name == WEIGHTED_LAW:
        return {"terms": power_law_spec(meas), "scale_weight": WEIGHTED_SCALE}
    if name in ("data-parallel", "pollux"):
        return {"preset": name}
    w, it = _work(meas)
    if name == "amdahl":
        return {"terms": f"1 + {w}"}
    if name == "usl":
        if it == "1/p":  # (p-1) inside max() stays one term (at the top level it would be p and -1)
            return {"terms": f"{w} + (p-1)/p + max(p-1, 0)"}
        return {"terms": f"{w} + {it}*(p-1) + {it}*p*(p-1)"}
    if name == "ernest":
        return {"terms": ernest_spec(topology_free(meas))}
    raise PerfModelError(f"unknown law {name!r}; known: {', '.join(LAWS)}")


@dataclass(frozen=True)
class LawCell:
    """Where a series stands for the rule: its efficiency class and how many worker counts it has."""

    efficiency_class: str
    scales: str  # "2" or "3+"
    efficiency: float | None
    n_scales: int

    @property
    def key(self) -> str:
        return f"{self.efficiency_class}|{self.scales}"

    def describe(self) -> str:
        eff = "" if self.efficiency is None else f" (its last measured doubling ran at {100 * self.efficiency:.0f} %)"
        return f"{self.n_scales} measured worker counts, scaling {self.efficiency_class}{eff}"


def efficiency_class(efficiency: float | None) -> str:
    """The class of a last-doubling parallel efficiency (:data:`EFFICIENCY_CLASSES`); ``stopped``
    without one."""
    if efficiency is None or not math.isfinite(efficiency):
        return "stopped"
    return next(name for name, lo in EFFICIENCY_CLASSES if efficiency >= lo - 1e-12)


def law_cell(meas: Measurements) -> LawCell | None:
    """The rule's cell of ``meas``: None without a factor ``p`` of at least two values."""
    if "p" not in meas.factors:
        return None
    p = meas.values("p")
    n = len(np.unique(p))
    if n < 2:
        return None
    u = scaling_shortfall(p, meas.y)
    eff = None if u is None else float(2.0**-u)
    return LawCell(efficiency_class(eff), "2" if n <= 2 else "3+", eff, n)


def applies(meas: Measurements) -> bool:
    """True when the corpus's rule chooses the law: a factor ``p`` (workers) with two to
    :data:`MAX_LAW_SCALES` measured values (a short series, which cannot choose its own terms; other
    varying factors enter a law as its powers or its work per worker)."""
    cell = law_cell(meas)
    return cell is not None and cell.n_scales <= MAX_LAW_SCALES


def rule_laws(efficiency_class: str) -> tuple[str, ...]:
    """The laws the rule may give a cell of ``efficiency_class``: all of :data:`LAWS`, the weighted power
    law only in :data:`WEIGHTED_CLASSES`."""
    return tuple(law for law in LAWS if law != WEIGHTED_LAW or efficiency_class in WEIGHTED_CLASSES)


def ruled_law(cell: LawCell, prior: dict | None) -> tuple[str, dict]:
    """(law, evidence) the prior's ``law_rule`` gives for ``cell``: evidence {law: median % error of the
    corpus's extrapolations in that cell, "n": splits}; the default law and {} without a rule."""
    rule = (prior or {}).get("law_rule") or {}
    entry = rule.get(cell.key)
    if not isinstance(entry, dict) or entry.get("law") not in LAWS:
        return DEFAULT_LAW, {}
    return str(entry["law"]), dict(entry.get("errors") or {}) | {"n": entry.get("n_splits")}


def internode_applies(meas: Measurements, prior: dict | None) -> bool:
    """True when the chosen law gets the corpus's inter-node cost: the runs map the topology (``nodes``,
    from a column or the GPUs per node), all ran on one node, and the prior holds a ρ > 0."""
    rho = ((prior or {}).get("internode") or {}).get("rho")
    return bool(
        isinstance(rho, (int, float))
        and rho > 0
        and NODES in meas.factors
        and "p" in meas.factors
        and float(np.max(meas.values(NODES))) <= 1
    )


def with_internode(result, meas: Measurements, internode: dict, settings: dict):
    """``result`` refitted with the inter-node term ``c_x·I·min(nodes − 1, 1)`` (0 on the measured runs),
    its coefficient held at ``ρ·t_it`` (:mod:`perfmodel.fitting.internode`); the result says so."""
    from ..fitting.model import Model, exact_settings

    rho = float(internode["rho"])
    t_it = per_iteration_time(result.predict, meas)
    if not (math.isfinite(t_it) and t_it > 0):
        return result
    c = rho * t_it
    term = internode_term(list(meas.factors))
    k = len(result.terms)
    bounds = {**{n: tuple(b) for n, b in result.param_bounds.items()}, f"c{k}": (c, c * (1 + 1e-9))}
    model = Model(f"{result.expression} + {term}", bounds=bounds, **{**settings, "scale_weight": result.scale_weight})
    try:
        out = model.clone(**exact_settings(model, meas)).fit(meas)
    except PerfModelError:
        return result
    g, how = meas.node_topology()
    out.warnings.append(
        f"{term}: an inter-node cost the runs could not show (every one ran on one node), sized from the corpus: "
        f"{100 * rho:.1f} % of the time of an iteration at p = {float(np.max(meas.values('p'))):g}, the median "
        f"step of {internode.get('n_splits', '?')} deep-learning series that first crossed from one node to "
        f"several; nodes = ceil(p / {g:g}) ({how})"
        if g
        else f"{term}: an inter-node cost sized from the corpus ({100 * rho:.1f} % of an iteration)"
    )
    return out
