"""How a fit's intervals were made, as the `fit` report's [[Intervals]] section, the HTML report and the
app's *How the 90 % bands were made* say it: (what, value) pairs read from its
:class:`~perfmodel.fitting.members.Uncertainty`."""

from __future__ import annotations

import math

from .extrapolation import FEW_NOISE_DOF
from .members import Uncertainty


def facts(unc: Uncertainty, level: float = 0.9) -> list[tuple[str, str]]:
    """Method and replicates, the noise of one run, the band scale, the widening per doubling beyond the
    measured range, what stops the band's low end, and the members' note."""
    nz = unc.noise
    own = nz.own or (0.0, 0.0)
    pn = (unc.prior or {}).get("noise") if nz.own else None
    moderated = (
        ""
        if not pn
        else (
            f"; the corpus's prior {pn['sigma'] * 100:.2g} % on {pn['df']:.3g} pseudo-degrees of freedom combined with "
            + (
                f"this fit's own {own[0] * 100:.2g} % on {own[1]:g}"
                if nz.source != "prior"
                else "no estimate of its own"
            )
        )
    )
    out = [
        (
            "method",
            f"{unc.method}; {sum(m.coefficients.shape[0] for m in unc.members)} replicates over "
            f"{len(unc.members)} model(s); seed {unc.seed}",
        ),
        (
            "noise of one run",
            f"{nz.sigma * 100:.2g} % ({nz.source}"
            + (f", {nz.df:.3g} degrees of freedom" if nz.df else "")
            + moderated
            + ")",
        ),
    ]
    if unc.prior:
        out.append(
            (
                "band scale",
                f"× {unc.band_scale():.3g}: the members' and the noise's band as the corpus's "
                "held-out runs needed it"
                + (
                    f" where the noise rests on fewer than {FEW_NOISE_DOF} degrees of freedom"
                    if unc.few_dof_band()
                    else ""
                ),
            )
        )
    # the widening that applies here: on the measured nodes and across them when the topology is known
    where = (
        (("same_nodes", "on the measured nodes"), ("crosses_nodes", "on more nodes"))
        if unc.prior and unc.topology
        else (("unknown", ""),)
    )
    kappas = {crossing: unc.kappa(level, crossing) for crossing, _ in where}
    for crossing, label in where:
        kappa, how = kappas[crossing]
        if crossing == "crosses_nodes" and kappa < kappas["same_nodes"][0] and unc.structure_scale(level):
            # learned so: the class's runs on more nodes were covered by the structures' reach
            how += (
                "; slower than on the measured nodes because the corpus's runs of this class on more "
                "nodes took most of their width from how far the reference structures reach"
            )
        out.append(
            (
                "extrapolation" + (f", {label}" if label else ""),
                f"widens by {kappa * 100:.3g} % per doubling beyond the measured range ({how})",
            )
        )
    slack = (unc.prior or {}).get("efficiency_slack")
    if unc.efficiency_ref and slack is not None:
        allowance = 100 * (1 - math.exp(-unc.noise.quantile(level)))
        out.append(
            (
                "low end",
                "no faster than the best parallel efficiency measured for the same work, less the noise of one "
                f"run ({allowance:.2g} % at {level:.0%})"
                + (f" and the corpus's {100 * float(slack):.2g} % slack" if slack >= 0.005 else "")
                + ": the corpus's runs beyond their measurements seldom ran faster",
            )
        )
    if unc.members_note:
        out.append(("members", unc.members_note))
    return out
