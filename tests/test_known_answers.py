"""Known answers from outside this project: Extra-P's tests, Ernest's published output,
and the generating formulas of Extra-P's synthetic inputs.

We fit *all repeats* (one row per repetition), not per-configuration means. With the same
number of repeats per configuration (true for every file here) the least-squares optimum is
the same as Extra-P's fit on the means, so the constants match to rounding.
"""

from pathlib import Path

import numpy as np
import pytest

from perfmodel import Model
from perfmodel.data import measurements_from_extrap, read_csv, read_extrap

DATA = Path(__file__).resolve().parent.parent / "data"


def extrap(name):
    return measurements_from_extrap(read_extrap(DATA / "extrap" / name))


def test_extrap_one_parameter_constants():
    # Extra-P tests/test_console.py::test_print: -0.88979340 + 0.20168243*x^(2)
    r = Model("1 + x^2", loss="absolute", nonneg=False, lam=0).fit(extrap("text_one_parameter_1.txt"))
    assert r.coefficients["c0"] == pytest.approx(-0.88979340, rel=1e-5)
    assert r.coefficients["c1"] == pytest.approx(0.20168243, rel=1e-5)


def test_extrap_one_parameter_means_match_extrap():
    # Extra-P's printed means: 8.19E+01, 1.79E+02, 3.19E+02, 5.05E+02, 7.25E+02
    m = extrap("text_one_parameter_1.txt")
    means = m.frame.groupby("x")["time"].mean().to_numpy()
    np.testing.assert_allclose(means, [81.9, 179, 319, 505, 725], rtol=6e-3)


def test_extrap_two_parameter_5_recovers_formula():
    # file comment: 2 + 0.884*s*log2(p), noise-free
    r = Model("1 + s*log2(p)", loss="absolute", lam=0).fit(extrap("text_two_parameter_5.txt"))
    assert r.coefficients["c0"] == pytest.approx(2.0, rel=1e-6)
    assert r.coefficients["c1"] == pytest.approx(0.884, rel=1e-6)


def test_extrap_two_parameter_6_recovers_free_exponent():
    # file comment: 1 + 0.05*s^1.5*p, noise-free; e is a free exponent
    r = Model("1 + s^e*p", loss="absolute", lam=0).fit(extrap("text_two_parameter_6.txt"))
    assert r.params["e"] == pytest.approx(1.5, rel=1e-6)
    assert r.coefficients["c0"] == pytest.approx(1.0, rel=1e-6)
    assert r.coefficients["c1"] == pytest.approx(0.05, rel=1e-6)


def test_ernest_rcv1_published_theta_and_predictions():
    # amplab/ernest examples/mllib_rcv1.md: theta and predicted times at s = 1
    m = read_csv(DATA / "ernest" / "rcv1.csv")
    r = Model("1 + s/m + log(m) + m", loss="absolute", lam=0).fit(
        m, time="time_s", factors={"m": "cores", "s": "input_fraction"}
    )
    theta = [r.coefficients[f"c{k}"] for k in range(4)]
    np.testing.assert_allclose(theta[:3], [1.90013, 162.19821, 1.58832], rtol=2e-5)
    assert theta[3] == pytest.approx(0.0, abs=1e-9)
    pred = r.predict({"m": [4, 8, 12, 16], "s": [1, 1, 1, 1]})
    np.testing.assert_allclose(pred, [44.6516, 25.4777, 19.3635, 16.4413], rtol=2e-5)


def test_three_parameter_all_exponents_free():
    # generator: 1 + 0.2*x^2*log2(y) + 0.1*x*y^2*z with +-2 % noise (Extra-P synthetic-data.py)
    def truth(x, y, z):
        return 1 + 0.2 * x**2 * np.log2(y) + 0.1 * x * y**2 * z

    m = extrap("text_three_parameter_1.txt")
    r = Model("1 + x^a*log2(y)^b + x^c*y^d*z^e").fit(m)
    expected = {"a": 2, "b": 1, "c": 1, "d": 2, "e": 1}
    for name, value in expected.items():
        assert abs(r.params[name] - value) < 0.1, (name, r.params[name])
    env = m.env()
    np.testing.assert_array_less(np.abs(r.predict(m) / truth(env["x"], env["y"], env["z"]) - 1), 0.05)
    far = r.predict({"x": [100], "y": [10], "z": [1000]})[0]
    assert far == pytest.approx(truth(100, 10, 1000), rel=0.05)


def test_same_seed_same_result_and_different_seed_runs():
    m = extrap("text_two_parameter_6.txt")
    a = Model("1 + s^e*p", seed=7, maxiter=30, polish=False).fit(m)
    b = Model("1 + s^e*p", seed=7, maxiter=30, polish=False).fit(m)
    assert a.to_dict()["coefficients"] == b.to_dict()["coefficients"]
    assert a.params == b.params


@pytest.mark.parametrize("lam,penalty", [(0.0, "l1"), (0.05, "l1"), (0.05, "l2")])
def test_de_never_worse_than_exact_solver(lam, penalty):
    m = read_csv(DATA / "ernest" / "rcv1.csv")
    r = Model("1 + s/m + log(m) + m", lam=lam, penalty=penalty, maxiter=20).fit(
        m, time="time_s", factors={"m": "cores", "s": "input_fraction"}
    )
    assert r.cost <= r.convergence["exact_cost"] * (1 + 1e-12)
