"""Reliability, second pass (issue 20), in the dashboard: notices for names that are not factors,
hostile group values and column names on every page, and the CSV downloads."""

import pytest

from tests.test_app import new_app, submit

pytestmark = pytest.mark.usefixtures("served_like_a_server")


def test_a_term_name_that_is_not_a_factor_is_a_notice_where_the_fit_is_shown():
    at = new_app().run()
    at.switch_page("pages/model.py").run()
    at.text_input(key="w:custom").input("q*p").run()
    submit(at, "Fit model")
    assert not at.exception
    notice = "q is not a factor; fitted as a free parameter"
    assert any(notice in w.value for w in at.warning), [w.value for w in at.warning]
    at.switch_page("pages/results.py").run()
    assert any(notice in w.value for w in at.warning), [w.value for w in at.warning]
