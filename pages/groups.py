"""Groups: the same terms fitted to every framework, model or GPU type, compared side by side."""

import streamlit as st

from perfmodel import PerfModelError
from perfmodel.spreadsheet import to_csv
from perfmodel.plots.groups import MODES, common_range_end, group_quality_table, group_scaling_data, group_scaling_figure, group_split_figure
from perfmodel.plots.style import FACTOR_WORDS, fmt_num, view_unit
from ui import groups_panel
from ui.nav import guard
from ui.text import md

guard()
ss = st.session_state

st.title("Groups")
st.caption("One model per group, the same terms for all: which group scales better, and which term is why. "
           "Every group is fitted with the session's λ, loss and seed and cross-validated (5-fold); the command "
           "line does the same with `perfmodel fit DATA --group-by COL --out DIR`.")

tables = groups_panel.tables()
c = st.columns([3, 3])
label = c[0].selectbox("Table", list(tables), key="w:g:table",
                       help="The current data when it has columns to group by, or the bundled TensorFlow "
                            "benchmarks table (5 CNN models on 4 platforms).")
table = tables[label]
columns = table["columns"]
by_key = f"w:g:by:{table['key']}"
if by_key not in ss:
    ss[by_key] = list(table["groups"]) or columns[:1]
by = c[1].multiselect("Group by", columns, key=by_key,
                      help="Rows with equal values in these columns form one group (framework, model, GPU type…).")
terms_key = f"w:g:terms:{table['key']}"
if terms_key not in ss:
    ss[terms_key] = table["terms"]
terms = st.text_input("Terms (the same for every group)", key=terms_key,
                      help="Start-up, compute and communication terms, e.g. 1 + I*b^e1 + I*log2(p). A factor that "
                           "is constant within a group is left out of that group's terms (noted in the table).")
if not by:
    st.info("Choose at least one column to group by.", icon=":material/info:")
    st.stop()

try:
    with st.spinner("Fitting every group…"):
        fits = groups_panel.run(table, by, terms)
except PerfModelError as exc:
    st.error(md(exc), icon=":material/error:")
    st.stop()

skipped = [o for o in fits.outcomes if o.status != "ok"]
st.markdown(f"**{fits.n_ok} of {len(fits)} groups fitted** by {', '.join(md(b) for b in by)} in {fits.seconds:.1f} s"
            + (f"; {len(skipped)} skipped (reasons in the table)" if skipped else "") + ".")
labels = [o.label for o in fits.outcomes if o.result is not None]
if not labels:
    st.warning("No group could be fitted; see the reasons below.", icon=":material/warning:")
    st.dataframe(group_quality_table(fits), hide_index=True)
    st.stop()

symbols = sorted({s for o in fits.outcomes if o.result is not None for s in o.result.factors},
                 key=lambda s: (s != "p", s))
c = st.columns([3, 2, 2])
shown_key = f"w:g:shown:{table['key']}:{'|'.join(by)}"
if shown_key not in ss or not set(ss[shown_key]) <= set(labels):
    ss[shown_key] = groups_panel.default_shown(fits)
shown = c[0].multiselect("Groups on the charts", labels, key=shown_key,
                         help="Every group is in the table below; the charts show the ones chosen here (at first: "
                              "the groups that differ only in the first group column).")
x = c[1].selectbox("Scale along", symbols, key="w:g:x",
                   format_func=lambda s: f"{s}: {FACTOR_WORDS.get(s, (s,))[0]}")
mode = c[2].radio("Curves", MODES, key="w:g:mode", horizontal=True,
                  format_func=lambda m: {"time": "predicted time", "speedup": "speedup"}[m],
                  help="Speedup is each group's time at its smallest measured value over its time at x.")

fits = groups_panel.with_intervals(table, by, terms, fits, shown)  # the charted groups' bands
curves = group_scaling_data(fits, x, "speedup", labels=shown)
times = group_scaling_data(fits, x, "time", labels=shown)
# one unit for the time chart, the split chart and the constants (the split's totals lie on the curves)
unit = view_unit(*(c.y for c in times), *(c.high for c in times), *(c.points_y for c in times))
at = common_range_end(curves)
if at is not None and len(curves) > 1:
    st.markdown(groups_panel.headline(fits, curves, x, at))

st.plotly_chart(group_scaling_figure(fits, x, mode, labels=shown, curves=curves if mode == "speedup" else times,
                                     unit=unit), width="stretch")

values = sorted({float(v) for m in fits.data if x in m.factors and m.n_rows for v in m.values(x)})
if values:
    default = at if at in values else values[-1]
    at_split = st.select_slider(f"Split the time at {md(x)} =", options=values, value=default, format_func=fmt_num,
                                key=f"w:g:at:{x}",
                                help="The other factors are held at each group's most frequent measured value.")
    st.plotly_chart(group_split_figure(fits, {x: at_split}, labels=shown, unit=unit), width="stretch")

st.subheader("Errors, shares and constants per group")
groups_panel.show_tables(fits, unit)
st.caption(f"Constants in {unit} per unit of their term; —: the term is not in that group's model (a factor "
           "constant within the group left it out; see the notes). Each term's share of the time is in "
           "summary.csv.")
st.download_button("Download summary.csv", to_csv(fits.summary).encode("utf-8"), "summary.csv",
                   "text/csv", icon=":material/download:")
