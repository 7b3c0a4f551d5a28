"""Every real scaling series we hold, turned into the same extrapolation splits.

    python benchmarks/corpus.py [--sources mlperf,relearn] [--max-splits-per-series K] [--seed S]
                                [--series-csv out.csv]

A *series* is one curve of run time against the scale factor ``p`` (GPUs, accelerators, workers,
cores or MPI ranks) with the other factors fixed; where a table also varies a data-size or batch
factor that a user would record (RELeARN's neurons per rank, Ernest's input fraction, MLPerf's and
MPT's global batch), that factor is kept as a column of the series instead. Every series carries:

* ``source``: the repository or collection it came from (``mlperf``, ``tf-cnn-2017``, ...), and a
  coarser ``family`` for the tables (``mlperf``, ``tf-cnn``, ``llm``, ``hpc``, ``allreduce``,
  ``other``);
* its :class:`perfmodel.Measurements` (``p`` and the kept factors mapped, and the symbol ``nodes``
  mapped to a ``nodes`` column that every frame has);
* its topology: ``gpus_per_node`` (workers per node), whether that was read from the source or
  guessed (``topology``), and per row ``nodes`` (read from the source where it gives one, else
  ``ceil(p / gpus_per_node)``).

A *split* (:func:`make_splits`) cuts a series at one of its measured scales ``p_cut`` (at least two
distinct scales at or below it): it trains on every row with ``p <= p_cut`` and tests on the rows
1 to 3 doublings beyond (``0 < d = log2(p / p_cut) <= 3``; farther rows are dropped). Every test
row knows its distance ``d``, its bucket ``(0,1]``, ``(1,2]`` or ``(2,3]``, and ``crosses_nodes``:
its node count is larger than any in the training rows (this includes every multi-node target of a
single-node training set). Each possible cut is a split; ``max_splits_per_series`` keeps a seeded,
deterministic subset of the cuts of each series.

Sources, units and judgements (each folder's README under ``../shared/refdata`` and ``data/README.md``)
----------------------------------------------------------------------------------------------------
* ``tf-cnn-2017`` (family ``tf-cnn``): ``data/tf_cnn`` (= the refdata table), one series per platform
  × model × data × per-GPU batch, as :func:`short_series.series` builds them (>= 4 GPU counts, so the
  two AlexNet real-data curves with 1, 2, 4 GPUs are left out). Time = seconds per ImageNet epoch
  at the measured throughput (derived by the page's authors' numbers: 1,281,167 / images/s).
  Topology known: the DGX-1, the GCE and the AWS servers are single machines of 8 GPUs; the AWS
  cluster is p2.8xlarge instances of 8 K80 (nodes = ceil(gpus / 8)).
* ``sweep`` (family ``other``): ``data/sweep``, the example job measured on this 2-core VM; one series
  per (b, N) (:func:`short_series.series`; its whole-table entry is left out, it holds the same rows).
  One node (``gpus_per_node`` = 4, known: one VM).
* ``mlperf``: ``../shared/refdata/mlperf-training``: every curve of ``mlperf_scaling_curves.csv``
  (149), with one row per successful run from ``mlperf_runs.csv`` (``status`` ok and ``run_status``
  success), time = ``minutes × 60`` s to train. Entries flagged ``identical_to_earlier_entry``
  (re-submitted logs) are dropped, as the README asks; curves left with fewer than 3 accelerator
  counts give no split. Factors ``p`` = total accelerators, ``B`` = the run's logged global batch
  (not mapped for minigo, which logs none). Topology known: nodes and accelerators per node from
  the systems JSON (TPU pods: declared as 1 node). The five ``data/mlperf`` files are subsets of
  these curves and are not loaded again.
* ``dawnbench`` (family ``other``): the two entries with three accelerator counts of the same code:
  fast.ai ResNet-50 on 4/8/16 AWS p3.16xlarge (32/64/128 V100, 8 per node) and Google AmoebaNet-D
  on 1/4/16 Cloud TPU v2 devices (nodes as the README's hand annotation: one per device). Time =
  cumulative hours at the last epoch × 3600 (time to the accuracy target); the epochs, batch and
  image-size schedules differ between the entries (README caveat), and epoch numbering starts at 0
  or 1, so no epoch factor is mapped. The 2-count entries cannot give a split.
* ``deepbench`` (family ``allreduce``): ``data/deepbench/allreduce.csv`` (= refdata, rows with a
  time), one series per platform × message size (p = GPUs or KNL nodes), time = mean all-reduce
  time (ms / 1000). Topology known: the sheets' node counts (GPU platforms 8 per node, KNL 1).
  The algorithm the sheet reports changes between cells of one curve (kept: it is what was measured).
* ``extradeep`` (family ``other``): ``data/extradeep`` (= refdata), whole-job wall time (1 s
  resolution) vs GPUs 2-20, 4 repetitions. Topology **guessed**: 4 GPUs per node (JUWELS Booster
  nodes have 4 A100; the logs do not record the nodes).
* ``relearn`` (family ``hpc``): ``data/relearn/relearn_timers.csv`` (= refdata), one series per
  timer × θ, with neurons per rank ``n`` kept as a factor (weak-scaling size), time = max over
  ranks (s). Left out: the three timers at or below the timer resolution (median < 1 µs:
  ``Update #synaptic elements + del synapses`` is 0, two others 40-50 ns). ``Simulation loop``,
  ``Connectivity update`` and ``Find target neurons`` are within a few % of ``main()`` (nested
  timers): kept, they are separate measurements, but near-duplicates. ``data/extrap/relearn_data.txt``
  is the θ = 0.1 slice of the same runs and is not loaded again. Topology **guessed**: 32 ranks per
  node (the smallest run, 32 ranks, taken as one node; not recorded).
* ``mpi-collectives`` (family ``hpc``): refdata ``mpi_data.csv`` (Extra-P's test data, real by its
  sample counts), one series per MPI × collective, time = the mean latency **as published (unit not
  stated, likely µs)**; relative errors do not depend on it. Topology **guessed**: 32 ranks per node.
  The other Extra-P test inputs are synthetic (README) and are left out.
* ``ernest`` (family ``other``): ``data/ernest/rcv1.csv``: Spark on r3.xlarge (4 cores each), p = cores,
  ``N`` = input fraction kept, time = s for 10 iterations; nodes = machines (known). Ernest's
  published *predictions* are model output and are not used.
* ``llm-foundry``, ``mosaicml-examples``, ``internevo``, ``nemo-launcher`` (family ``llm``):
  ``../shared/refdata/llm-training-scaling/scaling_series.csv``, 45 series of published throughput.
  **Time = seconds per 1e9 training tokens**: ``1e9 / total tokens/s`` (MPT, NeMo) or
  ``1e9 / (tokens/s/GPU × GPUs)`` (InternEvo), the ``time_s`` column the refdata computed (checked
  here against the throughput); a steady-state time without start-up, checkpoints or evaluation.
  MPT series also map ``N`` = 1e9 / seq_len samples and ``B`` = the published global batch (samples),
  which changes between points (weak scaling, and micro-batch/grad-accum changes in 20 series);
  InternEvo's global batch (tokens, rounded: 0.125M) grows in proportion to p and NeMo states none,
  so those map ``p`` only. Topology: NeMo nodes as published and InternEvo gpus / 8 (known: 8 GPUs
  per node); MPT does not state it: **guessed** 8 GPUs per node (H100/A100 SXM servers).
"""

from __future__ import annotations

import argparse
import math
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfmodel import Measurements
from perfmodel.data.datasets import DATA_DIR

REFDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "refdata"
if not REFDATA.exists():  # a worktree beside the main checkout: ../shared is the checkout's sibling
    REFDATA = Path("/work/shared/refdata")

#: source -> family (the benchmark table groups by family)
FAMILIES = {
    "mlperf": "mlperf",
    "tf-cnn-2017": "tf-cnn",
    "llm-foundry": "llm",
    "mosaicml-examples": "llm",
    "internevo": "llm",
    "nemo-launcher": "llm",
    "relearn": "hpc",
    "mpi-collectives": "hpc",
    "deepbench": "allreduce",
    "nvidia-dle": "dle",
    "dawnbench": "other",
    "extradeep": "other",
    "ernest": "other",
    "sweep": "other",
}
#: source -> where its rows are read (``data/...`` in this repository, ``refdata/...`` = ../shared/refdata)
SOURCE_DATA = {
    "tf-cnn-2017": "data/tf_cnn (= refdata/tf-cnn-benchmarks-2017)",
    "sweep": "data/sweep",
    "nvidia-dle": "refdata/nvidia-dle-training (dle_training.csv)",
    "mlperf": "refdata/mlperf-training (mlperf_scaling_curves.csv, mlperf_runs.csv)",
    "dawnbench": "refdata/dawnbench (dawnbench_train_entries.csv)",
    "deepbench": "data/deepbench/allreduce.csv (= refdata/deepbench)",
    "extradeep": "data/extradeep/cifar10_wall_time.csv (= refdata/extradeep-cifar10-darshan)",
    "relearn": "data/relearn/relearn_timers.csv (= refdata/relearn-hpc)",
    "mpi-collectives": "refdata/mpi-collectives-extrap (mpi_data.csv)",
    "ernest": "data/ernest/rcv1.csv (= refdata/ernest-rcv1)",
    "llm-foundry": "refdata/llm-training-scaling (scaling_series.csv)",
    "mosaicml-examples": "refdata/llm-training-scaling (scaling_series.csv)",
    "internevo": "refdata/llm-training-scaling (scaling_series.csv)",
    "nemo-launcher": "refdata/llm-training-scaling (scaling_series.csv)",
}
BUCKETS = ("(0,1]", "(1,2]", "(2,3]")
MAX_DOUBLINGS = 3.0
_EPS = 1e-9


@dataclass
class Series:
    """One curve of run time against ``p`` (other factors fixed or kept as mapped columns)."""

    source: str
    name: str
    meas: Measurements  # factors: p, the kept ones, and nodes (frame column "nodes")
    gpus_per_node: float
    topology: str  # how gpus_per_node and nodes were obtained
    topology_guessed: bool
    time_unit: str = "s"
    note: str = ""

    @property
    def family(self) -> str:
        return FAMILIES[self.source]

    @property
    def scales(self) -> np.ndarray:
        return np.unique(self.meas.values("p"))


@dataclass
class Split:
    """Train on the rows with ``p <= cut``, test on the rows up to 3 doublings beyond."""

    source: str
    family: str
    series: str
    cut: float
    train: Measurements
    test: Measurements
    distance: np.ndarray  # log2(p_test / cut), shape (test rows,)
    crosses_nodes: np.ndarray  # test row's nodes > max nodes of the training rows, shape (test rows,)
    n_train_scales: int
    n_train_configs: int
    gpus_per_node: float
    topology_guessed: bool
    time_unit: str = "s"
    extra: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.series}@p<={self.cut:g}"

    @property
    def bucket(self) -> np.ndarray:
        return np.array([bucket(d) for d in self.distance])


def bucket(d: float) -> str:
    """The distance bucket of ``d`` doublings: ``(0,1]``, ``(1,2]`` or ``(2,3]``."""
    return BUCKETS[min(2, max(0, math.ceil(d - _EPS) - 1))]


# ----------------------------------------------------------------------------------------
# building a series
# ----------------------------------------------------------------------------------------
def _series(
    source: str,
    name: str,
    frame: pd.DataFrame,
    time: str,
    factors: dict,
    gpus_per_node: float,
    topology: str,
    guessed: bool,
    nodes_column: str | None = None,
    time_unit: str = "s",
    note: str = "",
) -> Series:
    """A :class:`Series` of ``frame``: ``nodes`` from ``nodes_column`` when given (and filled in as
    ceil(p / gpus_per_node) where it is blank), else ceil(p / gpus_per_node) on every row."""
    frame = frame.reset_index(drop=True).copy()
    p = pd.to_numeric(frame[factors["p"]], errors="coerce").to_numpy(float)
    derived = np.ceil(p / gpus_per_node - 1e-9)
    if nodes_column is not None:
        given = pd.to_numeric(frame[nodes_column], errors="coerce").to_numpy(float)
        nodes = np.where(np.isfinite(given) & (given > 0), given, derived)
    else:
        nodes = derived
    frame = frame.drop(columns=[c for c in ("nodes",) if c in frame.columns and c != nodes_column])
    frame["nodes"] = nodes
    meas = Measurements.from_frame(frame, time, {**factors, "nodes": "nodes"}, name=f"{source}/{name}")
    return Series(source, name, meas, float(gpus_per_node), topology, guessed, time_unit, note)


def _from_meas(
    source: str, name: str, meas: Measurements, gpus_per_node: float, topology: str, guessed: bool, nodes_of_p=None
) -> Series:
    """A :class:`Series` from Measurements built elsewhere (``short_series``), nodes added."""
    frame = meas.frame.copy()
    p = meas.values("p")
    frame["nodes"] = nodes_of_p(p) if nodes_of_p is not None else np.ceil(p / gpus_per_node - 1e-9)
    factors = {k: v for k, v in meas.factors.items() if k != "nodes"}
    m = Measurements.from_frame(
        frame.reset_index(drop=True), meas.time, {**factors, "nodes": "nodes"}, name=f"{source}/{name}"
    )
    return Series(source, name, m, float(gpus_per_node), topology, guessed)


# ----------------------------------------------------------------------------------------
# one loader per source
# ----------------------------------------------------------------------------------------
def load_tf_cnn() -> list[Series]:
    """TF CNN benchmarks 2017 and the sweep, as :func:`short_series.series` cuts them."""
    from short_series import series as short

    out = []
    for name, meas in short(sweep=True):
        if name.startswith("mlperf-"):
            continue  # the refdata curves (load_mlperf) hold these runs and 144 more curves
        if name.startswith("sweep-"):
            if "/" not in name:
                continue  # the whole sweep table: the same rows as its (b, N) curves
            out.append(
                _from_meas(
                    "sweep",
                    name,
                    meas,
                    4,
                    "known: one 2-core VM (all runs on one node)",
                    False,
                    nodes_of_p=lambda p: np.ones_like(p),
                )
            )
            continue
        cluster = name.startswith("aws-k80-cluster/")
        topo = (
            "known: AWS p2.8xlarge instances of 8 K80, nodes = ceil(gpus / 8)"
            if cluster
            else "known: one server of 8 GPUs"
        )
        out.append(_from_meas("tf-cnn-2017", name, meas, 8, topo, False))
    return out


def load_mlperf() -> list[Series]:
    """Every MLPerf Training scaling curve, one row per successful run."""
    base = REFDATA / "mlperf-training"
    curves = pd.read_csv(base / "mlperf_scaling_curves.csv")
    runs = pd.read_csv(base / "mlperf_runs.csv")
    key = ["version", "submitter", "system", "benchmark"]
    curves = curves[curves["identical_to_earlier_entry"].isna()]
    runs = runs[(runs["status"] == "ok") & (runs["run_status"] == "success")]
    rows = curves.merge(runs[key + ["file", "global_batch_size", "minutes"]], on=key, suffixes=("_entry", ""))
    rows["time_s"] = rows["minutes"] * 60.0
    out = []
    for cid, g in rows.groupby("curve_id", sort=True):
        factors = {"p": "total_accelerators"}
        if g["global_batch_size"].notna().all():
            factors["B"] = "global_batch_size"
        gpn = g["accelerators_per_node"]
        out.append(
            _series(
                "mlperf",
                cid,
                g,
                "time_s",
                factors,
                float(gpn.max()),
                f"known: systems JSON (accelerators per node {'/'.join(f'{v:g}' for v in sorted(gpn.unique()))})",
                False,
                nodes_column="number_of_nodes",
            )
        )
    return out


DAWNBENCH_SERIES = {
    "fastai-resnet50-p3": ("fastai_resnet50_p3_", 8, "known: AWS p3.16xlarge, 8 V100 per machine"),
    "google-amoebanet-d-tpuv2": (
        "google_amoeba_net_d_",
        1,
        "as annotated in the refdata: one node per Cloud TPU v2 device",
    ),
}


def load_dawnbench() -> list[Series]:
    entries = pd.read_csv(REFDATA / "dawnbench" / "dawnbench_train_entries.csv")
    out = []
    for name, (prefix, gpn, topo) in DAWNBENCH_SERIES.items():
        g = entries[entries["entry"].str.startswith(prefix)].copy()
        g["time_s"] = g["total_hours"] * 3600.0
        out.append(
            _series(
                "dawnbench",
                name,
                g,
                "time_s",
                {"p": "n_accelerators"},
                gpn,
                topo,
                False,
                nodes_column="n_nodes",
                note="time to the accuracy target; epochs and batch schedules differ between entries",
            )
        )
    return out


def load_deepbench() -> list[Series]:
    d = pd.read_csv(DATA_DIR / "deepbench" / "allreduce.csv")
    out = []
    for (platform, size), g in d.groupby(["platform", "size_floats"], sort=True):
        gpn = 1 if platform.startswith("IA_") else 8
        topo = "known: the sheet's node counts" + (" (1 process per KNL node)" if gpn == 1 else " (8 GPUs per node)")
        out.append(
            _series(
                "deepbench",
                f"{platform}/{int(size)}floats",
                g,
                "time_s",
                {"p": "accelerators"},
                gpn,
                topo,
                False,
                nodes_column="nodes",
            )
        )
    return out


def load_extradeep() -> list[Series]:
    d = pd.read_csv(DATA_DIR / "extradeep" / "cifar10_wall_time.csv")
    return [
        _series(
            "extradeep",
            "cifar10-juwels-booster",
            d,
            "time_s",
            {"p": "gpus"},
            4,
            "guessed: 4 GPUs per node (JUWELS Booster); not recorded",
            True,
        )
    ]


#: RELeARN timers left out: zero or at the timer's resolution (median below 1 µs)
RELEARN_RESOLUTION_S = 1e-6


def load_relearn() -> list[Series]:
    d = pd.read_csv(DATA_DIR / "relearn" / "relearn_timers.csv")
    out = []
    for (kernel, theta), g in d.groupby(["kernel", "theta"], sort=True):
        if d.loc[d["kernel"] == kernel, "time_max_s"].median() < RELEARN_RESOLUTION_S:
            continue
        out.append(
            _series(
                "relearn",
                f"{kernel}/theta={theta:g}",
                g,
                "time_max_s",
                {"p": "ranks", "n": "neurons_per_rank"},
                32,
                "guessed: 32 ranks per node (the smallest run as one node); not recorded",
                True,
            )
        )
    return out


def load_mpi() -> list[Series]:
    d = pd.read_csv(REFDATA / "mpi-collectives-extrap" / "mpi_data.csv")
    out = []
    for (mpi, coll), g in d.groupby(["mpi", "variable"], sort=True):
        out.append(
            _series(
                "mpi-collectives",
                f"{mpi}/{coll}",
                g,
                "mean",
                {"p": "Ranks"},
                32,
                "guessed: 32 ranks per node; not recorded",
                True,
                time_unit="as published (not stated; likely µs)",
            )
        )
    return out


def load_ernest() -> list[Series]:
    d = pd.read_csv(DATA_DIR / "ernest" / "rcv1.csv")
    return [
        _series(
            "ernest",
            "rcv1-spark-r3.xlarge",
            d,
            "time_s",
            {"p": "cores", "N": "input_fraction"},
            4,
            "known: r3.xlarge machines of 4 cores (nodes = machines)",
            False,
            nodes_column="machines",
        )
    ]


LLM_SOURCES = {
    "llmfoundry": "llm-foundry",
    "mosaicex": "mosaicml-examples",
    "internevo": "internevo",
    "nemolauncher": "nemo-launcher",
}
LLM_TOKENS = 1e9


def _llm_time(g: pd.DataFrame) -> np.ndarray:
    """Seconds per 1e9 tokens from the published throughput (checked against the refdata's time_s)."""
    per_gpu = g["throughput_unit"].str.contains("/GPU")
    total = np.where(per_gpu, g["throughput"] * g["gpus"], g["throughput"])
    t = LLM_TOKENS / total
    if not np.allclose(t, g["time_s"], rtol=1e-6):
        raise ValueError(f"{g['series'].iloc[0]}: time_s differs from 1e9 / throughput")
    return t


def load_llm() -> list[Series]:
    d = pd.read_csv(REFDATA / "llm-training-scaling" / "scaling_series.csv")
    out = []
    for name, g in d.groupby("series", sort=True):
        source = LLM_SOURCES[name.split("__")[0]]
        g = g.copy()
        g["time_per_1e9_tokens_s"] = _llm_time(g)
        factors = {"p": "gpus"}
        if source in ("llm-foundry", "mosaicml-examples"):
            seq = g["config"].str.extract(r"seq_len=(\d+)")[0].astype(float)
            g["samples_per_1e9_tokens"] = LLM_TOKENS / seq
            if g["global_batch"].notna().all() and (g["global_batch_unit"] == "samples").all():
                factors.update({"N": "samples_per_1e9_tokens", "B": "global_batch"})
            topo, guessed, col = "guessed: 8 GPUs per node (not stated in the source)", True, None
        else:
            topo = (
                "known: nodes as published, 8 GPUs per node"
                if source == "nemo-launcher"
                else "known: 8 GPUs per node (the doc), nodes = gpus / 8"
            )
            guessed, col = False, "nodes"
        out.append(
            _series(
                source,
                name.split("__", 1)[1],
                g,
                "time_per_1e9_tokens_s",
                factors,
                8,
                topo,
                guessed,
                nodes_column=col,
                note="seconds per 1e9 tokens at the published throughput",
            )
        )
    return out


#: GPUs per node of the DeepLearningExamples systems (the refdata README: DGX-2/2H 16, DGX-1 and DGX A100 8)
DLE_GPUS_PER_NODE = {"DGX-2": 16, "DGX-2H": 16, "DGX-1": 8, "DGX-A100": 8}


def _dle_gpus_per_node(gpu_type: str) -> int:
    return next(v for k, v in sorted(DLE_GPUS_PER_NODE.items(), key=lambda kv: -len(kv[0])) if gpu_type.startswith(k))


def load_dle() -> list[Series]:
    """NVIDIA DeepLearningExamples: one series per published group (framework, model, variant, precision,
    system); the per-GPU batch ``b`` is kept as a factor (it varies within 108 groups: several batch sizes
    per GPU count, or a fixed global batch). Time = seconds per N samples at the published throughput."""
    d = pd.read_csv(REFDATA / "nvidia-dle-training" / "dle_training.csv")
    d = d[d["time_s"].notna() & (d["time_s"] > 0) & d["batch_size_per_gpu"].notna()]
    out = []
    for name, g in d.groupby("group", sort=True):
        if g["gpus"].nunique() < 3:
            continue  # no split: two GPU counts leave nothing beyond a two-scale training set
        gpn = _dle_gpus_per_node(str(g["gpu_type"].iloc[0]))
        out.append(
            _series(
                "nvidia-dle",
                name,
                g,
                "time_s",
                {"p": "gpus", "b": "batch_size_per_gpu"},
                gpn,
                f"known: {gpn} GPUs per {g['gpu_type'].iloc[0]} node; nodes as published in multi-node tables",
                False,
                nodes_column="nodes",
                note="seconds per N samples at the published throughput",
            )
        )
    return out


LOADERS = {
    "tf-cnn-2017": load_tf_cnn,
    "mlperf": load_mlperf,
    "dawnbench": load_dawnbench,
    "deepbench": load_deepbench,
    "extradeep": load_extradeep,
    "relearn": load_relearn,
    "mpi-collectives": load_mpi,
    "ernest": load_ernest,
    "llm": load_llm,
    "nvidia-dle": load_dle,
}


def load_series(sources=None, families=None) -> list[Series]:
    """Every series of the corpus (optionally only of these ``sources`` / ``families``), in a fixed order."""
    out = []
    for loader in LOADERS.values():
        out += loader()
    if sources:
        out = [s for s in out if s.source in set(sources)]
    if families:
        out = [s for s in out if s.family in set(families)]
    return out


# ----------------------------------------------------------------------------------------
# splits
# ----------------------------------------------------------------------------------------
def series_splits(s: Series) -> list[Split]:
    """Every split of one series: each measured scale with >= 2 scales at or below it and at least
    one row 0 < d <= 3 doublings beyond it."""
    p = s.meas.values("p")
    nodes = s.meas.values("nodes")
    scales = np.unique(p)
    out = []
    for cut in scales[1:]:
        train = p <= cut
        d = np.log2(p / cut)
        test = (d > _EPS) & (d <= MAX_DOUBLINGS + _EPS)
        if not test.any():
            continue
        tr = s.meas.subset(train)
        out.append(
            Split(
                s.source,
                s.family,
                s.name,
                float(cut),
                tr,
                s.meas.subset(test),
                d[test],
                nodes[test] > nodes[train].max(),
                int(len(np.unique(p[train]))),
                tr.n_configurations,
                s.gpus_per_node,
                s.topology_guessed,
                s.time_unit,
            )
        )
    return out


def _pick(items: list, k: int, seed: int, key: str) -> list:
    """A deterministic, seeded choice of ``k`` of ``items`` (order kept), independent of the process."""
    if k is None or len(items) <= k:
        return list(items)
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    keep = sorted(rng.choice(len(items), size=k, replace=False))
    return [items[i] for i in keep]


def make_splits(series: list[Series], max_splits_per_series: int | None = None, seed: int = 0) -> list[Split]:
    """The splits of every series; with ``max_splits_per_series`` at most that many per series
    (a seeded choice of its cuts)."""
    out = []
    for s in series:
        out += _pick(series_splits(s), max_splits_per_series, seed, f"{s.source}/{s.name}")
    return out


def quick_splits(splits: list[Split], per_family: int = 2, seed: int = 0, max_train_rows: int = 40) -> list[Split]:
    """A short seeded slice: ``per_family`` splits of each family, among those with at most
    ``max_train_rows`` training rows (fast to fit)."""
    out = []
    for fam in sorted({s.family for s in splits}):
        pool = [s for s in splits if s.family == fam and s.train.n_rows <= max_train_rows]
        out += _pick(pool, per_family, seed, fam)
    return out


# ----------------------------------------------------------------------------------------
# counts
# ----------------------------------------------------------------------------------------
def counts(series: list[Series], splits: list[Split]) -> pd.DataFrame:
    """Per source (with its family): series, series giving a split, splits, held-out rows,
    node-crossing rows, and the topology (gpus per node, guessed or known)."""
    rows = []
    for src in dict.fromkeys(s.source for s in series):
        ss = [s for s in series if s.source == src]
        sp = [s for s in splits if s.source == src]
        rows.append(
            {
                "family": FAMILIES[src],
                "source": src,
                "series": len(ss),
                "series_with_splits": len({s.series for s in sp}),
                "splits": len(sp),
                "heldout_rows": int(sum(s.test.n_rows for s in sp)),
                "node_crossing_rows": int(sum(s.crosses_nodes.sum() for s in sp)),
                "splits_3plus_configs": int(sum(s.n_train_configs >= 3 for s in sp)),
                "gpus_per_node": "/".join(f"{v:g}" for v in sorted({s.gpus_per_node for s in ss})),
                "topology": "guessed" if any(s.topology_guessed for s in ss) else "known",
            }
        )
    t = pd.DataFrame(rows).sort_values(["family", "source"]).reset_index(drop=True)
    fam = (
        t.groupby("family", sort=True)[
            ["series", "series_with_splits", "splits", "heldout_rows", "node_crossing_rows", "splits_3plus_configs"]
        ]
        .sum()
        .reset_index()
    )
    fam["source"] = "(family total)"
    total = (
        t[["series", "series_with_splits", "splits", "heldout_rows", "node_crossing_rows", "splits_3plus_configs"]]
        .sum()
        .to_frame()
        .T
    )
    total["family"], total["source"] = "all", "(all)"
    return pd.concat([t, fam, total], ignore_index=True).fillna("")


def distance_counts(splits: list[Split]) -> pd.DataFrame:
    """Held-out rows per family × distance bucket (and how many cross a node boundary)."""
    rows = []
    for s in splits:
        for b, c in zip(s.bucket, s.crosses_nodes, strict=True):
            rows.append({"family": s.family, "bucket": b, "crosses": bool(c)})
    f = pd.DataFrame(rows)
    t = f.groupby(["family", "bucket"]).agg(rows=("crosses", "size"), crossing=("crosses", "sum")).reset_index()
    return t


def series_table(series: list[Series]) -> pd.DataFrame:
    """One row per series: source, family, name, rows, scales, factors, topology."""
    return pd.DataFrame(
        [
            {
                "source": s.source,
                "family": s.family,
                "series": s.name,
                "rows": s.meas.n_rows,
                "scales": " ".join(f"{v:g}" for v in s.scales),
                "factors": ",".join(s.meas.factors),
                "gpus_per_node": s.gpus_per_node,
                "nodes": " ".join(f"{v:g}" for v in np.unique(s.meas.values("nodes"))),
                "topology": s.topology,
                "time_unit": s.time_unit,
                "note": s.note,
            }
            for s in series
        ]
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", default=None, help="comma-separated sources (default: all)")
    ap.add_argument("--families", default=None, help="comma-separated families (default: all)")
    ap.add_argument("--max-splits-per-series", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--series-csv", default=None, help="also write one row per series to this CSV")
    args = ap.parse_args(argv)
    series = load_series(args.sources and args.sources.split(","), args.families and args.families.split(","))
    splits = make_splits(series, args.max_splits_per_series, args.seed)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(counts(series, splits).to_string(index=False))
        print()
        print(distance_counts(splits).to_string(index=False))
    if args.series_csv:
        series_table(series).to_csv(args.series_csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
