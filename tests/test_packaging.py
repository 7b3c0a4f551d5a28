"""The wheel: built from a copy of the source, installed into a fresh virtual environment, and run
as the ``perfmodel`` command from a directory outside the checkout (so nothing is imported from it).

Marked ``packaging``: it builds a wheel and installs numpy, scipy, pandas, plotly and tqdm from the
package index (or pip's cache) into the new environment, ~20-40 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.packaging


def _run(cmd, cwd, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin directory of a fresh venv with the wheel installed, a working directory outside the checkout)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "perfmodel", src / "perfmodel", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "data", src / "data")
    dist = base / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, src], cwd=base)
    wheels = list(dist.glob("perfmodel-*.whl"))
    assert len(wheels) == 1
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    _run([bindir / "python", "-m", "pip", "install", "-q", wheels[0]], cwd=base)
    work = base / "elsewhere"
    work.mkdir()
    return bindir, work


def test_the_wheel_gives_a_working_perfmodel_command(installed):
    bindir, work = installed
    where = _run(
        [
            bindir / "python",
            "-c",
            "import perfmodel, perfmodel.data.datasets as d; print(perfmodel.__file__); print(d.DATA_DIR)",
        ],
        cwd=work,
    ).split()
    assert "site-packages" in where[0] and not where[0].startswith(str(ROOT))
    assert where[1].endswith("_bundled")
    listing = _run([bindir / "perfmodel", "datasets"], cwd=work)
    assert "tf-cnn-all" in listing and "ernest-rcv1" in listing
    shutil.copy(ROOT / "data" / "ernest" / "rcv1.csv", work / "rcv1.csv")  # a user's own file
    _run(
        [
            bindir / "perfmodel",
            "fit",
            "rcv1.csv",
            "--time",
            "time_s",
            "--factor",
            "m=cores",
            "--factor",
            "s=input_fraction",
            "--terms",
            "1 + s/m + log(m) + m",
            "--loss",
            "absolute",
            "--lambda",
            "0",
            "--out",
            "rcv1.json",
        ],
        cwd=work,
    )  # Ernest's published NNLS fit is unpenalised
    model = json.loads((work / "rcv1.json").read_text())
    assert model["coefficients"]["c1"] == pytest.approx(162.19821, rel=1e-5)  # as tests/test_cli.py
    _run([bindir / "perfmodel", "fit", "ernest-rcv1", "--out", "bundled.json"], cwd=work)  # package data
    out = _run(
        [
            bindir / "perfmodel",
            "fit",
            "tf-cnn-all",
            "--group-by",
            "model",
            "--group-by",
            "platform",
            "--cv",
            "0",
            "--workers",
            "1",
            "--out",
            "groups",
        ],
        cwd=work,
    )
    table = pd.read_csv(ROOT / "data" / "tf_cnn" / "tf_cnn_benchmarks_2017.csv")
    expected = table[table["data"] == "synthetic"].groupby(["model", "platform"]).ngroups
    assert f"fitted {expected} of {expected} group(s)" in out
    summary = pd.read_csv(work / "groups" / "summary.csv")
    assert len(summary) == expected and (summary["status"] == "ok").all()
    assert all((work / "groups" / f).is_file() for f in summary["model_file"])
    assert "usage" in _run([bindir / "python", "-m", "perfmodel", "--help"], cwd=work)
