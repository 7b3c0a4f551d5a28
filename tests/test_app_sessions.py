"""Two dashboard sessions never see each other's data, and hostile links or terms leave every page
working (AppTest: each AppTest is its own session; they share the process, hence st.cache_data)."""

import re
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import state

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGES = ["pages/data.py", "pages/model.py", "pages/results.py", "pages/scaling.py", "pages/export.py"]
pytestmark = pytest.mark.usefixtures("served_like_a_server")


def session(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.run()
    assert not at.exception
    return at


def upload_and_use(at: AppTest, name: str, content: bytes) -> None:
    at.radio(key="w:source").set_value("Upload a file").run()
    at.file_uploader(key="w:upload").set_value((name, content, "text/plain")).run()
    [button] = [b for b in at.button if b.label == "Use this data"]
    button.click().run()
    assert not at.exception


def runs_csv(last_time: str) -> bytes:
    """Ten good runs T = 1 + 0.5·p, and an eleventh whose time is ``last_time``."""
    rows = ["gpus,time_s"] + [f"{p},{1 + 0.5 * p}" for p in range(1, 11)] + [f"11,{last_time}"]
    return "\n".join(rows).encode()


def test_two_sessions_with_the_same_kept_rows_do_not_share_dropped_rows():
    a, b = session(), session()
    upload_and_use(a, "runs.csv", runs_csv("SECRET-of-session-A"))
    upload_and_use(b, "runs.csv", runs_csv("n/a"))
    ra, rb = a.session_state["result"], b.session_state["result"]
    assert ra is not None and rb is not None and ra.n_rows == rb.n_rows == 10
    assert any("SECRET-of-session-A" in d for d in ra.dropped)
    assert rb.dropped == ["row 11, column 'time_s': non-numeric value 'n/a'"]
    assert a.session_state["data_key"] != b.session_state["data_key"]
    for page in PAGES:
        b.switch_page(page).run()
        assert not b.exception
        shown = " ".join(str(e.value) for kind in (b.markdown, b.warning, b.caption, b.error, b.info) for e in kind)
        assert "SECRET" not in shown


@pytest.mark.parametrize("seed", ["-1", str(2**32), "abc"])
def test_a_link_with_a_seed_outside_32_bits_is_ignored_with_a_notice(seed):
    at = session(seed=seed)
    assert at.session_state["settings"]["seed"] == 0
    shown = [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning]  # Markdown escapes read as shown
    assert any(f"ignored the link's seed {seed!r}" in w for w in shown), shown
    at.switch_page("pages/model.py").run()
    assert not at.exception
    box = at.number_input(key="w:seed")
    assert (box.min, box.max) == (0, 2**32 - 1)  # the Seed box cannot leave numpy's range either


def test_a_link_with_a_scale_weight_fits_with_it_and_keeps_it_in_the_link():
    at = session(weight="4")
    assert at.session_state["settings"]["scale_weight"] == 4
    assert at.session_state["result"].settings["scale_weight"] == 4
    assert at.query_params["weight"] == "4"
    at.switch_page("pages/model.py").run()
    assert not at.exception and at.number_input(key="w:scale_weight").value == 4


@pytest.mark.parametrize("weight", ["0", "-2", "1e9", "heavy"])
def test_a_link_with_a_scale_weight_out_of_range_is_ignored_with_a_notice(weight):
    at = session(weight=weight)
    assert at.session_state["settings"]["scale_weight"] == 1
    shown = [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning]
    assert any(f"ignored the link's scale weight {weight!r}" in w for w in shown), shown
    assert "weight" not in at.query_params


def test_a_term_with_an_integer_too_large_for_a_float_is_an_error_not_an_exception():
    at = session(terms="1 + " + "9" * 400 + "*p")
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, page


def test_upload_limit_is_enforced_by_the_server_config():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == state.MAX_UPLOAD_MB
    with pytest.raises(state.PerfModelError, match="the limit is 50 MB"):
        state.read_upload("big.csv", b"p,t\n" + b"1,2\n" * (50 * 2**20 // 4 + 1))
