"""The range of one prediction: the number every view quotes for "the interval at the target".

The Scaling page's headline, its "what to measure next" panel and ``perfmodel advise`` all quote
the interval at the same configuration; they take it from :func:`range_at`, so they cannot
disagree (before, advise recomputed it from a thinned sample of the replicates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..fitting.members import DEFAULT_LEVEL


@dataclass(frozen=True)
class Range:
    """A prediction and its ``level`` interval at one configuration (seconds)."""

    point: float
    low: float
    high: float
    level: float

    @property
    def halfwidth_log(self) -> float:
        """Half the interval's width in log units: ``log(sqrt(high / low))``."""
        return 0.5 * math.log(self.high / self.low) if self.low > 0 and self.high > 0 else math.inf

    @property
    def halfwidth_pct(self) -> float:
        """The ``±`` a sentence quotes: ``(sqrt(high / low) - 1) × 100`` (the interval is close to
        symmetric in log units around the prediction)."""
        return (math.exp(self.halfwidth_log) - 1) * 100


def range_at(result, config: dict, level: float = DEFAULT_LEVEL) -> Range | None:
    """The prediction at ``config`` ({symbol: value}) with its ``level`` interval, or None when
    the fit has no intervals."""
    if not getattr(result, "has_intervals", False):
        return None
    given = {s: [float(config[s])] for s in result.factors if s in config or s in result.target_factors()}
    row = result.predict(given, interval=level).iloc[0]  # a target's nodes follow from p when not given
    return Range(float(row["predicted_time"]), float(row["predicted_low"]), float(row["predicted_high"]), level)
