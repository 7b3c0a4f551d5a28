"""Shared fixtures: paths to the bundled data, found relative to this file."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA
