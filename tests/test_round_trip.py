"""A file ``fit`` writes is a file every command reads (issue 32): seeded noisy, outlier-ridden and
ill-fitting measurements are fitted with every preset, with ``--auto`` and per group, and each model
file written goes through ``show``, ``predict --interval``, ``plan`` and ``advise`` with exit 0. A fit
too poor to quote still writes such a file and says so. The same over the real files under
``../shared/refdata`` (``fit --auto`` on each; skipped where the folder is absent)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel.language.terms import PRESETS
from tests.cli_run import ROOT, run

REFDATA = ROOT.parent / "shared" / "refdata"


def series(kind: str, seed: int) -> pd.DataFrame:
    """Runs of a data-parallel job (p, b, N, E, nodes; 3 repeats each) from a known formula, spoiled by
    ``kind``: "noisy" (50 % lognormal noise), "outlier" (a warm-up run ×10 per configuration and one run
    ×75) or "ill" (times that follow none of the terms: random over three orders of magnitude)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in (1, 2, 4, 8, 16, 32):
        for b in (32, 64):
            n = 50_000
            iters = np.ceil(n / (p * b))
            t = 2 + iters * 0.002 * b**0.9 + iters * 0.001 * np.log2(p) + 0.01 * p
            for r in range(3):
                if kind == "noisy":
                    v = t * np.exp(rng.normal(0, 0.5))
                elif kind == "outlier":
                    v = t * np.exp(rng.normal(0, 0.02)) * (10 if r == 0 else 1)
                else:
                    v = 10 ** rng.uniform(0, 3)
                rows.append({"p": p, "b": b, "N": n, "E": 1, "nodes": max(1, p // 8), "time_s": v})
    frame = pd.DataFrame(rows)
    if kind == "outlier":
        frame.loc[int(rng.integers(len(frame))), "time_s"] *= 75
    return frame


def _values(lo: float, hi: float) -> str:
    return ",".join(f"{v:.12g}" for v in sorted({lo, hi, 2 * hi if hi > 0 else hi + 1}))


def round_trip(path: Path, capsys) -> None:
    """``show``, ``predict --grid … --interval 0.9``, ``plan`` and ``advise`` on the model file: exit 0 each."""
    d = json.loads(Path(path).read_text())
    ranges = d["factor_ranges"]
    grid = [a for s, (lo, hi) in ranges.items() for a in ("--grid", f"{s}={_values(lo, hi)}")]
    work = (d.get("rate") or {}).get("work")
    if isinstance(work, str):  # a throughput's work column: the grid gives it too
        grid += ["--grid", f"{work}=100"]
    target = ",".join(f"{s}={2 * hi if hi > 0 else hi + 1:.12g}" for s, (lo, hi) in ranges.items())
    first = next(iter(ranges))
    plan_grid = [a for a in grid if not a.startswith(f"{work}=")]
    if "p" in ranges and ranges["p"][0] <= 0:  # a plan counts workers: from one
        plan_grid = [f"p={_values(1.0, max(ranges['p'][1], 1.0))}" if a.startswith("p=") else a for a in plan_grid]
    for argv in (
        ["show", path],
        ["predict", path, *grid, "--interval", "0.9"],
        ["plan", path, *plan_grid],
        ["advise", path, "--target", target, "--grid", f"{first}={_values(*ranges[first])}"],
    ):
        code, _, err = run(argv, capsys)
        assert code == 0, (argv[0], err)


def test_the_issues_outlier_series_writes_a_usable_file_and_says_it_is_too_poor(tmp_path, capsys):
    data = tmp_path / "s.csv"
    data.write_text("p,time_s\n1,10\n2,10\n4,10\n8,10\n16,10\n32,5000\n")
    model = tmp_path / "s.json"
    code, out, err = run(["fit", data, "--terms", "1 + 1/p", "--out", model], capsys)
    assert code == 0, err
    assert "too poor to quote" in out + err and "capped at 1,000 %" in out
    round_trip(model, capsys)


@pytest.mark.parametrize("kind, seed", [("noisy", 1), ("outlier", 2), ("ill", 3)])
@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_on_spoiled_data_round_trips(tmp_path, capsys, preset, kind, seed):
    data = tmp_path / "runs.csv"
    series(kind, seed).to_csv(data, index=False)
    model = tmp_path / "m.json"
    factors = [a for s in ("p", "b", "N", "E", "nodes") for a in ("--factor", f"{s}={s}")]
    code, _, err = run(["fit", data, "--time", "time_s", *factors, "--preset", preset, "--out", model], capsys)
    assert code == 0, err
    assert "no intervals stored" not in json.dumps(json.loads(model.read_text())["warnings"])
    round_trip(model, capsys)


@pytest.mark.parametrize("kind, seed", [("outlier", 4), ("ill", 5)])
def test_auto_on_spoiled_data_round_trips(tmp_path, capsys, kind, seed):
    data = tmp_path / "runs.csv"
    series(kind, seed).drop(columns=["nodes", "E"]).to_csv(data, index=False)
    model = tmp_path / "m.json"
    code, _, err = run(["fit", data, "--auto", "--out", model], capsys)
    assert code == 0, err
    round_trip(model, capsys)


def test_every_group_model_file_round_trips(tmp_path, capsys):
    frames = [series(kind, 10 + k).assign(job=kind) for k, kind in enumerate(("noisy", "outlier", "ill"))]
    data = tmp_path / "groups.csv"
    pd.concat(frames).drop(columns=["nodes", "E"]).to_csv(data, index=False)
    out = tmp_path / "groups"
    factors = [a for s in ("p", "b", "N") for a in ("--factor", f"{s}={s}")]
    code, _, err = run(
        ["fit", data, "--time", "time_s", *factors, "--preset", "ernest", "--group-by", "job"]
        + ["--workers", "1", "--cv", "0", "--out", out],
        capsys,
    )
    assert code == 0, err
    models = sorted(out.glob("*.json"))
    assert len(models) == 3
    for model in models:
        round_trip(model, capsys)


def _refdata_files() -> list:
    if not REFDATA.is_dir():
        return []
    return sorted(p for p in REFDATA.rglob("*") if p.suffix in (".csv", ".txt") and p.is_file())


@pytest.mark.refdata
@pytest.mark.skipif(not REFDATA.is_dir(), reason="../shared/refdata not present")
@pytest.mark.parametrize("path", _refdata_files(), ids=lambda p: str(p.relative_to(REFDATA)))
def test_fit_auto_on_every_reference_file_round_trips(tmp_path, capsys, path):
    """``fit --auto`` on each reference file: a clear refusal (no time column to guess, dates as
    factors) or a model file every command reads."""
    model = tmp_path / "m.json"
    code, _, err = run(["fit", path, "--auto", "--out", model], capsys)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("error: "), err
        return
    assert code == 0, err
    round_trip(model, capsys)
