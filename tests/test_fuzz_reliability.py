"""A seeded slice of the command-line red-team fuzzing in scripts/fuzz_reliability.py: every generated
fit, predict, advise, sweep and show command, and those of issue 32's classes (units, round trips,
the terminal, CSVs, plans, bounded work), ends in a clear one-line error or a correct success,
never an internal error, a hang or a silently wrong result. The long run is
``python scripts/fuzz_reliability.py`` (200 commands per target)."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location(
        "perfmodel_fuzz_reliability", ROOT / "scripts" / "fuzz_reliability.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


fuzz = _module()
EXAMPLES = {"fit": 12, "predict": 15, "advise": 15, "sweep": 15, "show": 15}
#: issue 32's classes: units, round trips of every file fit writes, the terminal, CSVs, plans, bounded work
EXAMPLES.update(units=10, roundtrip=3, terminal=6, csv=8, plan=10, bounded=4)
#: targets whose generators always include input the checks refuse
REFUSED = {"fit", "predict", "advise", "sweep", "show", "plan", "csv"}


@pytest.fixture(scope="module")
def files():
    made = fuzz.Files()
    yield made
    made.close()


@pytest.mark.parametrize("target", sorted(fuzz.TARGETS))
def test_every_command_is_a_clear_error_or_a_correct_success(files, target):
    timeout = 180 if target == "roundtrip" else 60  # a fit of spoiled data with intervals, on a shared machine
    tally = fuzz.run_target(target, EXAMPLES[target], seed=20261201, files=files, timeout=timeout)
    bad = {o: tally.examples.get(o) for o in ("silent wrong", "internal error", "hang") if tally.counts[o]}
    assert not bad, bad
    assert tally.counts["tried"] == EXAMPLES[target]
    if target in REFUSED:
        assert tally.counts["clear error"] > 0  # the generators reach the checks


def test_the_judge_tells_the_outcomes_apart():
    run = fuzz.Run
    assert fuzz.judge(run(2, "", "error: bad --grid\n", 0.1), lambda: "") == ("clear error", "")
    assert fuzz.judge(run(2, "", "error: a\nb\n", 0.1), lambda: "")[0] == "internal error"
    assert fuzz.judge(run(1, "", "internal error: ValueError\n", 0.1), lambda: "")[0] == "internal error"
    assert fuzz.judge(run(None, "", "", 60.0), lambda: "")[0] == "hang"
    assert fuzz.judge(run(0, "", "", 0.1), lambda: "MAPE inf") == ("silent wrong", "MAPE inf")
    assert fuzz.judge(run(0, "ok", "", 0.1), lambda: "") == ("success", "")


def test_a_hanging_command_is_killed_and_counted(files, monkeypatch):
    import time

    monkeypatch.setattr(fuzz, "main", lambda argv: time.sleep(30) or 0)
    t0 = time.monotonic()
    result = fuzz.run_command(["show", "x"], files.dir, timeout=1.0)
    assert result.code is None and time.monotonic() - t0 < 10
