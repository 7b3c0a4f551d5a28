"""The dataset catalogue: every entry loads, fits with its suggested terms, and is documented.

MAPE bounds per kind, and why:
  * synthetic (Extra-P test inputs): the suggested terms contain the generating formula, and the
    data carry at most ±2 % uniform noise, so the mean absolute error cannot honestly exceed ~1-2 %;
    bound 3 %.
  * training / hpc: real measurements with a few % run-to-run variation (MLPerf Transformer up to
    ±25 % on single runs); a model of the right shape stays well under 10 %; bound 10 %.
  * sweep: the 2-core VM's repeats vary by ~6 % (median CV), so the in-sample MAPE cannot go much
    below that; bound 12 %.
  * collective: DeepBench switches all-reduce algorithm between cells and spans nodes at 16/32 GPUs
    (documented breaks in the curves), no smooth model fits those within 10 %; bound 20 %.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfmodel import Model, fit_groups
from perfmodel.data import Measurements
from perfmodel.data.datasets import (
    DATA_DIR,
    DEFAULT_DATASET,
    KINDS,
    Dataset,
    get_dataset,
    list_datasets,
    load_dataset,
    load_frame,
)
from perfmodel.errors import PerfModelError

ROOT = Path(__file__).resolve().parent.parent
MAPE_BOUND = {"synthetic": 3.0, "training": 10.0, "hpc": 10.0, "sweep": 12.0, "collective": 20.0}
NAMES = [d.name for d in list_datasets()]


def test_data_dir_is_the_repository_data_folder():
    assert DATA_DIR == ROOT / "data"
    assert (DATA_DIR / "README.md").exists()


def test_catalogue_entries_are_well_formed():
    assert len(NAMES) == len(set(NAMES)) >= 20
    for ds in list_datasets():
        assert isinstance(ds, Dataset)
        assert ds.name == ds.name.lower() and " " not in ds.name
        assert ds.title and ds.source
        assert ds.description and "\n" not in ds.description
        assert ds.kind in KINDS, ds.name
        assert ds.format in ("csv", "extrap"), ds.name
        assert ds.path.is_file(), f"{ds.name}: {ds.path} missing"
        assert (ds.time is None) == (ds.format == "extrap"), ds.name
        assert ds.factors and all(s.isidentifier() for s in ds.factors), ds.name
    kinds = {d.kind for d in list_datasets()}
    assert kinds == set(KINDS)


def test_every_file_is_documented_in_data_readme():
    readme = (DATA_DIR / "README.md").read_text(encoding="utf-8")
    for ds in list_datasets():
        assert Path(ds.filename).name in readme, f"{ds.filename} not described in data/README.md"
        assert f"`{ds.name}`" in readme or ds.name.startswith("extrap-"), ds.name


def test_default_dataset_is_real_data_parallel_training_with_processors():
    ds = get_dataset(DEFAULT_DATASET)
    assert ds.kind == "training"
    assert "p" in ds.factors
    meas = load_dataset(DEFAULT_DATASET)
    assert len(np.unique(meas.values("p"))) >= 4


def test_unknown_dataset_names_known_ones():
    with pytest.raises(PerfModelError) as info:
        get_dataset("mlperf-resnet-a10")
    message = str(info.value)
    assert "unknown dataset 'mlperf-resnet-a10'" in message
    assert "known:" in message and "ernest-rcv1" in message and DEFAULT_DATASET in message
    with pytest.raises(PerfModelError):
        load_frame("no-such-dataset")
    with pytest.raises(PerfModelError):
        load_dataset("no-such-dataset")


def test_list_datasets_by_kind():
    assert all(d.kind == "sweep" for d in list_datasets("sweep"))
    assert [d.name for d in list_datasets("sweep")] == ["sweep-dp-sgd-2core"]
    with pytest.raises(PerfModelError, match="unknown dataset kind"):
        list_datasets("nonsense")


@pytest.mark.parametrize("name", NAMES)
def test_dataset_loads(name):
    ds = get_dataset(name)
    frame = load_frame(name)
    assert len(frame) > 0
    for column, value in (ds.rows_filter or {}).items():
        assert (frame[column].astype(str) == str(value)).all()
    for column in [ds.time_column, *ds.factors.values()]:
        assert column in frame.columns, f"{name}: column {column!r} missing"
    meas = load_dataset(name)
    assert isinstance(meas, Measurements)
    assert meas.name == name
    assert meas.n_rows == len(frame)  # nothing unusable in the shipped data
    assert not meas.dropped
    assert np.all(meas.y > 0) and np.all(np.isfinite(meas.y))


@pytest.mark.parametrize("name", NAMES)
def test_dataset_fits_with_suggested_terms(name):
    ds = get_dataset(name)
    if ds.groups:  # one model per group: every group must fit as well as a single-curve dataset
        fits = fit_groups(
            load_frame(name),
            ds.groups,
            time=ds.time_column,
            factors=dict(ds.factors),
            terms=ds.terms,
            cv=0,
            executor="serial",
        )
        assert fits.n_ok == len(fits) >= 2, fits.summary[["group", "reason"]]
        assert fits.summary["mape"].max() < MAPE_BOUND[ds.kind], fits.summary[["group", "mape"]]
        return
    result = Model(ds.terms).fit(load_dataset(name))
    for key, value in result.metrics.items():
        assert math.isfinite(value) or key == "adj_r2", f"{name}: metric {key} = {value}"
    assert result.metrics["mape"] < MAPE_BOUND[ds.kind], f"{name}: MAPE {result.metrics['mape']:.2f} %"
    pred = result.predict(load_dataset(name))
    assert pred.shape == (load_dataset(name).n_rows,) and np.all(np.isfinite(pred))


def test_rows_filter_selects_one_curve():
    frame = load_frame("tf-cnn-resnet50-dgx1")
    # DGX-1 synthetic ResNet-50: the main table (batch 64) and "other results" (batch 32), 1-8 GPUs
    assert sorted(zip(frame["gpus"], frame["batch_per_gpu"], strict=True)) == sorted(
        (g, b) for g in (1, 2, 4, 8) for b in (32, 64)
    )
    assert set(frame["platform"]) == {"dgx1-p100"} and set(frame["model"]) == {"ResNet-50"}


def test_extrap_dataset_uses_the_reader_columns():
    frame = load_frame("extrap-two-parameter-5")
    assert list(frame.columns) == ["p", "s", "region", "metric", "repetition", "time"]
    assert len(frame) == 25
    relearn = load_frame("extrap-relearn")
    assert set(relearn["region"]) == {"main()"} and len(relearn) == 50  # 25 points x 2 repetitions


def test_sweep_dataset_keeps_only_ok_runs(tmp_path, monkeypatch):
    frame = load_frame("sweep-dp-sgd-2core")
    assert set(frame["status"]) == {"ok"}
    assert len(frame) == 72
    # A failed run in a sweep file is excluded from the fit (Measurements drops status != ok).
    bad = frame.copy()
    bad.loc[0, "status"] = "failed"
    meas = Measurements.from_frame(bad, time="time_s", factors=dict(get_dataset("sweep-dp-sgd-2core").factors))
    assert meas.n_rows == 71 and len(meas.dropped) == 1


# ---------------------------------------------------------------- known answers (generating formulas)
def _fit(name, terms=None, **kw):
    # exact recovery of a generating formula: an unpenalised fit (any λ > 0 trades a little loss for a
    # smaller penalty, which on noise-free data shows)
    return Model(terms or get_dataset(name).terms, **{"lam": 0, **kw}).fit(load_dataset(name))


def test_two_parameter_5_recovers_formula_in_file():
    # the file says: formula 2 + 0.884 * s * log(p), noise-free (log base 2, Extra-P's convention)
    r = _fit("extrap-two-parameter-5")
    assert r.coefficients["c0"] == pytest.approx(2.0, abs=1e-6)
    assert r.coefficients["c1"] == pytest.approx(0.884, rel=1e-6)


def test_two_parameter_6_recovers_exponent():
    # the file says: formula 1 + 0.05 * s^1.5 * p, noise-free
    r = _fit("extrap-two-parameter-6")
    assert r.params["e1"] == pytest.approx(1.5, abs=1e-4)
    assert r.coefficients["c0"] == pytest.approx(1.0, rel=1e-3)
    assert r.coefficients["c1"] == pytest.approx(0.05, rel=1e-3)


def test_segmented_recovers_both_pieces():
    # p^2 for p <= 6, 30 + p for p >= 6 (Extra-P's segmented test), i.e. exactly min(p^2, 30 + p)
    r = _fit("extrap-segmented-1")
    assert r.coefficients["c0"] == pytest.approx(0.0, abs=1e-6)
    assert r.coefficients["c1"] == pytest.approx(1.0, rel=1e-6)


def test_noisy_synthetic_recover_generating_constants():
    # 1 + 0.2 x^2 log2(y) with ±2 % noise
    r = _fit("extrap-two-parameter-1")
    assert r.params["e1"] == pytest.approx(2.0, abs=0.05)
    # 1 + 0.2 x^2 log2(y) + 0.1 x y^2 z with ±2 % noise
    r3 = _fit("extrap-three-parameter-1")
    assert r3.coefficients["c1"] == pytest.approx(0.2, rel=0.02)
    assert r3.coefficients["c2"] == pytest.approx(0.1, rel=0.02)


def test_one_parameter_1_matches_extrap_least_squares():
    # Extra-P's tests/test_console.py::test_print expects -0.88979340 + 0.20168243*x^(2) for this file
    # (least squares on the means; every point has 6 repetitions, so least squares on all rows agrees).
    r = _fit("extrap-one-parameter-1", "1 + x^2", loss="absolute", nonneg=False)
    assert r.coefficients["c0"] == pytest.approx(-0.88979340, abs=1e-3)
    assert r.coefficients["c1"] == pytest.approx(0.20168243, rel=1e-5)


def test_datasets_module_does_not_import_streamlit():
    code = (
        "import sys, perfmodel.data.datasets as d; d.load_dataset(d.DEFAULT_DATASET); print('streamlit' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
