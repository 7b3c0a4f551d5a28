"""Shared fixtures: the bundled data (found relative to this file) and AppTest served like a server."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def served_like_a_server(monkeypatch):
    """Run every AppTest step through app.py, as a real server does.

    AppTest resets Streamlit's legacy "pages/ folder" flag before every run, so with a pages/
    folder next to app.py each rerun after the first would execute the page file alone. A real
    server leaves that mode for good at the first st.navigation call (see ui/nav.py)."""
    import streamlit.testing.v1.app_test as app_test_module
    from streamlit.runtime.pages_manager import PagesManager

    class ServerLikePagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    monkeypatch.setattr(app_test_module, "PagesManager", ServerLikePagesManager)
    yield
    PagesManager.uses_pages_directory = None
