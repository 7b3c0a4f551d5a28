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


# -- hostile text on every page ----------------------------------------------------------------------------
LINK = "[click me](https://evil.example/phish)"
HTML = '<a href="https://evil.example/html">html</a>'
COLUMN = "fw](https://evil.example/col)"
HOSTILE = [LINK, HTML, COLUMN, "*bold*"]
#: Proto fields Streamlit renders as Markdown (labels, tooltips, bodies of text elements and alerts);
#: a radio's options too. Selectbox and multiselect options, and dataframes, are plain text.
MARKDOWN_FIELDS = {"body", "label", "help", "caption"}


def _strings(msg, path, out):
    for fd, value in msg.ListFields():
        values = value if fd.is_repeated else [value]
        if fd.type == fd.TYPE_MESSAGE:
            for v in values:
                _strings(v, f"{path}.{fd.name}", out)
        elif fd.type == fd.TYPE_STRING and (fd.name in MARKDOWN_FIELDS or (path == "Radio" and fd.name == "options")):
            out += [(f"{path}.{fd.name}", v) for v in values]


def rendered_text(at):
    """(field, text) of every string the page renders as Markdown or HTML, and every chart's spec."""
    from google.protobuf.message import Message

    out, stack = [], [at._tree]
    while stack:
        node = stack.pop()
        stack += list(getattr(node, "children", {}).values())
        proto = getattr(node, "proto", None)
        if isinstance(proto, Message):
            if type(proto).__name__ == "PlotlyChart":
                out.append(("PlotlyChart.spec", proto.spec))
            else:
                _strings(proto, type(proto).__name__, out)
    return out


def unsafe(at):
    bad = []
    for field, text in rendered_text(at):
        if field == "PlotlyChart.spec":  # Plotly renders <a href> and <b> in names, ticks and hover text
            if "<a href" in text or "\\u003ca href" in text:
                bad.append((field, "a raw <a href> in a chart"))
        elif "https://evil" in text or any(h in text for h in HOSTILE) or "<a href" in text:
            bad.append((field, text[:200]))
    return bad


def test_hostile_group_values_and_column_names_stay_text_on_every_page():
    from tests.test_app import PAGES, upload

    values = [LINK, HTML, "*bold*"]
    rows = [f"workers,{COLUMN},time_s"] + [
        f'{p},"{g.replace(chr(34), 2 * chr(34))}",{1 + k + 10 / p:.4f}'
        for k, g in enumerate(values)
        for p in (1, 2, 4, 8, 16)
    ]
    at = new_app().run()
    upload(at, "[f](https:__evil.example_f).csv", "\n".join(rows).encode())
    submit(at, "Use this data")
    assert not at.exception
    assert at.session_state["meas_raw"].factors == {"p": "workers"}
    seen = {}
    for page in PAGES + ["pages/groups.py", "pages/compare.py"]:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        seen[page] = unsafe(at)
    groups = at.switch_page("pages/groups.py").run()
    assert groups.session_state[f"w:g:by:{groups.session_state['data_key']}"] == [COLUMN]
    assert "3 of 3 groups fitted" in " ".join(m.value for m in groups.markdown)
    assert not any(seen.values()), {p: b for p, b in seen.items() if b}
