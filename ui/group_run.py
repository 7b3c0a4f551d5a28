"""The Groups page's fits, group by group: the charted groups first, then the others, then every
group's cross-validation, each step cached apart (``st.cache_data``, keyed on the table, the group
columns and the settings), so the page draws its first chart while the rest is fitted.

The stages are :func:`perfmodel.groups.plan_groups`' (:class:`perfmodel.groups.GroupPlan`), which
give what :func:`perfmodel.fit_groups` (the CLI's ``--group-by``) returns, number for number.
"""

from __future__ import annotations

import json

import streamlit as st

from perfmodel.groups import GroupFits, GroupOutcome, GroupPlan, plan_groups

from . import state

CV_K = 5


def charted_first(keys: list[tuple], n_by: int, most: int = 8) -> list[int]:
    """Positions of the groups charted at first among ``keys`` (their ``by`` values, ``n_by`` columns):
    those that differ from the first only in the first ``by`` column (e.g. every model on one
    platform), or else the first ``most``."""
    if n_by > 1 and keys:
        same = [i for i, k in enumerate(keys) if k[1:] == keys[0][1:]]
        if len(same) >= 2:
            return same[:most]
    return list(range(min(most, len(keys))))


def settings_for(table: dict, terms: str) -> dict:
    """The session's fit settings with ``terms`` (bounds kept only for the table's own terms)."""
    s = dict(state.fit_settings())
    s["terms"] = terms
    s["bounds"] = {k: list(v) for k, v in sorted(table["bounds"].items())} if terms == table["terms"] else {}
    return s


@st.cache_data(show_spinner=False, max_entries=32)
def _plan(key: str, by_json: str, settings_json: str, time: str, factors_json: str, _frame) -> GroupPlan:
    s = json.loads(settings_json)
    return plan_groups(
        _frame,
        json.loads(by_json),
        time=time,
        factors=json.loads(factors_json),
        terms=s["terms"],
        bounds={k: tuple(v) for k, v in s["bounds"].items()} or None,
        lam=s["lam"],
        penalty=s["penalty"],
        loss=s["loss"],
        seed=s["seed"],
        strategy=s["strategy"],
        popsize=s["popsize"],
        maxiter=s["maxiter"],
        tol=s["tol"],
        scale_weight=s.get("scale_weight", 1.0),
        cv=CV_K,
    )


@st.cache_data(show_spinner=False, max_entries=4096)
def _outcome(key: str, by_json: str, settings_json: str, index: int, cv: bool, _plan: GroupPlan) -> GroupOutcome:
    if cv:  # the fit (cached) and its cross-validation: fit_groups' outcome
        return _plan.cross_validate(index, _outcome(key, by_json, settings_json, index, False, _plan))
    return _plan.fit([index], cv=False)[0]


class GroupRun:
    """The groups of ``table`` by ``by`` fitted with ``terms``, one by one (each group's fit and its
    cross-validation cached apart), so the page can chart the first groups while the others are
    fitted; :meth:`fits` is what :func:`perfmodel.fit_groups` returns (the CLI's ``--group-by``).
    Raises PerfModelError (a bad column or term) when built."""

    def __init__(self, table: dict, by: list[str], terms: str):
        self.args = (str(table["key"]), json.dumps(list(by)), json.dumps(settings_for(table, terms), sort_keys=True))
        self.plan = _plan(
            *self.args, table["time"], json.dumps(table["factors"]), table["frame"]
        )  # in the mapping's order: it numbers the folds
        self.fitted: dict[int, GroupOutcome] = {}
        self.validated: dict[int, GroupOutcome] = {}

    @property
    def labels(self) -> list[str]:
        """Every group with rows (the others are skipped whatever the terms)."""
        return [t["label"] for t in self.plan.tasks if t["meas"].n_rows]

    def first(self, most: int = 8) -> list[int]:
        """The groups :func:`ui.groups_panel.default_shown` will chart, as far as the keys tell."""
        return charted_first(self.plan.keys, len(self.plan.by), most)

    def fit(self, indices, cv: bool = False, each=None) -> None:
        """Fit the groups at ``indices`` (``cv``: and cross-validate them); ``each(done, total, label)``
        before each group."""
        store = self.validated if cv else self.fitted
        todo = [i for i in indices if i not in store]
        for n, i in enumerate(todo):
            if each is not None:
                each(n, len(todo), self.plan.labels[i])
            store[i] = _outcome(*self.args, i, cv, self.plan)
            if cv:
                self.fitted.setdefault(i, store[i])

    def fits(self) -> GroupFits:
        """The groups fitted so far (each cross-validated when it was), in the table's order."""
        outcomes = {**self.fitted, **self.validated}
        return self.plan.fits(outcomes, "serial", sum(o.seconds for o in outcomes.values()))
