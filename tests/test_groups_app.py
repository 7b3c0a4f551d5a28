"""The Groups page through Streamlit's AppTest: first visit on the bundled models × platforms table,
a change of the group columns, and a bad term shown as an error that names it."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from perfmodel.data.datasets import get_dataset, load_frame

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
    [table] = at.dataframe
    shown = table.value
    assert len(shown) == n and set(shown["status"]) == {"ok"}
    assert {"Start-up (fixed): constant", "All-reduce, tree (log p) I·log2(p): constant", "communication (%)"} <= set(shown.columns)
    assert "None" not in shown.astype(str).to_numpy() and "—" in shown.to_numpy()  # a term a group lacks
    # one group per model: 5 groups, each spanning several platforms
    at.multiselect(key="w:g:by:tf-cnn-all").set_value(["model"]).run()
    assert not at.exception and not at.error
    assert at.dataframe[0].value["group"].tolist() == list(dict.fromkeys(frame["model"]))
    at.text_input(key="w:g:terms:tf-cnn-all").set_value("1 + I*b^e1 + I*log2(p) + gpus").run()
    assert not at.exception
    [err] = at.error
    assert "'gpus'" in err.value and "not a mapped symbol" in err.value
