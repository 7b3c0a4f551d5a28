"""Groups: the same terms fitted to every framework, model or GPU type, compared side by side."""

import streamlit as st

from perfmodel.plots.groups import group_split_figure
from perfmodel.plots.style import fmt_num
from perfmodel.report import groups_report
from perfmodel.spreadsheet import to_csv
from ui import groups_panel, groups_view
from ui.exports import export_stem
from ui.nav import guard
from ui.text import md

guard()
ss = st.session_state

st.title("Groups")
st.caption(
    "One model per group, the same terms for all: which group scales better, and which term is why. "
    "Every group is fitted with the session's λ, loss and seed and cross-validated (5-fold); the command "
    "line does the same with `perfmodel fit DATA --group-by COL --out DIR`."
)

tables = groups_panel.tables()
c = st.columns([3, 3])
label = c[0].selectbox(
    "Table",
    list(tables),
    key="w:g:table",
    help="The current data when it has columns to group by, or the bundled TensorFlow "
    "benchmarks table (5 CNN models on 4 platforms).",
)
table = tables[label]
columns = table["columns"]
by_key = f"w:g:by:{table['key']}"
if by_key not in ss:
    ss[by_key] = list(table["groups"]) or columns[:1]
by = c[1].multiselect(
    "Group by",
    columns,
    key=by_key,
    help="Rows with equal values in these columns form one group (framework, model, GPU type…).",
)
terms_key = f"w:g:terms:{table['key']}"
if terms_key not in ss:
    ss[terms_key] = table["terms"]
terms = st.text_input(
    "Terms (the same for every group)",
    key=terms_key,
    help="Start-up, compute and communication terms, e.g. 1 + I*b^e1 + I*log2(p). A factor that "
    "is constant within a group is left out of that group's terms (noted in the table).",
)
if not by:
    st.info("Choose at least one column to group by.", icon=":material/info:")
    st.stop()

fits, x, shown, at, unit = groups_view.curves(table, by, terms)  # the first chart drawn as its groups are fitted

measured = sorted({float(v) for m in fits.data if x in m.factors and m.n_rows for v in m.values(x)})
x_end = (ss.get("g:view") or {}).get("x_end")
values = groups_panel.split_values(measured, x_end)  # the measured values, then the doublings to the curves' end
split = None
if values:
    key = f"w:g:at:{x}"
    if ss.get(key) not in values:
        ss[key] = at if at in values else measured[-1]
    at_split = st.select_slider(
        f"Split the time at {md(x)} =",
        options=values,
        key=key,
        format_func=fmt_num,
        help="The other factors are held at each group's most frequent measured value. Past the largest "
        "measured value (the curves' extension above) the split is extrapolated.",
    )
    split = group_split_figure(fits, {x: at_split}, labels=shown, unit=unit)
    st.plotly_chart(split, width="stretch")

groups_panel.open_group(table, by, fits)

st.subheader("Errors, shares and constants per group")
groups_panel.show_tables(fits, unit)
st.caption(
    f"Constants in {unit} per unit of their term; —: the term is not in that group's model (a factor "
    "constant within the group left it out; see the notes). Each term's share of the time is in "
    "summary.csv."
)
c = st.columns(2)
c[0].download_button(
    "Download summary.csv",
    to_csv(fits.summary).encode("utf-8"),
    "summary.csv",
    "text/csv",
    icon=":material/download:",
    help="One row per group: its values, status, formula, constants, shares, errors and notes "
    "(the file `perfmodel fit DATA --group-by COL --out DIR` writes).",
)
view = ss.get("g:view") or {}
c[1].download_button(
    "Download the groups report (HTML)",
    lambda: groups_report(
        fits, {"Scaling": view.get("figure"), "Split": split}, view.get("headline", ""), table["title"], by
    ).encode("utf-8"),
    f"{export_stem(ss['meas'].name if table['key'] == ss.get('data_key') else str(table['key']))}_groups_report.html",
    "text/html",
    icon=":material/description:",
    on_click="ignore",
    help="A single HTML file: the headline, the groups' curves and split, and the table of errors, shares "
    "and constants; plotly.js is inlined, so it opens offline.",
)
