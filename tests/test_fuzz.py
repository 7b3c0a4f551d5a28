"""A seeded slice of the property-based fuzzing in scripts/fuzz.py: for every reader of user input
(CSV, Extra-P, term parser, hold-out query, model-file loader, exported code) each generated input
gives a result or a PerfModelError with a message, nothing else. The long run is
``python scripts/fuzz.py`` (10,000 inputs per target)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("perfmodel_fuzz", ROOT / "scripts" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fuzz = _fuzz_module()
EXAMPLES = {"csv": 300, "extrap": 300, "term_parser": 400, "query": 400, "model_file": 300, "export": 100}


@pytest.mark.parametrize("target", sorted(fuzz.TARGETS))
def test_every_input_gives_a_result_or_a_clear_error(target):
    tally = fuzz.run_target(target, EXAMPLES[target], seed=20261201, raise_other=True)
    assert tally.counts["other exception"] == 0, tally.others
    assert tally.counts["tried"] >= EXAMPLES[target]
    # the generators reach past the first check: some inputs are accepted, some refused
    assert tally.counts["result"] > 0
    if target != "export":
        assert tally.counts["clear error"] > 0


def test_the_export_check_catches_code_that_is_not_a_definition(monkeypatch):
    class Fake:
        factors = {"p": "p"}

        def predict(self, values):
            return values["p"]

    monkeypatch.setattr(
        fuzz.report,
        "python_snippet",
        lambda res: "import numpy as np\nprint('side effect')\ndef predict(p):\n    return p\n",
    )
    with pytest.raises(AssertionError, match="unexpected top-level statement"):
        fuzz.check_exported_code(Fake())
