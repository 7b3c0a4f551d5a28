"""Reliability, third pass (issue 32), in the dashboard: a crafted link never raises, a plan link's value
outside what the widget takes is ignored with a notice (not clamped), and a rate per minute is read as one."""

import numpy as np
import pytest

from tests.test_app import errors, new_app, plain, submit, upload

pytestmark = pytest.mark.usefixtures("served_like_a_server")


@pytest.mark.parametrize(
    "mapping",
    [
        '{"time":"epoch_time_s","factors":["gpus"]}',
        '{"time":"epoch_time_s","factors":"gpus"}',
        '{"time":["epoch_time_s"],"factors":{"p":"gpus"}}',
        '{"time":"epoch_time_s","factors":{"p":7}}',
        '{"time":"epoch_time_s","factors":{"p":"gpus"},"rate":{"column":"x","work":1,"unit":"fortnight"}}',
    ],
)
def test_a_link_with_a_mistyped_mapping_opens_the_dataset_with_a_notice(mapping):
    at = new_app(dataset="tf-cnn-resnet50-dgx1", map=mapping).run()
    assert not at.exception
    assert any("could not apply the link's column mapping" in w.value for w in at.warning), [
        w.value for w in at.warning
    ]
    for page in ("pages/model.py", "pages/scaling.py", "pages/plan.py"):
        at.switch_page(page).run()
        assert not at.exception, page


@pytest.mark.parametrize("gpn", ["5000", "2.5", "0", "nan"])
def test_a_plan_link_with_gpus_per_node_outside_the_widget_is_ignored_with_a_notice(gpn):
    at = new_app(pricing="node", price="3", gpn=gpn)
    at.switch_page("pages/plan.py").run()
    assert not at.exception and not errors(at)
    notes = [plain(w.value) for w in at.warning if "gpn" in w.value]
    assert notes and f"ignored the link's gpn {gpn!r}" in notes[0], notes
    assert at.number_input(key="w:plan:gpn").value == 8


def test_a_throughput_per_minute_is_read_per_minute():
    """images/min from T = 2 + 60/p seconds per image: the time fitted is 60 / rate."""
    at = new_app().run()
    rows = ["gpus,images/min"] + [f"{p},{60 / (2 + 60 / p):.10g}" for p in (1, 2, 4, 8)]
    upload(at, "rates.csv", "\n".join(rows).encode())
    keys = {str(k).rsplit(":", 1)[-1]: k for k in at.session_state if str(k).startswith("upload:")}
    assert at.checkbox(key=keys["is_rate"]).value
    submit(at, "Use this data")
    assert not at.exception and not errors(at)
    ss = at.session_state
    assert np.allclose(ss["meas"].y, [2 + 60 / p for p in (1, 2, 4, 8)])
    assert ss["result"].rate == {"column": "images/min", "work": 1.0, "unit": "min"}
    link = {k: at.query_params[k] for k in at.query_params}
    other = new_app(**link).run()
    assert not other.exception and np.allclose(other.session_state["meas"].y, ss["meas"].y)
