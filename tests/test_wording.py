"""The words of each number (perfmodel.wording), on worked examples: the roundings and bands the stakeholder's
walk (issue 33) found written differently, or wrongly, in the app, the CLI and the report."""

import re

import numpy as np
import pandas as pd
import pytest

from perfmodel import Measurements, Model, wording
from perfmodel.plan import plan, recommend
from perfmodel.uncertainty import compute_intervals

MIN = 60.0


@pytest.mark.parametrize(
    "value, low, high, unit, expected",
    [
        # the range supports one decimal: "1 min (1–3 min)" said 1.31 min (0.68–2.99) was 1, and 0.68 was 1
        (1.31, 0.68, 2.99, " min", "1.3 min (0.7–3.0 min)"),
        (31.17, 27.4, 34.2, "×", "31× (27–34×)"),  # two digits the range supports, no more
        (4.963, 4.91, 5.02, "×", "4.96× (4.91–5.02×)"),  # a narrow range supports three
        (98.4, 97.9, 98.9, " %", "98.4 % (97.9–98.9 %)"),
        (18900.0, 15000.0, 22000.0, " images/s", "18,900 images/s (15,000–22,000 images/s)"),
        (18748.0, 17699.0, 19821.0, "", "18,700 (17,700–19,800)"),  # three digits of a large value, not five
        (31.17, None, None, "×", "31.2×"),  # no range: three significant digits
        (2.0, None, None, " h", "2 h"),  # ... without trailing zeros
    ],
)
def test_a_value_is_rounded_to_what_its_range_supports(value, low, high, unit, expected):
    assert wording.fmt_range(value, low, high, unit) == expected


@pytest.mark.parametrize(
    "seconds, low, high, unit, expected",
    [
        (1.31 * MIN, 0.68 * MIN, 2.99 * MIN, "min", "1.3 min (0.7–3.0 min)"),  # the app's headline, the view's unit
        # "0.08 min (0.04–0.15)": a unit that reads well for the value, the same for both ends
        (0.08 * MIN, 0.04 * MIN, 0.15 * MIN, None, "4.8 s (2.4–9.0 s)"),
        # the Plan table's "0.4 (0.4–0.5) h" where the CLI said "27 min (25–32 min)"
        (27 * MIN, 25 * MIN, 32 * MIN, None, "27 min (25–32 min)"),
        (49.1, 22.9, 128.2, None, "49 s (23–128 s)"),
        (66.2 * 3600, 60 * 3600, 80 * 3600, None, "66 h (60–80 h)"),
        (0.25, None, None, None, "250 ms"),
    ],
)
def test_a_time_and_its_range_share_one_unit(seconds, low, high, unit, expected):
    assert wording.fmt_time(seconds, low, high, unit) == expected


def test_an_asymmetric_band_is_written_as_such():
    # 49.1 s (22.9–128.2 s): "± 91 %" in advise, where the band is 53 % below and 161 % above
    assert wording.fmt_band(49.1, 22.9, 128.2) == "−53 %/+161 %"
    assert wording.fmt_band(100.0, 52.0, 191.0) == "−48 %/+91 %"
    assert wording.fmt_band(100.0, 89.0, 112.0) == "±12 %"  # close to symmetric: one number
    assert wording.fmt_band_log(np.log(1.2)) == "±18 %"  # −17 %/+20 %: close enough to say one number
    assert wording.fmt_band_log(np.log(2.0)) == "−50 %/+100 %"


def test_a_recommendation_is_a_sentence_that_never_capitalises_a_symbol():
    # the report wrote "P = 1024 saves 34 min for 179.37 more" where the app and the CLI say "p = 1024"
    assert wording.sentence("p = 1024 saves 34 min for 179.37 more") == "p = 1024 saves 34 min for 179.37 more."
    assert wording.sentence("nodes = 4 saves 2 h") == "nodes = 4 saves 2 h."
    assert wording.sentence("cheapest meeting the deadline (2 h)") == "Cheapest meeting the deadline (2 h)."
    assert wording.sentence("no configuration meets the deadline.") == "No configuration meets the deadline."


def _amdahl(noise: float = 0.0, seed: int = 0) -> Measurements:
    """T = 30 + 3000/p (seconds) at p = 1..16, with relative noise."""
    rng = np.random.default_rng(seed)
    p = np.repeat([1, 2, 4, 8, 16], 3)
    t = (30 + 3000 / p) * (1 + noise * rng.standard_normal(p.size))
    return Measurements.from_frame(pd.DataFrame({"gpus": p, "t": t}), "t", {"p": "gpus"})


def test_the_headline_quotes_the_models_numbers_with_their_ranges():
    meas = _amdahl(0.02)
    r = Model("1 + 1/p", lam=0).fit(meas)
    words = wording.headline(r, "p", {}, 16, 64)
    text = str(words)
    at16, at64 = (float(v) for v in r.predict({"p": [16, 64]}))
    assert text.startswith(f"At the largest measured p = 16 the model predicts {wording.fmt_time(at16)}")
    assert f"at p = 64 it predicts {wording.fmt_time(at64)}" in text
    assert "% of it start-up" in text or "% of it compute" in text
    # the numbers are marked: bold in Markdown (the rest escaped by the caller's function), strong in HTML
    assert f"**{wording.fmt_time(at64)}**" in words.markdown(lambda t: t)
    assert f"<strong>{wording.fmt_time(at64)}</strong>" in words.html()
    # with a range: the value marked, its range after it
    compute_intervals(r, meas, replicates=30)
    marked = wording.headline(r, "p", {}, 16, 64).markdown(lambda t: t)
    assert re.search(r"at p = 64 it predicts \*\*[\d.]+ s\*\* \([\d.]+–[\d.]+ s\)", marked), marked
    text = str(wording.headline(r, "p", {}, 16, 64, unit="s"))
    assert "Ranges are 90 % intervals." in text and " s (" in text
    # the curve ending at the largest measured p (the Scaling page at 1×): said once, not twice
    once = str(wording.headline(r, "p", {}, 16, 16))
    assert once.count("predicts") == 1 and "at p = 16 it predicts" not in once


def test_the_poor_fit_verdict_is_one_sentence():
    meas = _amdahl(0.6, seed=3)  # noise of 60 %: no model of it is worth quoting
    r = Model("1", lam=0).fit(meas)
    verdict = wording.poor_fit(r)
    assert verdict.startswith("This fit is too poor to quote a prediction: ") and verdict.endswith(".")
    assert wording.poor_fit(Model("1 + 1/p", lam=0).fit(_amdahl(0.01))) is None


def test_the_plans_words_are_the_wordings():
    r = Model("1 + 1/p", lam=0).fit(_amdahl(0.01))
    frame = plan(r, grid={"p": [8, 16, 32, 64]}, price=2.0)
    [line] = recommend(frame)  # no deadline, no budget: the price of speed along the frontier
    t, cost = frame["time_s"].to_numpy(), frame["cost"].to_numpy()
    assert line == f"p = 16 saves {wording.fmt_time(t[0] - t[1])} for {cost[1] - cost[0]:.2f} more"
