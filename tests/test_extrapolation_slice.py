"""The corpus of real series, its extrapolation splits and the prior learned from them (short, seeded).

* the corpus loader finds every source we hold (skipped where ../shared/refdata is absent);
* a split never puts a training row among its tests, and its distance and node crossing are right
  on series checked by hand (DawnBench fast.ai: 32/64/128 V100 on 4/8/16 nodes; TF CNN on one
  8-GPU server);
* the leave-one-source-out learning never sees the source it scores;
* the κ solver recovers the spread per doubling of known Gaussian errors;
* the shipped prior file loads and is what the product uses by default.
"""

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
REFDATA = ROOT.parent / "shared" / "refdata"
needs_refdata = pytest.mark.skipif(not REFDATA.is_dir(), reason="../shared/refdata not present")
sys.path.insert(0, str(ROOT / "benchmarks"))


def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def corpus():
    return _module("corpus", ROOT / "benchmarks" / "corpus.py")


@pytest.fixture(scope="module")
def learn_prior():
    return _module("learn_prior", ROOT / "scripts" / "learn_prior.py")


@pytest.fixture(scope="module")
def series(corpus):
    if not REFDATA.is_dir():
        pytest.skip("../shared/refdata not present")
    return corpus.load_series()


@needs_refdata
def test_every_source_is_found(corpus, series):
    found = {s.source for s in series}
    assert found == set(corpus.FAMILIES), set(corpus.FAMILIES) ^ found
    assert set(corpus.SOURCE_DATA) == set(corpus.FAMILIES)
    for s in series:  # every series has its nodes and a positive time
        assert "nodes" in s.meas.factors and np.all(s.meas.y > 0)
    assert len(series) >= 300


@needs_refdata
def test_splits_never_leak_training_rows(corpus, series):
    rng = np.random.default_rng(0)
    picked = [series[i] for i in rng.choice(len(series), size=40, replace=False)]
    for s in picked:
        for sp in corpus.series_splits(s):
            tr, te = sp.train.frame, sp.test.frame
            assert not set(tr.index) & set(te.index), sp.key  # subsets keep the series' row labels
            assert np.all(sp.train.values("p") <= sp.cut) and np.all(sp.test.values("p") > sp.cut)
            assert np.allclose(sp.distance, np.log2(sp.test.values("p") / sp.cut))
            assert np.all((sp.distance > 0) & (sp.distance <= 3 + 1e-9))


@needs_refdata
def test_distance_and_crossing_on_hand_checked_series(corpus, series):
    by = {(s.source, s.name): s for s in series}
    # DawnBench fast.ai ResNet-50: 32, 64, 128 V100 on 4, 8, 16 p3.16xlarge machines. The one split
    # trains on 32 and 64 (8 nodes at most) and predicts 128 GPUs: one doubling, on more nodes.
    (sp,) = corpus.series_splits(by[("dawnbench", "fastai-resnet50-p3")])
    assert sp.cut == 64 and sp.train.n_rows == 2 and list(sp.test.values("p")) == [128]
    assert np.allclose(sp.distance, [1.0]) and list(sp.crosses_nodes) == [True]
    # TF CNN on one AWS p2.8xlarge (1, 2, 4, 8 K80, one machine): never a node crossing.
    splits = corpus.series_splits(by[("tf-cnn-2017", "aws-k80/AlexNet/synthetic/512")])
    assert [(s.cut, list(s.distance), list(s.crosses_nodes)) for s in splits] == [
        (2.0, [1.0, 2.0], [False, False]),
        (4.0, [1.0], [False]),
    ]
    assert corpus.bucket(1.0) == "(0,1]" and corpus.bucket(1.0001) == "(1,2]" and corpus.bucket(3.0) == "(2,3]"


def _records(n_per_source=400, sources=("a", "b", "c", "d", "e"), s_same=0.10, s_cross=0.25, seed=0):
    """Synthetic learning records: log errors N(0, (s·d)²) with s per crossing, no band, no evidence."""
    rng = np.random.default_rng(seed)
    rows = []
    for src in sources:
        d = rng.choice([0.5, 1.0, 2.0, 3.0], size=n_per_source)
        cross = rng.random(n_per_source) < 0.5
        z = rng.standard_normal(n_per_source) * np.where(cross, s_cross, s_same) * d
        t = np.full(n_per_source, 10.0)
        rows.append(
            pd.DataFrame(
                {
                    "source": src,
                    "family": "f",
                    "series": [f"{src}{i % 7}" for i in range(n_per_source)],
                    "cut": 1.0,
                    "y_true": t * np.exp(z),
                    "pred": t,
                    "low": t * 0.9,
                    "high": t * 1.1,
                    "band_low": 0.0,
                    "band_high": 0.0,
                    "d_model": d,
                    "distance": d,
                    "evidence": 0.0,
                    "n_evidence": 0,
                    "crossing": np.where(cross, "crosses_nodes", "same_nodes"),
                    "bucket": "(0,1]",
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def test_solver_recovers_a_known_spread_per_doubling(learn_prior):
    r = learn_prior.prepare(_records())
    for crossing, s in (("same_nodes", 0.10), ("crosses_nodes", 0.25)):
        k = learn_prior.solve_kappa(r[r["crossing"] == crossing], n0=3.0)
        assert k == pytest.approx(s, rel=0.10), (crossing, k)
    fit = learn_prior.learn(r, (1.0, 3.0), gammas=(0.0,))
    assert fit["kappa"]["same_nodes"] < fit["kappa"]["unknown"] < fit["kappa"]["crosses_nodes"]
    # with the crossing known, the 90 % intervals cover about 90 % of either class
    for crossing in ("same_nodes", "crosses_nodes"):
        sub = r[r["crossing"] == crossing]
        cov = learn_prior.covered(sub, learn_prior.row_kappas(sub, fit["kappa"], fit["n0"])).mean()
        assert cov == pytest.approx(0.90, abs=0.02)


def test_hindsight_floor_is_the_errors_own_90th_percentile_per_doubling(learn_prior):
    """Log errors N(0, (0.2·d)²): the band that knew them has κ = 1.645 × 0.2 per doubling (the normal's
    90 % half-width), per source and per split alike, and each row's half-width is sinh(κ·d)."""
    r = learn_prior.prepare(_records(n_per_source=2000, s_same=0.2, s_cross=0.2))
    d = r["d_model"].to_numpy(float)
    for by in (["source"], ["source", "series", "cut"]):
        kappa = np.arcsinh(learn_prior.hindsight_halfwidths(r, by)) / d
        assert np.median(kappa) == pytest.approx(1.6449 * 0.2, rel=0.06), by
    table = learn_prior.hindsight_report(r.assign(low_known=r["pred"] / 2, high_known=r["pred"] * 2))
    assert "| all | 10000 |" in table and table.endswith("| 75.0 |")  # the LOSO column: (2 − 0.5) / 2


def test_a_band_whose_noise_rests_on_few_degrees_of_freedom_learns_its_own_scale(learn_prior):
    """Rows whose noise is the stated prior or rests on 1-2 degrees of freedom carry a band twice as wide
    as their errors (N(0, 0.05²), nothing growing with distance) need; the others (3 or more) one as
    wide as they need. The interval score, a proper score, is least at the errors' own 5 % and 95 %
    quantiles: the prior-noise band is scaled by 0.5 and the other stays whole."""
    r = _records(n_per_source=400, s_same=0.0, s_cross=0.0, seed=4)
    rng = np.random.default_rng(5)
    prior_noise = rng.random(len(r)) < 0.5
    z = rng.standard_normal(len(r)) * 0.05
    w = 1.6449 * 0.05 * np.where(prior_noise, 2.0, 1.0)
    df = np.where(prior_noise, rng.choice([np.nan, 1.0, 2.0], size=len(r)), rng.choice([3.0, 10.0], size=len(r)))
    r = r.assign(
        y_true=r["pred"] * np.exp(z),
        band_low=w,
        band_high=w,
        noise_df=df,
        noise_source=np.where(np.isnan(df), "prior", "residuals"),
    )
    r = learn_prior.prepare(r)
    assert np.array_equal(r["few_dof"].to_numpy(bool), prior_noise)
    grid = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    fit = learn_prior.learn(r, (1.0,), (1.0,), (0.0,), few_dof_scales=grid, few_dof_band_scale=None)
    assert fit["band_scale"] == 1.0 and fit["few_dof_band_scale"] == pytest.approx(0.5, abs=0.1)
    assert fit["kappa"]["unknown"] < 0.01  # nothing left for the widening per doubling to cover
    lo, hi = learn_prior.halves(r, 0.0, (fit["band_scale"], fit["few_dof_band_scale"]))
    for m in (prior_noise, ~prior_noise):  # each kind of row covered about 90 % of the time
        assert np.mean((r["z"].to_numpy()[m] >= -lo[m]) & (r["z"].to_numpy()[m] <= hi[m])) == pytest.approx(
            0.9, abs=0.04
        )
    # a fixed scale (the shipped file's, learn_prior.FEW_DOF_BAND_SCALE) scales those rows' band alone,
    # and κ covers what the narrower band leaves: at 0.25 the prior-noise rows' band is half what they
    # need, the widening per doubling (d = 1-3) takes them back towards 90 %
    fixed = learn_prior.learn(r, (1.0,), (1.0,), (0.0,), few_dof_scales=(), few_dof_band_scale=0.25)
    assert fixed["few_dof_band_scale"] == 0.25 and fixed["kappa"]["unknown"] > 0.01
    lo, hi = learn_prior.halves(r, learn_prior.row_kappas(r, fixed["kappa"], fixed["n0"], False), (1.0, 0.25))
    z = r["z"].to_numpy()
    assert np.average((z >= -lo) & (z <= hi), weights=learn_prior.learning_weights(r)) == pytest.approx(0.9, abs=0.01)
    # without such rows the scale is not learned: it stays the other band's
    plain = learn_prior.learn(
        learn_prior.prepare(_records(n_per_source=100)), (1.0,), (1.0,), (0.0,), few_dof_scales=(0.5,)
    )
    assert plain["few_dof_band_scale"] == plain["band_scale"] == 1.0


def test_every_source_weighs_the_same_in_the_report_and_as_its_rows_square_root_in_learning(learn_prior):
    r = learn_prior.prepare(_records(n_per_source=50))
    r = pd.concat([r, learn_prior.prepare(_records(n_per_source=2000, sources=("big",), seed=1))], ignore_index=True)
    per = pd.Series(learn_prior.source_weights(r)).groupby(r["source"]).sum()
    assert np.allclose(per.to_numpy(), 1.0)
    per = pd.Series(learn_prior.learning_weights(r)).groupby(r["source"]).sum()
    assert per["big"] == pytest.approx(np.sqrt(2000)) and per["a"] == pytest.approx(np.sqrt(50))


def test_each_scaling_class_learns_its_own_spread(learn_prior):
    """Series whose last doubling ran at >= 90 % efficiency (u = 0.05) with errors of 3 % per doubling,
    and series that had stopped scaling (u = 1.2) with 30 %: each class recovers its own κ, and the
    product's class of a shortfall is the script's."""
    from perfmodel.uncertainty.prior import for_series

    well = _records(n_per_source=300, s_same=0.03, s_cross=0.03, seed=2).assign(shortfall=0.05)
    stopped = _records(n_per_source=300, s_same=0.3, s_cross=0.3, seed=3).assign(shortfall=1.2)
    r = learn_prior.prepare(pd.concat([well, stopped], ignore_index=True))
    assert set(r["scaling_class"]) == {"scales well", "scaling stopped"}
    fit = learn_prior.learn_classes(r, (1.0,), (1.0,), (0.0,))
    assert fit["classes"]["scales well"]["kappa"]["unknown"] == pytest.approx(0.03, rel=0.15)
    assert fit["classes"]["scaling stopped"]["kappa"]["unknown"] == pytest.approx(0.3, rel=0.15)
    assert not fit["classes"]["scales partly"]["own"]  # no rows: the whole corpus's
    lo, hi = learn_prior.class_halves(r, fit)
    z = r["z"].to_numpy()
    for name in ("scales well", "scaling stopped"):
        m = (r["scaling_class"] == name).to_numpy()
        assert np.mean((z[m] >= -lo[m]) & (z[m] <= hi[m])) == pytest.approx(0.90, abs=0.02)
    doc = {
        "kappa": fit["kappa"],
        "classes": [
            {
                "name": n,
                "efficiency_min": c["efficiency_min"],
                "kappa": c["kappa"],
                "pseudo_configurations": c["n0"],
                "band_scale": c["band_scale"],
            }
            for n, c in fit["classes"].items()
        ],
    }
    for u in (0.0, 0.15, 0.16, 0.5, 0.52, 2.0):
        assert for_series(doc, u)["scaling_class"]["name"] == learn_prior.row_class(u), u


def test_leave_one_source_out_never_uses_the_scored_source(learn_prior, monkeypatch):
    r = learn_prior.prepare(_records(n_per_source=60))
    for src in ("a", "c"):
        train = learn_prior.training_rows(r, src)
        assert src not in set(train["source"]) and set(train["source"]) == set("abcde") - {src}
    assert set(learn_prior.training_rows(r, None)["source"]) == set("abcde")
    seen = []
    real = learn_prior.learn_classes

    def spy(rows, *grids, **kw):
        seen.append(set(rows["source"]))
        return real(rows, *grids, **kw)

    monkeypatch.setattr(learn_prior, "learn_classes", spy)
    scored, learned = learn_prior.loso(r, (1.0,), (1.0,), gammas=(0.0, 1.0))
    assert sorted(learned) == list("abcde")
    for src, used in zip(sorted(learned), seen, strict=True):
        assert src not in used and used == set("abcde") - {src}
    assert np.isfinite(scored[["low_known", "high_known", "low_unknown", "high_unknown"]].to_numpy()).all()


def test_the_shipped_prior_loads_and_is_the_default():
    import inspect

    from perfmodel import compute_intervals
    from perfmodel.fitting.extrapolation import CROSSINGS
    from perfmodel.uncertainty import calibration
    from perfmodel.uncertainty.prior import PRIOR_FILE, load_prior

    assert PRIOR_FILE.is_file()
    prior = load_prior()
    assert set(prior["kappa"]) == set(CROSSINGS) and prior["pseudo_configurations"] > 0
    assert prior["n_series"] >= 100 and prior["sources"] and prior["created"]
    assert 0 < prior["kappa"]["same_nodes"] < 2 and 0 < prior["kappa"]["crosses_nodes"] < 2
    assert inspect.signature(calibration.compute).parameters["prior"].default is True
    assert inspect.signature(compute_intervals).parameters["prior"].default is True


def test_the_noise_prior_is_recovered_from_fits_drawn_from_it(learn_prior):
    """Smyth's (2004) model, drawn: each fit's true σ² from a scaled inverse-χ² (ν0 = 5 about
    σ0 = 4 %), its estimate s² = σ²·χ²_d / d on 1-7 degrees of freedom. The weighted marginal
    likelihood gives back ν0 and σ0; a fit of the stated prior noise is not one of its points."""
    rng = np.random.default_rng(0)
    n, nu0, s0 = 600, 5.0, 0.04
    sigma2 = s0**2 * nu0 / rng.chisquare(nu0, n)
    d = rng.integers(1, 8, n).astype(float)
    fits = pd.DataFrame(
        {
            "source": rng.choice(list("abcdef"), n),
            "series": np.arange(n).astype(str),
            "cut": 1.0,
            "noise_source": "residuals",
            "noise_sigma": np.sqrt(sigma2 * rng.chisquare(d) / d),
            "noise_df": d,
        }
    )
    stated = fits.iloc[:50].assign(
        series="p" + fits["series"].iloc[:50], noise_source="prior", noise_sigma=0.05, noise_df=np.nan
    )
    got = learn_prior.learn_noise_prior(pd.concat([fits, stated], ignore_index=True))
    assert got["n_fits"] == n and got["n_sources"] == 6
    assert got["sigma"] == pytest.approx(s0, rel=0.1) and got["df"] == pytest.approx(nu0, rel=0.4)
    # the moderated noise on its records: σ² the degrees-of-freedom-weighted mean, on d + ν0
    rec = learn_prior.apply_noise_prior(fits.assign(band_low=0.0, band_high=0.0).iloc[:1], {"sigma": 0.04, "df": 5.0})
    s, dd = fits["noise_sigma"].iloc[0], fits["noise_df"].iloc[0]
    from scipy import stats

    want = math.sqrt((5 * 0.04**2 + dd * s**2) / (5 + dd)) * stats.t.ppf(0.95, 5 + dd)
    assert rec["band_low"].iloc[0] == pytest.approx(want, rel=1e-6)


def test_a_prior_on_the_noise_moderates_the_fit_as_the_script_emulates_it(learn_prior, tmp_path):
    """A prior file's ``noise`` (σ0, ν0): the product's noise is the moderated one, its band inside
    the measured range is the script's apply_noise_prior of the band recorded without it, the facts
    say so, a stored fit keeps its own estimate, and a stored prior noise that is not a number is refused."""
    from perfmodel import Measurements, Model, PerfModelError, compute_intervals
    from perfmodel.fitting.extrapolation import moderated_noise
    from perfmodel.fitting.members import Uncertainty

    rng = np.random.default_rng(3)
    p = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    meas = Measurements.from_frame(
        pd.DataFrame({"workers": p, "time_s": (5 + 100 / p) * np.exp(rng.normal(0, 0.03, 5))}),
        "time_s",
        {"p": "workers"},
    )
    prior = {
        "format": "perfmodel.prior/1",
        "kappa": {"same_nodes": 0.1, "crosses_nodes": 0.2, "unknown": 0.2},
        "pseudo_configurations": 2.0,
        "level": 0.9,
        "n_series": 3,
        "noise": {"sigma": 0.02, "df": 4.0},
    }
    base = compute_intervals(Model(terms="1 + 1/p").fit(meas), meas, replicates=30, prior=False)._uncertainty()
    res = compute_intervals(Model(terms="1 + 1/p").fit(meas), meas, replicates=30, prior=prior)
    unc = res._uncertainty()
    own = base.noise
    assert own.source == "residuals" and own.df == 3
    assert (unc.noise.sigma, unc.noise.df) == pytest.approx(moderated_noise(own.sigma, own.df, 0.02, 4.0))
    assert unc.noise.df == 7 and unc.noise.own == (own.sigma, own.df)
    at = {"p": p}
    t, lo, hi = base.interval(at, 0.9, widen=False)
    rec = pd.DataFrame(
        {
            "band_low": np.log(t / lo),
            "band_high": np.log(hi / t),
            "noise_source": own.source,
            "noise_sigma": own.sigma,
            "noise_df": own.df,
        }
    )
    want = learn_prior.apply_noise_prior(rec, prior["noise"])
    t1, lo1, hi1 = unc.interval(at, 0.9, widen=False)
    assert np.allclose(np.log(t1 / lo1), want["band_low"]) and np.allclose(np.log(hi1 / t1), want["band_high"])
    assert "pseudo-degrees of freedom" in dict(res.interval_facts())["noise of one run"]
    d = unc.to_dict()
    assert Uncertainty.from_dict(d).noise == unc.noise
    from perfmodel.uncertainty.prior import load_prior

    for i, nz in enumerate(({"sigma": "small", "df": 4.0}, {"sigma": 0.02, "df": "4"})):  # the facts format both
        bad = dict(prior, noise=nz)  # a stored fit's prior and a prior file are checked when read
        with pytest.raises(PerfModelError, match="noise"):
            Uncertainty.from_dict(dict(d, prior=bad))
        path = tmp_path / f"prior{i}.json"  # one file each: prior files are cached by path
        path.write_text(json.dumps(bad))
        with pytest.raises(PerfModelError, match="noise"):
            load_prior(path)


def _law_table(weighted_gain: float, cls: str, n: int = 40, seed: int = 2) -> pd.DataFrame:
    """A split table of ``n`` deep-learning splits of one cell: every law errs 20 % but the power law,
    which errs 5 % ± 2 %, and its weighted variant, which errs ``weighted_gain`` points less ± 1 point."""
    from perfmodel.search.laws import LAWS

    rng = np.random.default_rng(seed)
    pl = 0.05 + 0.02 * rng.standard_normal(n)
    t = pd.DataFrame({law: np.full(n, 0.2) for law in LAWS})
    t["power-law"] = pl
    t["weighted-power-law"] = pl - weighted_gain / 100 + 0.01 * rng.standard_normal(n)
    t["source"] = [f"s{i % 4}" for i in range(n)]
    t["family"], t["law_used"], t["cls"], t["scales"] = "dle", "power-law", cls, "3+"
    return t


@pytest.mark.parametrize(
    ("gain", "cls", "want"),
    [
        (0.1, "ideal", "power-law"),  # a lower median, within its noise: it has not earned its place
        (2.0, "ideal", "weighted-power-law"),  # lower by far more than its noise
        (2.0, "stopped", "power-law"),  # never for a series that had stopped scaling
    ],
)
def test_the_weighted_power_law_must_beat_the_power_law_to_be_ruled(learn_prior, gain, cls, want):
    import prior_laws

    table = _law_table(gain, cls)
    assert table["weighted-power-law"].median() < table["power-law"].median()  # the smallest median alone
    rule = prior_laws.learn_rule(table)
    assert rule[f"{cls}|3+"]["law"] == want
