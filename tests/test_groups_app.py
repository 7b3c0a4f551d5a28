"""The Groups page through Streamlit's AppTest: first visit on the bundled models × platforms table,
a change of the group columns, and a bad term shown as an error that names it."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from perfmodel.data.datasets import get_dataset, load_frame
from tests.test_app import array

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.usefixtures("served_like_a_server")


def test_groups_page_fits_and_compares_every_group():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/groups.py").run()
    assert not at.exception and not at.error
    ds = get_dataset("tf-cnn-all")
    frame = load_frame("tf-cnn-all")
    n = frame.groupby(list(ds.groups)).ngroups
    text = " ".join(m.value for m in at.markdown)
    assert f"**{n} of {n} groups fitted** by model, platform" in text
    assert "scales best" in text
    assert len(at.get("plotly_chart")) == 2
    quality, constants = (t.value for t in at.dataframe)
    assert len(quality) == len(constants) == n and set(quality["status"]) == {"ok"}
    assert {"MAPE (%)", "CV MAPE (%)", "communication (%)", "notes"} <= set(quality.columns)
    assert {"group", "c·1 (h)", "c·I·log2(p) (h)", "e1"} <= set(constants.columns)
    assert "None" not in constants.astype(str).to_numpy() and "—" in constants.to_numpy()  # a term a group lacks
    # one group per model: 5 groups, each spanning several platforms
    at.multiselect(key="w:g:by:tf-cnn-all").set_value(["model"]).run()
    assert not at.exception and not at.error
    assert at.dataframe[0].value["group"].tolist() == list(dict.fromkeys(frame["model"]))
    assert at.dataframe[1].value["group"].tolist() == list(dict.fromkeys(frame["model"]))
    at.text_input(key="w:g:terms:tf-cnn-all").set_value("1 + I*b^e1 + I*log2(p) + gpus").run()
    assert not at.exception
    [err] = at.error
    assert "'gpus'" in err.value and "not a mapped symbol" in err.value


def _figure(chart) -> dict:
    return json.loads(chart.proto.spec)


def test_groups_page_speaks_one_time_unit_chosen_by_magnitude():
    """Issue 21 item 7: the Groups time chart was in seconds (up to 14,000 s) while other views chose a
    unit by magnitude; the time chart, the split chart and the constants now share the view's unit."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/groups.py").run()
    assert not at.exception and not at.error
    curves, split = (_figure(c) for c in at.get("plotly_chart"))
    unit = re.fullmatch(r"predicted time \((ms|s|min|h)\)", curves["layout"]["yaxis"]["title"]["text"]).group(1)
    k = {"ms": 1e-3, "s": 1, "min": 60, "h": 3600}[unit]
    lines = [t for t in curves["data"] if t.get("mode") == "lines" and "interval" not in t.get("name", "")]
    largest = max(np.nanmax(array(t["y"])) for t in lines) * k  # back in seconds
    # the unit that reads well for the largest time shown: min below 2 h, h above
    assert unit == ("h" if largest >= 7200 else "min" if largest >= 120 else "s")
    assert split["layout"]["xaxis"]["title"]["text"] == f"predicted time ({unit})"
    bars = sum(array(t["x"]) for t in split["data"]) * k
    assert 1 < bars.min() and bars.max() < largest  # the split's totals, in seconds, lie within the curves
    constants = at.dataframe[1].value
    assert [c for c in constants.columns if c.startswith("c·")] and all(
        c.endswith(f"({unit})") for c in constants.columns if c.startswith("c·")
    )
    assert any(f"Constants in {unit}" in c.value for c in at.caption)
    # the measured dots are in the same unit: back in seconds, they are measured times of the table
    measured = load_frame("tf-cnn-all")[get_dataset("tf-cnn-all").time_column]
    dots = (
        np.concatenate([array(t["y"]) for t in curves["data"] if t.get("mode") == "markers" and len(array(t["x"]))]) * k
    )
    assert measured.min() * 0.99 <= dots.min() and dots.max() <= measured.max() * 1.01


def test_groups_of_an_upload_in_milliseconds_are_fitted_in_seconds():
    """The Groups page fits the time as the single fit does: a step_time_ms column read in seconds (it had
    fitted the column as it was, 1000 times the time, and a throughput's rate as if it were a time)."""
    from tests.test_app import submit, upload

    truth = {(m, p): a + 60 / p for m, a in (("small", 2), ("large", 5)) for p in (1, 2, 4, 8)}
    for column, value, work in (
        ("step_time_ms", lambda t: 1000 * t, None),
        ("images_per_sec", lambda t: 1200 / t, 1200),
    ):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
        rows = [f"model,gpus,{column}"] + [f"{m},{p},{value(t):.10g}" for (m, p), t in truth.items()]
        upload(at, "runs.csv", "\n".join(rows).encode())
        if work:
            keys = {str(k).rsplit(":", 1)[-1]: k for k in at.session_state if str(k).startswith("upload:")}
            at.number_input(key=keys["work"]).set_value(float(work))
        submit(at, "Use this data")
        assert not at.exception and at.session_state["meas"].time in ("step_time_ms in s", "1200 / images_per_sec")
        at.switch_page("pages/groups.py").run()
        assert not at.exception and not at.error
        curves = _figure(at.get("plotly_chart")[0])
        unit = re.fullmatch(r"predicted time \((ms|s|min|h)\)", curves["layout"]["yaxis"]["title"]["text"]).group(1)
        k = {"ms": 1e-3, "s": 1, "min": 60, "h": 3600}[unit]
        dots = np.sort(
            np.concatenate([array(t["y"]) for t in curves["data"] if t.get("mode") == "markers" and len(array(t["x"]))])
            * k
        )
        assert np.allclose(dots, np.sort(list(truth.values())))


def test_skipped_groups_come_after_the_fitted_ones_with_blank_numbers():
    """Walk defect: a skipped group (too few configurations to fit) showed "None" in every number of the
    Groups table, and the skipped groups were listed above the fitted ones."""
    from tests.test_app import submit, upload

    rows = ["model,gpus,time_s", "tiny,1,30", "tiny,1,31"]  # one configuration: skipped, and first in the file
    rows += [f"{m},{p},{a + 60 / p:.6g}" for m, a in (("small", 2), ("large", 5)) for p in (1, 2, 4, 8)]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    upload(at, "runs.csv", "\n".join(rows).encode())
    submit(at, "Use this data")
    at.switch_page("pages/groups.py").run()
    assert not at.exception and not at.error
    quality, constants = at.dataframe
    table = quality.value
    assert table["status"].tolist() == ["ok", "ok", "skipped"]
    assert table["group"].tolist() == ["small", "large", "tiny"] == constants.value["group"].tolist()
    skipped = table.iloc[-1]
    assert skipped["notes"]  # the reason stays in view
    numbers = ["MAPE (%)", "CV MAPE (%)", "start-up (%)", "compute (%)", "communication (%)"]
    assert all(pd.api.types.is_float_dtype(table[c]) for c in numbers) and skipped[numbers].isna().all()
    # a missing number is drawn as the placeholder, which Streamlit otherwise writes as "None"
    assert quality.proto.placeholder == constants.proto.placeholder == "—"
    assert "None" not in table.astype(str).to_numpy() and "None" not in constants.value.astype(str).to_numpy()
    # the table's column cuts a long note: each note is also given in full, under the tables
    [notes] = [e for e in at.expander if "in full" in e.label]
    assert "- **tiny**: every factor is constant in this group" in " ".join(m.value for m in notes.markdown)
