import numpy as np
import pytest

from perfmodel import PerfModelError
from perfmodel.language import parse_bounds, parse_expression
from perfmodel.language.latex import to_latex
from perfmodel.language.query import evaluate_query


def parse(spec, symbols=("p", "N", "b", "E"), **kw):
    return parse_expression(spec, symbols, **kw)[0]


def test_terms_split_on_top_level_plus_and_minus():
    e = parse("1 + N/(p*b)*b^e1 + N/(p*b)*log2(p) - p")
    assert [t.text for t in e.terms] == ["1", "N/(p*b)*b^e1", "N/(p*b)*log2(p)", "p"]
    assert [t.sign for t in e.terms] == [1, 1, 1, -1]
    assert e.params == ("e1",)
    assert e.bounds == {"e1": (-3.0, 3.0)}


def test_values_follow_numpy_formula():
    e = parse("1 + N/(p*b)*b^e1 + max(p, 4) + ceil(N/(p*b))")
    env = {"p": np.array([1.0, 2, 8]), "N": np.array([100.0, 100, 100]), "b": np.array([3.0, 3, 3])}
    vals = e.term_values(env, np.array([0.5]))
    np.testing.assert_allclose(vals[1], 100 / (env["p"] * 3) * 3**0.5)
    np.testing.assert_allclose(vals[2], [4, 4, 8])
    np.testing.assert_allclose(vals[3], np.ceil(100 / (env["p"] * 3)))


def test_population_evaluation_broadcasts():
    e = parse("p^a")
    vals = e.term_values({"p": np.array([2.0, 4.0])}, np.array([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(vals[0], [[2, 4], [4, 16], [8, 64]])


def test_iterations_symbol():
    e = parse("I + I*log2(p)")
    env = {"p": np.array([2.0]), "N": np.array([1000.0]), "b": np.array([64.0]), "E": np.array([3.0])}
    vals = e.term_values(env)
    assert vals[0][0] == 3 * np.ceil(1000 / 128)


def test_iterations_needs_n_and_b():
    with pytest.raises(PerfModelError, match="needs the symbol"):
        parse("I", symbols=("p",)).term_values({"p": np.array([1.0])})


@pytest.mark.parametrize(
    "bad,fragment",
    [
        ("__import__('os')", "__import__"),
        ("p.__class__", "not allowed"),
        ("(lambda: 1)()", "not allowed"),
        ("[x for x in p]", "not allowed"),
        ("9^9^9", "9^9^9"),
        ("p^100", "exponent too large"),
        ("open(p)", "'open' is not allowed"),
        ("p if p else 1", "'if' expressions"),
        ("p; 1", "';'"),
        ("p**2", "x^2"),
        ("log", "is a function"),
        ("1 + e1", "uses no factor symbol"),
        ("p + p", "appears twice"),
        ("log2(p, 2)", "takes 1 argument"),
        ("min(p)", "takes 2 to 8"),
        ("p +", "cannot parse"),
        ("", "empty"),
        ("x" * 2001, "limit"),
    ],
)
def test_hostile_or_bad_strings_are_refused(bad, fragment):
    with pytest.raises(PerfModelError) as info:
        parse(bad)
    assert fragment in str(info.value)


def test_unmapped_column_named_in_error():
    with pytest.raises(PerfModelError, match="'gpus' .* is a data column"):
        parse_expression("1 + gpus", ["p"], columns=["gpus", "time"])


def test_log_domain_names_row():
    e = parse("1 + log2(p)")
    with pytest.raises(PerfModelError, match="row 3"):
        e.check_domain({"p": np.array([1.0, 2.0, 0.0])}, rows=np.array([1, 2, 3]))


def test_bounds_parsing():
    assert parse_bounds(["e1=0:2", "c1=-1.5:3e2"]) == {"e1": (0, 2), "c1": (-1.5, 300)}
    with pytest.raises(PerfModelError, match="NAME=LO:HI"):
        parse_bounds(["e1"])
    with pytest.raises(PerfModelError, match="below"):
        parse_bounds(["e1=2:1"])
    e = parse("p^e1", bounds={"e1": (0, 2)})
    assert e.bounds["e1"] == (0, 2)


def test_query():
    env = {"p": np.array([1.0, 8, 16, 32]), "N": np.array([1.0, 2, 3, 4])}
    np.testing.assert_array_equal(evaluate_query("p > 8", env), [False, False, True, True])
    np.testing.assert_array_equal(evaluate_query("p >= 8 and N < 4", env), [False, True, True, False])
    with pytest.raises(PerfModelError, match="unknown name 'q'"):
        evaluate_query("q > 1", env)
    with pytest.raises(PerfModelError):
        evaluate_query("__import__('os').system('x')", env)


def test_latex_rendering():
    e = parse("1 + N/(p*b)*b^e1 + log2(p)")
    tex = to_latex(e)
    assert tex.startswith("T = c_{0} + c_{1}")
    assert r"\frac{N}{p \cdot b}" in tex and r"\log_2\left(p\right)" in tex
