"""overlap(A, B; g) = (A^g + B^g)^(1/g): parsing, refusals, fitting, contributions, files, exports."""

import json

import numpy as np
import pandas as pd
import pytest

import perfmodel
from perfmodel.errors import PerfModelError
from perfmodel.language import parse_expression
from perfmodel.language.expression import MAX_LENGTH
from perfmodel.report import python_snippet

SYMBOLS = ["p", "b", "N"]
SPEC = "overlap(I + I*b, I*log2(p) + I*p; g)"
TRUE_C = [0.02, 0.001, 0.01, 0.0005]
TRUE_G = 2.5


def _data(repeats: int = 1, noise: float = 0.0, seed: int = 0) -> pd.DataFrame:
    p = np.repeat(np.repeat([1, 2, 4, 8, 16], 4), repeats)
    b = np.repeat(np.tile([16, 32, 64, 128], 5), repeats)
    n = np.full(len(p), 1e5)
    it = np.ceil(n / (p * b))
    a = it * (TRUE_C[0] + TRUE_C[1] * b)
    c = it * (TRUE_C[2] * np.log2(p) + TRUE_C[3] * p)
    t = (a**TRUE_G + c**TRUE_G) ** (1 / TRUE_G)
    t = t * np.exp(np.random.default_rng(seed).normal(0, noise, len(t)))
    return pd.DataFrame({"gpus": p, "batch": b, "samples": n, "time_s": t})


FACTORS = {"p": "gpus", "b": "batch", "N": "samples"}


def test_parse_semicolon_and_comma_forms_are_the_same():
    a, _ = parse_expression(SPEC, SYMBOLS)
    b, _ = parse_expression(SPEC.replace(";", ","), SYMBOLS)
    assert a.text() == b.text() == SPEC
    assert [t.text for t in a.terms] == ["I", "I*b", "I*log2(p)", "I*p"]
    assert a.params == ("g",) and a.bounds["g"] == (1.0, 10.0)
    assert a.overlaps[0].a == (0, 1) and a.overlaps[0].b == (2, 3)
    again, _ = parse_expression(a.text(), SYMBOLS)
    assert again.text() == a.text()


def test_a_multiplier_is_distributed_into_the_inner_terms():
    e, _ = parse_expression("1 + I*overlap(1 + b, log2(p); g)", SYMBOLS)
    assert [t.text for t in e.terms] == ["1", "I", "I*b", "I*log2(p)"]
    assert e.text() == "1 + overlap(I + I*b, I*log2(p); g)"


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("overlap(p, b; 2)", "parameter name such as g, got '2'"),
        ("overlap(p, b)", "takes three arguments"),
        ("overlap(p, b; g; h)", "second ';'"),
        ("min(p; b)", "';' at position 6 is only allowed in overlap"),
        ("log(overlap(p, b; g))", "must be a term of its own"),
        ("overlap(p, b; g)^2", "must be a term of its own"),
        ("overlap(overlap(p, b; h), N; g)", "cannot be nested"),
        ("overlap(b, N; p)", "'p' is a factor symbol"),
        ("overlap(b, N; log2)", "function name"),
        ("-overlap(p, b; g)", "cannot be subtracted"),
        ("overlap(p^g, b; g)", "'g' is also used inside"),
        ("overlap(p, b; g) + overlap(p*b, N; g)", "used by two overlaps"),
        ("N^g + overlap(p, b; g)", "'g' is also used by another term"),
        ("overlap(p; b, g)", "must follow A, B"),
        ("overlap(p, b; g, h)", "takes three arguments"),
        ("overlap(p, b; g=2)", "character '=' at position 16"),
    ],
)
def test_misuse_is_refused_naming_the_token(spec, needle):
    with pytest.raises(PerfModelError) as err:
        parse_expression(spec, SYMBOLS)
    assert needle in str(err.value)


def test_a_hold_out_query_refuses_overlap():
    from perfmodel.language.query import evaluate_query

    with pytest.raises(PerfModelError, match="overlap"):
        evaluate_query("overlap(p, b, g) > 1", {"p": np.arange(3.0), "b": np.arange(3.0), "g": np.ones(3)})


def test_same_limits_apply():
    long = "overlap(" + " + ".join(f"p^{i % 9}*b" for i in range(400)) + ", N; g)"
    assert len(long) > MAX_LENGTH
    with pytest.raises(PerfModelError, match="limit is"):
        parse_expression(long, SYMBOLS)
    with pytest.raises(PerfModelError, match="not allowed"):
        parse_expression("overlap(p.x, b; g)", SYMBOLS)


def test_fit_recovers_gamma_and_coefficients_exactly():
    r = perfmodel.Model(SPEC, lam=0).fit(_data(), time="time_s", factors=FACTORS)
    assert np.allclose(list(r.coefficients.values()), TRUE_C, rtol=1e-6)
    assert r.params["g"] == pytest.approx(TRUE_G, rel=1e-6)
    assert r.metrics["mape"] < 1e-6


def test_fit_recovers_gamma_with_noise():
    r = perfmodel.Model(SPEC).fit(_data(repeats=3, noise=0.02, seed=3), time="time_s", factors=FACTORS)
    assert r.params["g"] == pytest.approx(TRUE_G, rel=0.25)
    assert np.allclose(list(r.coefficients.values())[:2], TRUE_C[:2], rtol=0.1)


def test_contributions_follow_the_rule_and_sum_to_the_prediction():
    df = _data()
    r = perfmodel.Model(SPEC, lam=0).fit(df, time="time_s", factors=FACTORS)
    contrib = r.contributions(df).to_numpy()
    assert np.allclose(contrib.sum(axis=1), r.predict(df), rtol=1e-12)
    # the rule, from the generating formula: side A gets O·a^g/(a^g + b^g), split by plain values
    it = np.ceil(df.samples / (df.gpus * df.batch)).to_numpy()
    a1, a2 = TRUE_C[0] * it, TRUE_C[1] * it * df.batch.to_numpy()
    a, b = a1 + a2, it * (TRUE_C[2] * np.log2(df.gpus) + TRUE_C[3] * df.gpus).to_numpy()
    o = (a**TRUE_G + b**TRUE_G) ** (1 / TRUE_G)
    assert np.allclose(contrib[:, 1], o * a**TRUE_G / (a**TRUE_G + b**TRUE_G) * a2 / a, rtol=1e-5)
    saved = r.overlap_savings(df)["g"].to_numpy()
    assert np.allclose(saved, a + b - o, rtol=1e-5)
    assert sum(r.shares.values()) == pytest.approx(1.0)


def test_g_equal_one_is_the_plain_sum():
    df = _data()
    plain = perfmodel.Model("I + I*b + I*log2(p) + I*p", lam=0).fit(df, time="time_s", factors=FACTORS)
    r = perfmodel.Model(SPEC, lam=0, bounds={"g": (1.0, 1.0 + 1e-12)}).fit(df, time="time_s", factors=FACTORS)
    assert np.allclose(r.predict(df), plain.predict(df), rtol=1e-3)  # DE against the exact solve
    e, _ = parse_expression(SPEC, SYMBOLS)
    parts = np.abs(np.random.default_rng(0).normal(size=(4, 7)))
    assert np.allclose(e.combine(parts, np.array([1.0])), parts)
    assert np.allclose(e.predict_from(parts, np.array([1.0])), parts.sum(axis=0))


def test_json_round_trip_latex_and_python_export():
    df = _data()
    r = perfmodel.Model(SPEC, lam=0).fit(df, time="time_s", factors=FACTORS)
    back = perfmodel.FitResult.from_json(r.to_json())
    assert back.expression == SPEC
    assert np.allclose(back.predict(df), r.predict(df), rtol=1e-12)
    assert json.loads(r.to_json())["params"]["g"] == pytest.approx(TRUE_G, rel=1e-6)
    assert r"^{1/2.5}" in r.latex()
    assert "overlap(" in r.formula() and "; 2.5)" in r.formula()
    ns: dict = {}
    exec(python_snippet(r), ns)  # generated from the validated model with repr literals
    got = ns["predict"](p=df.gpus.to_numpy(), b=df.batch.to_numpy(), N=df.samples.to_numpy())
    assert np.allclose(got, r.predict(df), rtol=1e-12)


def test_intervals_work_for_overlap_models():
    df = _data(repeats=3, noise=0.03, seed=1)
    r = perfmodel.Model(SPEC).fit(df, time="time_s", factors=FACTORS)
    meas = perfmodel.Measurements.from_frame(df, "time_s", FACTORS)
    perfmodel.compute_intervals(r, meas, calibrate=False)
    lo, hi = r.constant_intervals()["g"]
    assert lo < r.params["g"] < hi
    band = r.predict({"p": [32], "b": [64], "N": [1e5]}, interval=0.9)
    assert (band.predicted_low < band.predicted_time).all() and (band.predicted_time < band.predicted_high).all()
    back = perfmodel.FitResult.from_json(r.to_json())
    assert np.allclose(back.predict(df, interval=0.9).to_numpy(), r.predict(df, interval=0.9).to_numpy())


def test_constants_table_names_the_overlaps_gamma_and_what_each_term_overlaps_with():
    from perfmodel.report import constants_table

    rows = [
        {"p": p, "b": b, "t": 2 + ((0.01 * b) ** 2 + (0.3 * np.log2(p)) ** 2) ** 0.5}
        for p in (1, 2, 4, 8, 16)
        for b in (16, 32, 64)
    ]
    res = perfmodel.Model("1 + overlap(b, log2(p); g)", lam=0).fit(
        pd.DataFrame(rows), time="t", factors={"p": "p", "b": "b"}
    )
    table = constants_table(res)
    [g] = table[table["name"] == "g"].to_dict("records")
    assert g["term"] == "overlap γ" and "hide" in g["meaning"] and g["value"] == pytest.approx(2, rel=1e-3)
    # each side names the other; the constant and γ overlap nothing
    assert table.set_index("term")["overlapped with"].to_dict() == {
        "1 (constant)": "",
        "b": "log2(p)",
        "log2(p)": "b",
        "overlap γ": "",
    }
    plain = constants_table(
        perfmodel.Model("1 + b + log2(p)").fit(pd.DataFrame(rows), time="t", factors={"p": "p", "b": "b"})
    )
    assert "overlapped with" not in plain.columns
