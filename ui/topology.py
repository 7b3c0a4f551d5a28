"""The Data page's topology field: GPUs (workers) per node, so that a target on more nodes than
measured gets the node-crossing widening of the population's prior (perfmodel.uncertainty.prior)."""

from __future__ import annotations

import streamlit as st

from perfmodel import Measurements
from perfmodel.uncertainty.prior import describe, topology

from . import state
from .text import md


def gpus_per_node_input(meas: Measurements) -> None:
    """A number field (0: unknown) shown when ``p`` is mapped and ``nodes`` is not; the value lives in
    ``st.session_state["gpus_per_node"]`` (None: the guess from the column name)."""
    ss = st.session_state
    meas = ss.get("meas_raw", meas)  # as mapped: a nodes column the topology made is not the user's
    if "p" not in meas.factors or "nodes" in meas.factors:
        if "nodes" in meas.factors:
            st.caption(md(describe(topology(meas))) + ".")
        return
    guess = topology(meas)
    if "w:gpus_per_node" not in ss:
        ss["w:gpus_per_node"] = int(guess["gpus_per_node"]) if guess else 0
    value = st.number_input(
        "GPUs (workers) per node",
        min_value=0,
        max_value=4096,
        step=1,
        key="w:gpus_per_node",
        help="How many of p share one node. A target on more nodes than the measurements "
        "reach gets the extra error real series showed when they crossed the node "
        "boundary. 0: unknown.",
    )
    state.set_gpus_per_node(int(value))
    shown = topology(meas, int(value))
    note = " (guessed from the column name)" if guess and int(value) == int(guess["gpus_per_node"]) else ""
    st.caption(md(describe(shown).replace(" (given)", note)) + ".")
