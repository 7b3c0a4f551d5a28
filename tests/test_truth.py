"""Issue 21: every figure from one source, a poor fit not quoted, one unit per view, a visible band.

AppTests (what a person sees) and the library functions behind them."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from perfmodel import Model, cross_validate
from perfmodel.advise import advise
from perfmodel.data.datasets import get_dataset, load_dataset
from perfmodel.fitting.quality import POOR_MAPE, POOR_MAX_ERROR, POOR_R2, judge, judge_result
from perfmodel.search import auto_select
from perfmodel.uncertainty import compute_intervals
from perfmodel.uncertainty.ranges import range_at
from tests.cli_run import run
from tests.test_app import new_app, plain

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("served_like_a_server")


def app_on(**query) -> AppTest:
    """A first run of the app (``tests.test_app.new_app``) with time for the group fits on a loaded machine."""
    at = new_app(**query)
    at.default_timeout = 240
    assert not at.run().exception
    return at


# -- guardrails ------------------------------------------------------------------------------------
def test_judge_names_each_value_past_its_threshold():
    good = judge({"mape": 2.0, "r2": 0.99, "max_pct_error": 5.0}, {"mape": 3.0})
    assert not good.poor and good.reasons == []
    bad = judge({"mape": 60.0, "r2": 0.04, "max_pct_error": 146.0}, {"mape": 62.0})
    assert bad.poor and bad.sentence() == (
        f"cross-validated error 62 % (above {POOR_MAPE:.0f} %), "
        f"R² 0.04 (below {POOR_R2:g}), largest error 146 % "
        f"(above {POOR_MAX_ERROR:.0f} %)"
    )
    # without a cross-validation, the in-sample error is judged and called what it is
    assert judge({"mape": 30.0, "r2": 0.9, "max_pct_error": 50.0}).reasons == ["typical error 30 % (above 25 %)"]
    assert not judge({"mape": float("nan"), "r2": float("nan")}).poor  # nothing known: nothing claimed


def test_one_model_over_every_cnn_and_platform_is_judged_poor_the_default_is_not():
    ds = get_dataset("tf-cnn-all")
    meas = load_dataset("tf-cnn-all")
    model = Model(ds.terms)
    res = model.fit(meas)
    res.validation["5-fold"] = cross_validate(model, meas, k=5).metrics
    assert judge_result(res).poor
    default = get_dataset("tf-cnn-resnet50-dgx1")
    ok = Model(default.terms).fit(load_dataset(default.name))
    assert not judge_result(ok).poor


def test_scaling_page_says_a_poor_fit_is_poor_instead_of_quoting_it():
    at = app_on(dataset="tf-cnn-all")
    at.switch_page("pages/scaling.py").run()
    assert not at.exception
    warnings = [plain(w.value) for w in at.warning]
    poor = [w for w in warnings if "too poor to quote a prediction" in w]
    assert poor, warnings
    assert "R² 0.04" in poor[0] and "Groups" in poor[0] and "model" in poor[0]
    assert not any("the model predicts" in plain(i.value) for i in at.info)  # no headline
    assert any("No best speedup is quoted" in c.value for c in at.caption)


# -- one unit, a visible band ----------------------------------------------------------------------
def test_scaling_page_uses_one_unit_and_a_log_time_axis_when_the_curve_spans_a_decade():
    at = app_on()
    at.switch_page("pages/scaling.py").run()
    assert not at.exception
    [head] = [plain(i.value) for i in at.info if "the model predicts" in i.value]
    units = set(re.findall(r"\d (ms|s|min|h)\b", head))
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    contrib = json.loads(at.get("plotly_chart")[1].proto.spec)
    # ResNet-50 from 98 min at p = 1 to 3 min at p = 32: minutes, in the sentence and on both axes
    assert units == {"min"}, head
    assert spec["layout"]["yaxis"]["title"]["text"] == "predicted time (min)"
    # its split as shares of the time on the log time axis, where 3 min of 98 would be a sliver (issue 33)
    assert contrib["layout"]["yaxis"]["title"]["text"] == "share of the predicted time (%)"
    assert spec["layout"]["yaxis"]["type"] == "log"  # 98 -> 3 min: more than a decade
    assert at.toggle(key="w:logy").value is True


# -- one source -----------------------------------------------------------------------------------
def test_groups_results_and_cli_agree_on_the_cross_validated_error(tmp_path, capsys):
    """ResNet-50 on dgx1-p100: the Groups page's group, the Results page's default dataset and the
    CLI's `fit --cv 5` are the same 8 runs with the same terms, settings, folds and seed."""
    at = app_on()
    at.switch_page("pages/results.py").run()
    results = at.session_state["result"].validation
    [(label, metrics)] = results.items()
    at.switch_page("pages/groups.py").run()
    assert not at.exception
    table = at.dataframe[0].value.set_index("group")
    on_groups = float(table.loc["ResNet-50 / dgx1-p100", "CV MAPE (%)"])
    model = tmp_path / "m.json"
    code, _, err = run(
        ["fit", "tf-cnn-resnet50-dgx1", "--cv", "5", "--replicates", "0", "--maxiter", "300", "--out", model], capsys
    )
    assert code == 0, err
    on_cli = json.loads(model.read_text())["validation"]["5-fold"]["mape"]
    assert on_groups == pytest.approx(metrics["mape"], rel=1e-9) == pytest.approx(on_cli, rel=1e-9)


def test_advise_quotes_the_range_the_headline_quotes():
    ds = get_dataset("tf-cnn-resnet50-dgx1")
    meas = load_dataset(ds.name)
    res = compute_intervals(Model(ds.terms).fit(meas), meas, replicates=100)
    target = {"p": 32.0, "b": 64.0, "N": 1281167.0}
    r = range_at(res, target)
    a = advise(res, target, {"p": [1, 2, 4, 8, 16]}).attrs
    assert a["target_time"] == pytest.approx(r.point, rel=1e-12)
    assert a["target_halfwidth_pct"] == pytest.approx(r.halfwidth_pct, rel=1e-12)
    assert r.low < r.point < r.high


# -- groups: ranges, fair ranking, readable table ---------------------------------------------------
def test_groups_headline_carries_ranges_and_leaves_poor_fits_unranked():
    at = app_on()
    at.switch_page("pages/groups.py").run()
    assert not at.exception
    text = " ".join(plain(m.value) for m in at.markdown)
    best = re.search(r"scales best \((\d+\.?\d*)× \((\d+\.?\d*)–(\d+\.?\d*)×\) speedup", text)
    assert best, text
    v, lo, hi = map(float, best.groups())
    assert lo < v < hi
    tables = [d.value for d in at.dataframe]  # errors and shares, then constants (a term left out: —)
    assert all("None" not in t.astype(str).to_numpy() for t in tables)
    assert any("—" in t.to_numpy() for t in tables)
    assert not any(c.startswith("c[") for t in tables for c in t.columns)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    from perfmodel.plots.style import GROUP_COLORS

    lines = [
        tr
        for tr in spec["data"]
        if tr.get("mode") == "lines" and tr.get("showlegend", True) and "interval" not in tr.get("name", "")
    ]
    assert {tr["line"]["color"] for tr in lines} <= set(GROUP_COLORS)  # Okabe–Ito
    assert sum(tr.get("fill") == "tonexty" for tr in spec["data"]) == len(lines)  # a band per charted group
    # grouped by model only, every group mixes 4 platforms: 42-58 % CV error, too poor to rank
    at.multiselect(key="w:g:by:tf-cnn-all").set_value(["model"]).run()
    assert not at.exception
    text = " ".join(plain(m.value) for m in at.markdown)
    assert "scales best" not in text and "too poor to compare" in text and "InceptionV3: cross-validated error" in text


def test_group_intervals_added_later_are_the_ones_fit_groups_computes():
    from perfmodel import fit_groups
    from perfmodel.data.datasets import load_frame

    ds = get_dataset("tf-cnn-all")
    frame = load_frame("tf-cnn-all")
    frame = frame[frame["platform"].isin(["dgx1-p100"]) & frame["model"].isin(["ResNet-50", "AlexNet"])]
    kw = dict(time=ds.time_column, factors=dict(ds.factors), terms=ds.terms, cv=0, executor="serial", maxiter=300)
    direct = fit_groups(frame, ["model", "platform"], replicates=40, **kw)
    later = fit_groups(frame, ["model", "platform"], **kw).with_intervals(replicates=40)
    env = {"p": [32.0], "b": [32.0], "N": [1281167.0]}
    for a, b in zip(direct.outcomes, later.outcomes, strict=True):
        assert np.array_equal(
            a.result.predict(env, interval=0.9).to_numpy(), b.result.predict(env, interval=0.9).to_numpy()
        )


# -- error positions point into what the user typed ------------------------------------------------
@pytest.mark.parametrize("text,position", [("I*b^e1 + )", 10), ("b^e1 + (N/p", 8), ("  N/p ++* p", 9)])
def test_a_syntax_error_names_the_position_in_the_users_text(text, position):
    from perfmodel import PerfModelError
    from perfmodel.language.expression import parse_expression

    with pytest.raises(PerfModelError, match=rf"at position {position}:"):
        parse_expression(text, ["p", "N", "b"])


def test_the_custom_terms_error_points_into_the_box(tmp_path, capsys):
    box = "I*b^e1 + )"  # 10 characters; the ')' is the 10th
    at = app_on()
    at.switch_page("pages/model.py").run()
    at.text_input(key="w:custom").set_value(box).run()
    assert not at.exception
    [err] = [plain(e.value) for e in at.error if "cannot be used" in e.value]
    assert "at position 10" in err and "custom terms box" in err, err
    code, _, cli = run(["fit", "tf-cnn-resnet50-dgx1", "--terms", box, "--out", tmp_path / "m.json"], capsys)
    assert code == 2 and "at position 10" in cli  # the CLI counts the same characters


def test_lambda_path_legend_names_the_terms_in_plain_words():
    from perfmodel.plots.selection import lambda_path_figure, term_names
    from perfmodel.search import lambda_path

    meas = load_dataset("tf-cnn-resnet50-dgx1")
    model = Model("1 + I*b^0.75 + I*log2(p)", maxiter=100)
    path = lambda_path(model, meas, [0, 1e-3, 1e-1], k=3, workers=1)
    fig = lambda_path_figure(path, names=term_names(model.fit(meas)))
    legend = [tr.name for tr in fig.data if tr.name and "MAPE" not in tr.name]
    assert legend[0] == "Start-up (fixed)" and legend[2].startswith("All-reduce, tree (log p)"), legend
    assert not any("*" in name for name in legend)


# -- λ: the exception explained where it happens ---------------------------------------------------
def test_raising_lambda_that_brings_a_term_back_says_why():
    """The default model drops its start-up term at the default λ and has it back (10.6 s) at 0.01."""
    at = app_on()
    at.switch_page("pages/model.py").run()
    assert not any("brought back" in i.value for i in at.info)
    at.select_slider(key="w:lam").set_value(0.01).run()
    assert not at.exception
    [note] = [plain(i.value) for i in at.info if "brought back" in i.value]
    assert "Start-up (fixed) (10.6 s)" in note and "λ = 1e-5" in note and "share of the time" in note, note
    at.select_slider(key="w:lam").set_value(1e-3).run()  # 1e-3 keeps the same terms as 1e-5: nothing to explain
    assert not any("brought back" in i.value for i in at.info)


# -- the search explains its choice ---------------------------------------------------------------
def test_the_search_says_why_its_first_candidate_is_first():
    """The default dataset (4 worker counts, its last doubling at 99 % efficiency): #1 is the scaling law
    the corpus's rule gives such series, and the page says so with the rule's own numbers from the shipped
    prior file; the term search alone (no laws) puts I·b^0.8 (score 1.43) first although #2 scores 1.12:
    all are within the score's noise and #1 is the simplest, in plain words, the jargon in a tooltip."""
    cell = json.loads((ROOT / "perfmodel/uncertainty/extrapolation_prior.json").read_text())["law_rule"]["ideal|3+"]
    at = app_on()
    at.switch_page("pages/model.py").run()
    at.button(key="auto:go").click().run()
    assert not at.exception
    [why] = [plain(i.value) for i in at.info if plain(i.value).startswith("#1")]
    law = cell["law"]
    err = cell["errors"][law]
    assert f"{law} (median error {err:.1f} % over {cell['n_splits']} extrapolations" in why, why
    why = " ".join(auto_select(load_dataset("tf-cnn-resnet50-dgx1"), laws=False, workers=1).explain())
    assert "is listed first although its score (1.43) is not the lowest (1.12, #2)" in why, why
    assert "#1 has 1 fitted parameter (constants and exponents), #2 has 2 fitted parameters" in why
    captions = [c for c in at.caption if c.value.startswith("Tries sums")]
    assert captions and "PMNF" not in captions[0].value and "readability cost" in captions[0].proto.help
