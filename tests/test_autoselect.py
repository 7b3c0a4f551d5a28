"""Automatic term selection and λ by validation.

Known answers come from outside the search: the generating formulas of Extra-P's noise-free
synthetic inputs (written in the files), and a synthetic data-parallel job built here from the
term library's own terms with known constants.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel import Measurements, Model, PerfModelError
from perfmodel.data import measurements_from_extrap, read_extrap
from perfmodel.fitting import cross_validate, holdout
from perfmodel.fitting.evaluate import fold_ids, largest_scale_query
from perfmodel.search import DEFAULT_LAMS, auto_select, lambda_path, search_terms

DATA = Path(__file__).resolve().parent.parent / "data"


def extrap(name):
    return measurements_from_extrap(read_extrap(DATA / "extrap" / name))


def data_parallel_job(noise=0.0, seed=1):
    """T = 3 + 0.004·I·b^0.72 + 0.02·I·log2(p) + 0.25·p, I = ceil(N/(p·b)) (library terms)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in (1, 2, 4, 8, 16, 32):
        for n in (20_000, 40_000, 80_000, 160_000):
            for b in (16, 32, 64, 128):
                it = np.ceil(n / (p * b))
                t = 3 + 0.004 * it * b**0.72 + 0.02 * it * np.log2(p) + 0.25 * p
                rows.append({"gpus": p, "samples": n, "batch": b, "time_s": t * (1 + noise * rng.standard_normal())})
    return Measurements.from_frame(pd.DataFrame(rows), "time_s", {"p": "gpus", "N": "samples", "b": "batch"})


def terms_of(candidate):
    return set(candidate.result.terms)


# -- recovery of generating terms -------------------------------------------------------------
def test_recovers_extrap_two_parameter_5():
    # file comment: 2 + 0.884*s*log2(p), noise-free
    sel = auto_select(extrap("text_two_parameter_5.txt"), lam=0, workers=1)  # noise-free: exact at λ = 0
    best = sel.best
    assert terms_of(best) == {"1", "log2(p)*s"}
    assert best.n_params == 2
    c = best.result.coefficients
    assert c["c0"] == pytest.approx(2.0, rel=1e-6)
    assert c["c1"] == pytest.approx(0.884, rel=1e-6)
    assert best.cv["mape"] < 1e-6 and best.holdout["mape"] < 1e-6


def test_recovers_extrap_two_parameter_6():
    # file comment: 1 + 0.05*s^1.5*p, noise-free
    sel = auto_select(extrap("text_two_parameter_6.txt"), lam=0, workers=1)
    best = sel.best
    assert terms_of(best) == {"1", "p*s^1.5"}
    c = best.result.coefficients
    assert c["c0"] == pytest.approx(1.0, rel=1e-6)
    assert c["c1"] == pytest.approx(0.05, rel=1e-6)


def test_recovers_synthetic_data_parallel_job_with_free_exponent():
    meas = data_parallel_job()
    sel = auto_select(meas, lam=0, workers=1)
    best = sel.best
    assert best.spec == "1 + I*b^e_b + I*log2(p) + p"
    r = best.result
    assert r.params["e_b"] == pytest.approx(0.72, abs=1e-4)
    np.testing.assert_allclose([r.coefficients[f"c{k}"] for k in range(4)], [3, 0.004, 0.02, 0.25], rtol=1e-3)
    assert best.origin == "free exponents"
    # the smallest first among those within noise: no returned candidate is smaller than the best
    assert all(c.n_params >= best.n_params for c in sel.candidates)


def test_noisy_job_still_finds_the_library_terms():
    sel = auto_select(data_parallel_job(noise=0.02), workers=1)
    assert {"1", "I*log2(p)", "p"} <= terms_of(sel.best)
    assert any(t.startswith("I*b^") for t in terms_of(sel.best))
    assert sel.best.cv["mape"] < 3


# -- what is searched, and the validation it uses ------------------------------------------------
def test_search_terms_include_library_pmnf_and_interactions():
    meas = data_parallel_job()
    pool = search_terms(meas)
    exprs = {t.expr for t in pool}
    assert {"1", "I", "N/p", "I*log2(p)", "I*(p-1)/p", "I*p", "p", "I*b^0.7"} <= exprs
    assert {"p^-1", "N^2", "log2(b)"} <= exprs  # PMNF blocks, strong scaling
    assert "N*p^-1" in exprs or "p^-1*N" in exprs  # interactions
    free = {t.free for t in pool if t.free}
    assert "I*b^e_b" in free


def test_log_blocks_need_values_at_least_one():
    df = pd.DataFrame({"x": [0.25, 0.5, 1, 2, 4], "t": [1.0, 2, 3, 4, 5]})
    pool = search_terms(Measurements.from_frame(df, "t", {"x": "x"}))
    assert not any("log2" in t.expr for t in pool)


def test_candidate_numbers_are_those_of_cross_validate_and_holdout():
    meas = extrap("text_two_parameter_5.txt")
    sel = auto_select(meas, workers=1, n_best=1)
    c = sel.best
    model = c.model(popsize=10, maxiter=300)
    cv = cross_validate(model, meas, "kfold", 5, 0)
    q = largest_scale_query(meas)
    assert sel.holdout_query == q == "p > 8"
    _, ho = holdout(model, meas, q)
    assert c.cv["mape"] == pytest.approx(cv.metrics["mape"], abs=1e-9)
    assert c.holdout["mape"] == pytest.approx(ho.metrics["mape"], abs=1e-9)
    assert "5-fold CV" in c.result.validation


def test_fold_ids_are_the_core_folds():
    meas = data_parallel_job()
    folds = fold_ids(meas, "kfold", 5, 0)
    cfg = meas.configurations()
    for f in np.unique(folds):  # whole configurations per fold
        assert not set(cfg[folds == f]) & set(cfg[folds != f])


# -- pool, progress, cancel, report -------------------------------------------------------------
def test_process_pool_gives_the_same_result_as_serial(monkeypatch):
    import perfmodel.parallel as parallel

    monkeypatch.setattr(parallel, "POOL_THRESHOLD", 0.0)  # always hand the rest to the pool
    meas = extrap("text_two_parameter_6.txt")
    a = auto_select(meas, workers=1, n_best=2)
    b = auto_select(meas, workers=2, n_best=2)
    assert [c.spec for c in a.candidates] == [c.spec for c in b.candidates]
    assert [c.score for c in a.evaluated] == pytest.approx([c.score for c in b.evaluated], rel=1e-9, abs=1e-12)
    assert b.workers == 2


def test_progress_is_monotonic_and_ends_done():
    calls = []
    auto_select(extrap("text_two_parameter_5.txt"), workers=1, progress=lambda d, t, m: calls.append((d, t, m)))
    done = [d for d, _, _ in calls]
    assert done == sorted(done)
    assert calls[-1][0] == calls[-1][1] and calls[-1][2] == "done"


def test_cancel_before_anything_is_validated_raises():
    with pytest.raises(PerfModelError, match="stopped"):
        auto_select(extrap("text_two_parameter_5.txt"), workers=1, should_stop=lambda: True)


def test_cancel_during_validation_returns_what_it_has():
    seen = {"validated": 0}

    def progress(done, total, message):
        if message == "validating candidates":
            seen["validated"] += 1

    sel = auto_select(
        extrap("text_two_parameter_5.txt"), workers=1, progress=progress, should_stop=lambda: seen["validated"] >= 2
    )
    assert sel.stopped
    assert seen["validated"] == 2 and len(sel.evaluated) == 2
    assert sel.best.result is not None
    assert "STOPPED" in sel.report()


def test_report_names_what_was_searched():
    sel = auto_select(extrap("text_two_parameter_5.txt"), workers=1, n_best=1)
    text = sel.report()
    for part in (
        "[[Automatic term selection]]",
        "term pool",
        "5-fold CV",
        "hold-out",
        "[[Candidates]]",
        "[[Best model]]",
        "log2(p)*s",
    ):
        assert part in text
    d = sel.to_dict()
    assert d["candidates"][0]["spec"] == sel.best.spec and "result" in d["candidates"][0]


def test_bad_arguments_are_user_errors():
    meas = extrap("text_two_parameter_5.txt")
    with pytest.raises(PerfModelError):
        auto_select(meas, k=1)
    with pytest.raises(PerfModelError):
        auto_select(meas, loss="nope")
    with pytest.raises(PerfModelError):
        auto_select(meas, lam=-1)
    one = Measurements.from_frame(pd.DataFrame({"p": [2, 2], "t": [1.0, 1.1]}), "t", {"p": "p"})
    with pytest.raises(PerfModelError, match="at least 2"):
        auto_select(one)


# -- λ by validation ----------------------------------------------------------------------------
def test_lambda_path_is_finite_and_reproducible(monkeypatch):
    import perfmodel.parallel as parallel

    meas = data_parallel_job(noise=0.03, seed=4)
    model = Model("1 + I*b^0.75 + I*log2(p) + p + N/p + I*p", seed=3)
    lams = [0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]
    a = lambda_path(model, meas, lams, k=5, seed=7, workers=1)
    monkeypatch.setattr(parallel, "POOL_THRESHOLD", 0.0)
    b = lambda_path(model, meas, lams, k=5, seed=7, workers=2)
    assert np.isfinite(a.chosen) and a.chosen in lams
    assert a.chosen == b.chosen and a.lam_min == b.lam_min
    np.testing.assert_allclose(a.cv_mape, b.cv_mape, rtol=1e-9)
    assert a.lam_1se >= a.lam_min
    i_min = list(a.lams).index(a.lam_min)
    i_1se = list(a.lams).index(a.lam_1se)
    assert a.cv_mape[i_1se] <= a.cv_mape[i_min] + a.cv_se[i_min] + 1e-12
    assert a.coefficients.shape == a.shares.shape == (len(lams), 6)
    # a strong L1 penalty shrinks the total share of the penalised terms
    assert a.shares[-1, 1:].sum() < a.shares[0, 1:].sum()
    frame = a.to_frame()
    assert frame["chosen"].sum() == 1 and list(frame.columns[:4]) == ["lam", "cv_mape", "cv_se", "fit_mape"]


def test_lambda_rule_min_picks_the_lowest_cv_error():
    meas = data_parallel_job(noise=0.03, seed=4)
    path = lambda_path(Model("1 + I*b^0.75 + I*log2(p) + p"), meas, [0, 1e-3, 1e-1], rule="min", workers=1)
    assert path.chosen == path.lams[int(np.argmin(path.cv_mape))]


def test_default_lambda_grid_and_bad_input():
    assert DEFAULT_LAMS[0] == 0 and all(np.isfinite(DEFAULT_LAMS))
    meas = extrap("text_two_parameter_5.txt")
    with pytest.raises(PerfModelError):
        lambda_path(Model("1 + s*log2(p)"), meas, [-1.0])
    with pytest.raises(PerfModelError):
        lambda_path(Model("1 + s*log2(p)"), meas, [float("inf")])
    with pytest.raises(PerfModelError):
        lambda_path(Model("1 + s*log2(p)"), meas, rule="median")


# -- many factors, readable terms, the peers' structures, limits -------------------------------------
def many_factor_job(noise=0.02, seed=3, nuisance=3, extra=True):
    """T = 5 + 0.002·I·b^0.8 + 0.01·I·log2(p) (+ 1.5·d^2), I = E·ceil(N/(p·b)), with ``nuisance``
    factors that do not enter the time; 120 random configurations, each measured twice."""
    rng = np.random.default_rng(seed)
    n = 120
    cols = {
        "gpus": rng.choice([1, 2, 4, 8, 16, 32, 64], n),
        "samples": rng.choice([10_000, 40_000, 160_000], n),
        "batch": rng.choice([16, 32, 64, 128, 256], n),
        "epochs": rng.choice([1, 2, 3, 5], n),
        "tier": rng.choice([1, 2, 3, 4, 5], n),
    }
    for k in range(nuisance):
        cols[f"nuisance{k}"] = rng.choice([1, 2, 3, 4, 6, 8], n)
    it = cols["epochs"] * np.ceil(cols["samples"] / (cols["gpus"] * cols["batch"]))
    t = 5 + 0.002 * it * cols["batch"] ** 0.8 + 0.01 * it * np.log2(cols["gpus"])
    if extra:
        t = t + 1.5 * cols["tier"] ** 2.0
    df = pd.DataFrame({k: np.repeat(v, 2) for k, v in cols.items()})
    df["time_s"] = np.repeat(t, 2) * (1 + noise * rng.standard_normal(2 * n))
    factors = {
        "p": "gpus",
        "N": "samples",
        "b": "batch",
        "E": "epochs",
        "d": "tier",
        **{f"q{k}": f"nuisance{k}" for k in range(nuisance)},
    }
    return Measurements.from_frame(df, "time_s", factors)


def test_many_factors_nuisance_factors_are_screened_out_and_the_terms_found():
    meas = many_factor_job()
    sel = auto_select(meas, workers=1)
    assert set(sel.pool["factors"]) == set(meas.factors)
    assert "d" in sel.pool["matter"] and not any(x.startswith("q") for x in sel.pool["matter"])
    terms = terms_of(sel.best)
    assert {"1", "I*b^0.8", "I*log2(p)", "d^2"} == terms
    assert not any("q" in t for c in sel.candidates for t in terms_of(c))
    # no interaction of a nuisance factor was even in the pool: it has fewer terms than the full pool
    assert sel.pool["total"] < len(search_terms(meas))
    c = sel.best.result.coefficients
    assert c["c0"] == pytest.approx(5, rel=0.3)
    assert sel.best.result.coefficients[f"c{sel.best.result.terms.index('d^2')}"] == pytest.approx(1.5, rel=0.1)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_data_from_library_terms_gets_a_model_of_library_terms(seed):
    # T = 5 + 0.002·I·b^0.8 + 0.01·I·log2(p), 3 % noise; five factors (d does not matter), so the
    # factors are screened and the pool holds ~1,000 products
    meas = many_factor_job(noise=0.03, seed=seed, nuisance=0, extra=False)
    sel = auto_select(meas, workers=1)
    assert sel.best.readability == 0
    assert terms_of(sel.best) == {"1", "I*b^0.8", "I*log2(p)"}


def test_within_noise_readable_terms_come_first():
    from perfmodel.search import Candidate, simplest_first

    def cand(spec, n_params, score, readability):
        return Candidate(spec, None, {}, {}, score, n_params, readability=readability)

    opaque = cand("p^(-0.5) + log2(p)", 2, 3.37, 2)  # lower score, same size
    amdahl = cand("1 + 1/p", 2, 4.45, 0)
    bigger = cand("1 + 1/p + p", 3, 3.30, 0)
    block = cand("1 + p^(-0.5)", 2, 5.09, 1)
    assert sorted([opaque, bigger, block, amdahl], key=simplest_first) == [amdahl, bigger, block, opaque]


def test_readability_cost():
    from perfmodel.search import readability_cost

    f = ["p", "N", "b"]
    assert readability_cost("1 + I*b^e_b + I*log2(p) + p + N/p + I*(p-1)/p + I*p", f) == 0
    assert readability_cost("1 + I*b^0.7 + I*max(p-2,0) + I*min(p-1,1)", f) == 0
    assert readability_cost("1 + p^2", f) == 1
    assert readability_cost("p^2*N^-2", f) == 2
    assert readability_cost("p^(-1)*N^2*b^2 + log2(b)", f) == 4


def test_pool_has_the_peers_structures_and_unknown_presets_are_skipped(monkeypatch):
    import perfmodel.search.pool as pool

    exprs = {t.expr for t in search_terms(data_parallel_job())}
    assert {"I*b", "I", "I*log2(p)", "I*(p-1)/p", "I*p", "I*max(p-2,0)", "I*min(p-1,1)"} <= exprs
    monkeypatch.setattr(pool, "PRESET_CANDIDATES", ("data-parallel", "no-such-preset"))
    specs = pool.preset_specs(data_parallel_job())
    assert len(specs) == 1
    assert auto_select(extrap("text_two_parameter_5.txt"), workers=1, n_best=1).best


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"max_terms": 50}, "max_terms 50 is above the limit 10"),
        ({"k": 10**6}, "k 1000000 is above the limit 100"),
        ({"beam": 10**4}, "beam 10000 is above the limit"),
        ({"final_de": {"popsize": 10**6}}, "popsize 1000000 is above the limit 1000"),
        ({"search_de": {"maxiter": 10**9}}, "maxiter 1000000000 is above the limit"),
    ],
)
def test_settings_that_would_run_for_hours_are_refused(kw, match):
    with pytest.raises(PerfModelError, match=match):
        auto_select(extrap("text_two_parameter_5.txt"), workers=1, **kw)


def test_cli_refuses_hour_long_settings_with_one_line(capsys):
    from tests.cli_run import RCV1, run

    base = ["fit", RCV1, "--time", "time_s", "--factor", "m=cores", "--factor", "s=input_fraction", "--out", "x.json"]
    for extra, flag in (
        (["--auto", "--popsize", "1000000"], "--popsize 1000000 is above the limit 1000"),
        (["--auto", "--maxiter", str(10**9)], "--maxiter 1000000000 is above the limit"),
        (["--auto", "--max-terms", "50"], "--max-terms 50 is above the limit 10"),
        (["--terms", "1 + s/m", "--cv", "100000"], "--cv 100000 is above the limit 100"),
    ):
        code, out, err = run(base + extra, capsys)
        assert code == 2 and err.strip().count("\n") == 0 and flag in err and "Traceback" not in err


def test_cli_progress_shows_stage_and_fraction():
    import io

    from perfmodel.cli import _auto_progress

    stream = io.StringIO()
    with _auto_progress(stream, enabled=True) as progress:
        auto_select(extrap("text_two_parameter_5.txt"), workers=1, n_best=1, progress=progress)
    text = stream.getvalue()
    assert "automatic search: " in text and " steps" in text and "%|" in text


def test_app_intervals_use_the_plausible_candidates_as_members():
    import json

    st = pytest.importorskip("streamlit")
    from ui.autoselect_panel import ensemble_for

    meas = extrap("text_two_parameter_6.txt")
    sel = auto_select(meas, workers=1, n_best=3)
    st.session_state["data_key"] = "data"
    st.session_state["auto:selection"] = {"key": ("data", "{}"), "selection": sel}
    try:
        shown = sel.candidates[0].model().fit(meas)  # the user fitted candidate #1's terms
        ens = json.loads(ensemble_for(shown))
        assert len(ens["members"]) == len(sel.candidates) - 1 >= 1
        assert ens["scores"] == [c.score for c in sel.candidates] and ens["noise"] == sel.noise
        other = Model("1 + p + s").fit(meas)  # terms of no candidate: no members
        assert ensemble_for(other) == ""
        st.session_state["data_key"] = "other data"
        assert ensemble_for(shown) == ""
    finally:
        del st.session_state["data_key"], st.session_state["auto:selection"]


# -- too few configurations to validate; overlap variants ------------------------------------
def _strong_scaling_series(ps, seed=0):
    """A fixed job of N = 1.28M samples, b = 64, on the GPU counts ``ps`` (one node):
    T = 20 + 0.05·I + 0.01·I·log2(p) with I = ceil(N/(p·b)), 1 % noise, two repeats."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in ps:
        it = np.ceil(1_280_000 / (p * 64))
        for _ in range(2):
            t = (20 + 0.05 * it + 0.01 * it * np.log2(p)) * (1 + 0.01 * rng.standard_normal())
            rows.append({"gpus": p, "samples": 1_280_000, "batch": 64, "time_s": t})
    return Measurements.from_frame(pd.DataFrame(rows), "time_s", {"p": "gpus", "N": "samples", "b": "batch"})


def test_three_configurations_show_the_papers_model_first_and_say_why():
    from perfmodel.language import preset_spec

    meas = _strong_scaling_series((1, 2, 4))
    # three worker counts: the corpus's rule chooses the law, and says why; it extrapolates the formula
    ruled = auto_select(meas, workers=1)
    assert ruled.best.origin.startswith("law: ") and "3 measured worker counts" in ruled.rule
    truth = 20 + 0.05 * 2500 + 0.01 * 2500 * 3
    assert abs(ruled.best.result.predict({"p": [8], "N": [1_280_000], "b": [64]})[0] / truth - 1) < 0.10
    # the term search alone (no laws): too few configurations to validate, the paper's model first
    sel = auto_select(meas, workers=1, laws=False)
    assert sel.best.origin == "preset"
    assert sel.best.spec == preset_spec("data-parallel", ["p", "N", "b"], varying=["p"])
    assert "2 configuration(s)" in sel.prior and "data-parallel" in sel.prior
    assert "note: the validation trains on 2" in sel.report()
    assert sel.to_dict()["prior"] == sel.prior
    # its validation score is no evidence: the intervals weigh it like the best validated candidate
    from perfmodel.search import plausible

    shown, others, averaging = plausible(sel)
    assert shown is sel.best.result and others and averaging["scores"][0] == min(c.score for c in sel.candidates)
    # the formula's truth at p = 8: the generic model with its sync term is closer than `I` alone
    pred = sel.best.result.predict({"p": [8], "N": [1_280_000], "b": [64]})[0]
    assert abs(pred / truth - 1) < 0.10


def test_enough_configurations_let_the_validation_choose():
    sel = auto_select(_strong_scaling_series((1, 2, 4, 8, 16, 32)), workers=1)
    assert sel.prior == "" and not sel.rule  # six worker counts: the series chooses its own terms
    laws = {c.spec for c in sel.evaluated if c.origin == "law"}  # and the laws compete among them
    assert "p^e1" in laws and "1 + I" in laws, laws


def test_overlap_variant_of_library_terms():
    from perfmodel.search import overlap_variant, readability_cost

    pool = {t.expr: t for t in search_terms(data_parallel_job())}
    spec, bounds = overlap_variant([pool["1"], pool["I*b"], pool["I*log2(p)"], pool["p"]], ["p", "N", "b"])
    assert spec == "1 + p + overlap(I*b, I*log2(p); g)"
    assert bounds == {"g": (1.0, 10.0)}
    assert readability_cost(spec, ["p", "N", "b"]) == 0
    assert overlap_variant([pool["1"], pool["I*b"]], ["p", "N", "b"]) is None  # nothing to overlap with


def test_search_finds_overlapped_compute_and_synchronisation():
    """T = 5 + I·(a·b)⊕(s·log2 p) with γ = 3 (Pollux's structure): the overlap variant beats the plain sum."""
    rng = np.random.default_rng(3)
    rows = []
    for p in (1, 2, 4, 8, 16, 32):
        for b in (16, 32, 64, 128):
            it = np.ceil(1_000_000 / (p * b))
            a, s = 0.002 * b, 0.1 * np.log2(p)
            t = 5 + it * (a**3 + s**3) ** (1 / 3)
            rows.append(
                {"gpus": p, "samples": 1_000_000, "batch": b, "time_s": t * (1 + 0.005 * rng.standard_normal())}
            )
    meas = Measurements.from_frame(pd.DataFrame(rows), "time_s", {"p": "gpus", "N": "samples", "b": "batch"})
    sel = auto_select(meas, workers=1)
    table = sel.table()
    overlapped = table[table.origin == "overlap"]
    assert len(overlapped)
    assert "overlap(" in sel.best.spec
    assert overlapped.score.min() < table[table.origin == "screened"].score.min()


def test_optimus_server_terms_join_the_pool_and_are_found():
    """Optimus's synchronous parameter server per iteration, a·b + b0 + c·p/s + e·s (w = p, s = servers),
    on five worker counts: enough for the series to choose its own terms (with four, the corpus's rule
    picks a scaling law)."""
    rng = np.random.default_rng(0)
    rows = []
    for p in (2, 4, 8, 16, 32):
        for s in (1, 2, 4):
            for b in (32, 64):
                it = 1e6 / (p * b)
                t = it * (0.001 * b + 0.01 + 0.02 * p / s + 0.005 * s)
                rows.append({"w": p, "ps": s, "batch": b, "samples": 1e6, "t": t * (1 + 0.01 * rng.standard_normal())})
    meas = Measurements.from_frame(pd.DataFrame(rows), "t", {"p": "w", "servers": "ps", "b": "batch", "N": "samples"})
    assert {"I*p/servers", "I*servers"} <= {t.expr for t in search_terms(meas) if t.kind == "library"}
    best = auto_select(meas, workers=1).best
    assert {"I*p/servers", "I*servers"} <= set(best.result.terms)
    assert best.result.metrics["mape"] < 2.0
