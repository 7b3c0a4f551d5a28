"""Crafted links in a real browser (issue 32): a link whose mapping has the wrong types opens the
dataset with a notice, and no page shows a traceback or the server's paths."""

from __future__ import annotations

import urllib.parse

import pytest

from .harness import go_to, no_exception, open_app

pytestmark = pytest.mark.browser

MAPPINGS = ['{"time":"epoch_time_s","factors":["gpus"]}', '{"time":["x"],"factors":{"p":7}}']


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_a_link_with_a_mistyped_mapping_shows_a_notice_and_no_traceback(page, mapping):
    query = urllib.parse.urlencode({"dataset": "tf-cnn-resnet50-dgx1", "map": mapping})
    open_app(page, f"?{query}")
    no_exception(page)
    assert page.get_by_text("could not apply the link's column mapping").count() >= 1
    for title in ("Model", "Scaling", "Plan"):
        go_to(page, title)
        no_exception(page)
        text = page.inner_text("body")
        assert "Traceback" not in text and "/work/" not in text and "site-packages" not in text
