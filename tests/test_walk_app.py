"""The stakeholder's walk (issue 33) in the dashboard, through Streamlit's AppTest: each defect and
friction the walk met on NVIDIA's published tables (data/nvidia_dle/), one test each."""

import json
import re
from pathlib import Path

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from perfmodel import wording
from perfmodel.uncertainty.ranges import range_at

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
A100 = ROOT / "data" / "nvidia_dle" / "a100_efficientnet_throughput.csv"
BERT = ROOT / "data" / "nvidia_dle" / "bert_large_v100_time_to_train.csv"
IMAGENET = 1_281_167
pytestmark = pytest.mark.usefixtures("served_like_a_server")


def new_app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params.update(query)
    return at


def plain(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def errors(at):
    return [plain(e.value) for e in at.error]


def upload(at, path: Path, content: bytes | None = None, work: float | None = None) -> None:
    """Upload ``path`` (or ``content`` under its name) on the Data page and use it (a throughput's work
    per run set to ``work`` when given)."""
    at.switch_page("pages/data.py").run()
    at.radio(key="w:source").set_value("Upload a file").run()
    at.file_uploader(key="w:upload").set_value((path.name, content or path.read_bytes(), "text/csv")).run()
    keys = {str(k).rsplit(":", 1)[-1]: k for k in at.session_state if str(k).startswith("upload:")}
    if work is not None:
        assert at.checkbox(key=keys["is_rate"]).value  # images_per_sec reads as a throughput
        at.number_input(key=keys["work"]).set_value(float(work))
    [button] = [b for b in at.button if b.label == "Use this data"]
    button.click().run()
    assert not at.exception and not errors(at), errors(at)


@pytest.fixture
def captured(monkeypatch):
    """{file name: bytes or a callable giving them} of every download the app offers."""
    files = {}
    add, add_deferred = MediaFileManager.add, MediaFileManager.add_deferred

    def spy_add(self, data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        if file_name:
            files[file_name] = data
        return add(self, data, mimetype, coordinates, file_name, is_for_static_download)

    def spy_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        files[file_name] = data_callable
        return add_deferred(self, data_callable, mimetype, coordinates, file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add", spy_add)
    monkeypatch.setattr(MediaFileManager, "add_deferred", spy_deferred)
    return files


def _bytes(v) -> str:
    v = v() if callable(v) else v
    return v.decode() if isinstance(v, bytes) else v


def test_a_report_after_an_upload_does_not_reuse_the_last_datas_scaling_view(captured):
    # the A100 report's charts ran to p = 4,096 ("512× the largest measured p (8)"): the default data's
    # Scaling view, extended to 64× its 8 GPUs, was reused for the upload's report
    at = new_app().run()
    at.switch_page("pages/scaling.py").run()
    at.select_slider(key="w:extend").set_value(64).run()
    upload(at, A100, work=IMAGENET)
    at.switch_page("pages/export.py").run()
    assert not at.exception
    html = _bytes(captured["a100_efficientnet_throughput_report.html"])
    assert "512× the largest" not in html and '"x1":4096' not in html.replace(" ", "")
    assert '"x1":256' in html.replace(" ", "")  # the report's own default view: 4 × the measured 64 GPUs


def test_the_export_report_opens_with_the_verdict_of_a_poor_fit(captured):
    # pooled, the six models fit poorly: the Scaling page said so, the report did not
    at = new_app().run()
    upload(at, A100, work=IMAGENET)
    at.switch_page("pages/scaling.py").run()
    assert any("too poor to quote a prediction" in plain(w.value) for w in at.warning)
    at.switch_page("pages/export.py").run()
    html = _bytes(captured["a100_efficientnet_throughput_report.html"])
    assert "<div class='warn verdict'><strong>This fit is too poor to quote a prediction: " in html


def test_a_model_column_is_not_read_as_repeats():
    # "Repeats 1–3, noise (median CV) 28.5 %": different models at the same (p, b) taken as repeats
    at = new_app().run()
    upload(at, A100, work=IMAGENET)
    [repeats] = [m for m in at.metric if m.label == "Repeats per configuration"]
    assert repeats.value == "1"
    [noise] = [m for m in at.metric if m.label == "Noise (median CV)"]
    assert noise.value == "no repeats"
    [note] = [plain(i.value) for i in at.info if "not repeats" in plain(i.value)]
    assert "*model*" in note and "Groups" in note


def test_a_repeat_number_is_read_as_repeats_and_a_nodes_column_as_topology():
    # MLPerf's five results per configuration (run = result_0 … result_4) were read as five groups: "no
    # repeats", and the nodes column (4 A100 per node) ignored for a guessed 8 per node
    at = new_app(dataset="mlperf-resnet-a100").run()
    assert not at.exception
    frame = at.session_state["meas"].frame
    per_config = frame.groupby(["accelerators", "global_batch"]).size()  # counted here, from the file
    [repeats] = [m for m in at.metric if m.label == "Repeats per configuration"]
    assert repeats.value == f"{per_config.min()}–{per_config.max()}" and per_config.max() > 1
    [noise] = [m for m in at.metric if m.label == "Noise (median CV)"]
    assert noise.value.endswith(" %")
    assert not [i for i in at.info if "not repeats" in plain(i.value)]
    assert at.session_state["data"]["factors"]["nodes"] == "nodes"
    # the welcome names the dataset the link opened, not the default one
    assert any(
        "MLPerf ResNet-50 on Dell XE8545" in plain(m.value) and "is open and fitted" in plain(m.value)
        for m in at.markdown
    )
    assert any(
        "4 GPUs per node (from the nodes column); measured on up to 32 node(s)" in plain(m.value) for m in at.caption
    )


def test_an_uploads_mapping_can_be_changed_after_leaving_the_data_page():
    at = new_app().run()
    upload(at, A100, work=IMAGENET)
    at.switch_page("pages/scaling.py").run()
    at.switch_page("pages/data.py").run()  # the uploader has forgotten the file
    assert not at.exception
    assert at.session_state["data"]["source"] == "upload"
    [exp] = [e for e in at.expander if e.label.startswith("Change the column mapping of a100")]
    keys = {str(k).rsplit(":", 1)[-1]: k for k in at.session_state if str(k).startswith("kept:")}
    assert at.number_input(key=keys["work"]).value == IMAGENET  # the work per run is kept
    at.number_input(key=keys["work"]).set_value(IMAGENET / 1000)
    [button] = [b for b in at.button if b.label == "Apply mapping"]
    button.click().run()
    assert not at.exception and not errors(at)
    assert at.session_state["meas"].time == "1281.167 / images_per_sec"
    assert at.session_state["data"]["upload_key"]  # its link still brings the file


def test_the_work_per_run_is_not_asked_again_for_the_next_upload():
    at = new_app().run()
    upload(at, A100, work=IMAGENET)
    lines = A100.read_text().splitlines()
    subset = "\n".join(lines[:1] + [x for x in lines[1:] if x.startswith("efficientnet-b4,")]).encode()
    at.radio(key="w:source").set_value("Upload a file").run()
    at.file_uploader(key="w:upload").set_value(("b4.csv", subset, "text/csv")).run()
    keys = {str(k).rsplit(":", 1)[-1]: k for k in at.session_state if str(k).startswith("upload:")}
    assert at.number_input(key=keys["work"]).value == IMAGENET  # was reset to 1 on every upload


def test_a_shared_scaling_link_keeps_the_gpus_per_node_and_the_extension():
    at = new_app().run()
    at.number_input(key="w:gpus_per_node").set_value(4).run()
    at.switch_page("pages/scaling.py").run()
    at.select_slider(key="w:extend").set_value(16).run()
    link = {k: at.query_params[k] for k in at.query_params}
    assert link["gpus_per_node"] == "4" and link["extend"] == "16"
    other = new_app(**link)
    other.switch_page("pages/scaling.py").run()
    assert not other.exception and not errors(other)
    assert other.session_state["gpus_per_node"] == 4 and other.session_state["w:extend"] == 16
    # the scaling curve runs to 16 × the 8 measured GPUs, and the topology is the one set, not the guess
    assert '"x1":128' in other.get("plotly_chart")[0].proto.spec.replace(" ", "")  # the extrapolation zone
    guessed = [plain(w.value) for w in other.warning if "(a guess)" in plain(w.value)]
    assert not guessed, guessed


def test_what_to_measure_next_offers_the_target_itself():
    # the app suggested p = 512 for a target of 2,048, where `advise` with the target in its grid ranks it first
    from ui.advise_panel import candidate_values

    assert candidate_values([16, 64, 256, 512], 2048) == [16, 32, 64, 128, 256, 512, 1024, 2048]
    at = new_app().run()
    at.switch_page("pages/scaling.py").run()
    [table] = [d.value for d in at.dataframe if "narrower by (points of ±)" in d.value.columns]
    assert 32.0 in set(table["p"])  # 4 × the 8 measured GPUs: the curve's end, the target
    # one measure in the sentence and the table (a share of the width beside points of ± disagreed): today's
    # ± less the ± after a run is how much narrower it is
    [after] = [c for c in table.columns if c.startswith("± at the target after it")]
    today = float(re.search(r"today ([\d.]+)\)", after).group(1))
    top = table.iloc[0]
    assert top["narrower by (points of ±)"] == pytest.approx(today - top[after], abs=1.0)
    [note] = [plain(s.value) for s in at.success if "next:" in plain(s.value)]
    assert f"to about ±{top[after]:.0f} %" in note


def test_what_to_measure_next_counts_worker_hours_on_machines():
    # Ernest's Spark runs on 1-8 machines: p × time is machine time, not GPU-hours
    at = new_app(dataset="ernest-rcv1").run()
    at.switch_page("pages/scaling.py").run()
    assert not at.exception
    [table] = [d.value for d in at.dataframe if "narrower by (points of ±)" in d.value.columns]
    assert "worker-hours" in table.columns and not [c for c in table.columns if "GPU" in c]


def test_the_headline_is_the_wordings_sentence():
    at = new_app().run()
    at.switch_page("pages/scaling.py").run()
    res = at.session_state["result"]
    [head] = [plain(i.value) for i in at.info if "the model predicts" in i.value]
    fixed = {s: v for s, v in at.session_state["scaling_view"]["fixed"].items()}
    r = range_at(res, {**fixed, "p": 32})
    unit = re.search(r"at p = 32 it predicts \*\*[\d.]+ (\w+)", head).group(1)
    value, _, rest = wording.fmt_time(r.point, r.low, r.high, unit).partition(" (")
    assert f"at p = 32 it predicts **{value}** ({rest}" in head


def test_a_group_opens_in_the_single_model_pages_with_its_mapping_kept(captured):
    # "No way from a group to its own model": per-model answers at 32 GPUs needed six uploads
    at = new_app().run()
    upload(at, A100, work=IMAGENET)
    at.switch_page("pages/groups.py").run()
    assert not at.exception and not errors(at), errors(at)
    assert at.multiselect(key=next(k for k in at.session_state if str(k).startswith("w:g:by:"))).value == ["model"]
    # the curves run past 2 × (p = 128 at 4 ×), and the split can be shown beyond the measured 64 GPUs
    assert at.select_slider(key="w:g:extend").value == 4
    assert 256.0 in at.select_slider(key="w:g:at:p").options or "256" in at.select_slider(key="w:g:at:p").options
    # the groups' own report, beside summary.csv
    html = _bytes(captured["a100_efficientnet_throughput_groups_report.html"])
    assert html.startswith("<!DOCTYPE html>") and "efficientnet-b4" in html and "plotly" in html
    at.selectbox(key=next(k for k in at.session_state if str(k).startswith("w:g:open:"))).set_value(
        "efficientnet-b4"
    ).run()
    at.button(key="g:open").click().run()
    assert not at.exception and not errors(at), errors(at)
    ss = at.session_state
    assert at.title[0].value == "Scaling"
    assert ss["data"]["where"] == {"model": "efficientnet-b4"} and ss["data"]["rate"]["work"] == IMAGENET
    assert ss["meas"].n_rows == 5 and ss["meas_raw"].factors == {"p": "gpus", "b": "batch_per_gpu"}
    assert ss["result"].dataset == "a100_efficientnet_throughput.csv [model = efficientnet-b4]"
    assert ss["result"].n_rows == 5
    # the link reopens the same group
    link = {k: at.query_params[k] for k in at.query_params}
    assert json.loads(link["map"])["where"] == {"model": "efficientnet-b4"}
    other = new_app(**link).run()
    assert not other.exception and other.session_state["meas"].n_rows == 5


def test_what_the_time_is_spent_on_shows_shares_when_the_time_spans_a_decade():
    # on a linear time axis, the curve's far end (BERT at 2,048 GPUs: 1/30 of the time at 16) was a sliver
    at = new_app().run()
    at.switch_page("pages/scaling.py").run()
    assert at.toggle(key="w:logy").value  # the time spans a decade: the time axis is logarithmic
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert spec["layout"]["yaxis"]["title"]["text"] == "share of the predicted time (%)"
    at.toggle(key="w:logy").set_value(False).run()
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert spec["layout"]["yaxis"]["title"]["text"].startswith("predicted time")


def test_plan_labels_never_write_over_each_other():
    import numpy as np

    from perfmodel.plots.plan import place_labels

    # the fast end of a plan: p = 256 ... 4096 within a few pixels of each other
    fx = np.array([0.10, 0.12, 0.13, 0.15, 0.2, 0.5, 0.9])
    fy = np.array([0.9, 0.6, 0.3, 0.28, 0.25, 0.2, 0.2])
    texts = ["p=4096", "p=2048", "p=1024", "p=512", "p=256", "p=64", "p=16"]
    kept, where = place_labels(fx, fy, texts)
    boxes = []
    for x, y, t, w in zip(fx * 380, fy * 240, kept, where, strict=True):
        if not t:
            continue
        bw = 8 * len(t) + 4
        x0 = x + 6 if "right" in w else x - 6 - bw
        y0 = y + 3 if "top" in w else y - 3 - 16
        boxes.append((x0, y0, x0 + bw, y0 + 16))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    assert sum(bool(t) for t in kept) >= 5  # most keep their label
