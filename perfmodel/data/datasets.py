"""The catalogue of measured datasets shipped in ``data/``.

Each :class:`Dataset` names a file under ``data/``, the time column, a suggested mapping of model
symbols to columns, and a suggested term expression that fits it well, so the app's Data page and the
CLI can offer the datasets by name::

    >>> from perfmodel import datasets
    >>> [d.name for d in datasets.list_datasets()][:2]
    ['tf-cnn-resnet50-dgx1', 'tf-cnn-resnet50-k80-cluster']
    >>> meas = datasets.load_dataset("ernest-rcv1")          # a perfmodel.data.Measurements
    >>> frame = datasets.load_frame("mlperf-resnet-a100")     # the rows as a DataFrame

Provenance, units and caveats of every file are in ``data/README.md``; the files are produced by
``scripts/convert_refdata.py`` (the sweep file by ``python -m perfmodel sweep``).
This module never imports streamlit.

Imports from the data layer's readers and measurements and perfmodel.errors only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import PerfModelError, did_you_mean

#: The datasets' folder: the checkout's top-level ``data/``; an installed wheel ships the same files
#: as the package data ``perfmodel/_bundled`` (pyproject.toml maps ``data/`` there).
_PACKAGE = Path(__file__).resolve().parent.parent
_PACKAGED = _PACKAGE / "_bundled"
DATA_DIR = _PACKAGED if (_PACKAGED / "README.md").exists() else _PACKAGE.parent / "data"

KINDS = ("training", "collective", "hpc", "synthetic", "sweep")
FORMATS = ("csv", "extrap")


@dataclass(frozen=True)
class Dataset:
    """One measured dataset: where it is, what it measures, and how to model it.

    name : slug used by the CLI and the app (``mlperf-resnet-a100``).
    title, description : a short title and one line saying what was measured, where.
    source : provenance (repository, path, commit or paper).
    filename : path relative to ``data/``.
    format : ``"csv"`` or ``"extrap"`` (Extra-P text, read by :func:`perfmodel.data.read_extrap`).
    time : the time column (seconds); ``"time"`` for Extra-P files.
    factors : suggested symbol -> column mapping.
    terms : suggested expression (fits the data well with default settings).
    kind : ``training``, ``collective``, ``hpc``, ``synthetic`` or ``sweep``.
    rows_filter : column -> value equality filters selecting this dataset's rows of a shared file.
    groups : columns that split the rows into comparable groups (:func:`perfmodel.fit_groups`).
    time_unit : the unit of the time column, stated rather than read from its name (every bundled
        file's times are in seconds; RELeARN's ``time_min_s`` is the minimum over ranks, in seconds).
    """

    name: str
    title: str
    description: str
    source: str
    filename: str
    format: str
    time: str | None
    factors: dict
    terms: str
    kind: str
    rows_filter: dict | None = None
    groups: tuple = ()
    time_unit: str = "s"

    @property
    def path(self) -> Path:
        return DATA_DIR / self.filename

    @property
    def time_column(self) -> str:
        """The time column actually read (Extra-P files always give ``time``)."""
        return self.time or "time"


# ----------------------------------------------------------------------------------------- sources
_TF_SRC = (
    "tensorflow/tensorflow, tensorflow/docs_src/performance/benchmarks.md, commit "
    "5984ffefd320c5d71b801ee06079a51b91ea42c0 (tf_cnn_benchmarks, May 2017), transcribed by hand"
)
_MLPERF_SRC = (
    "mlcommons/training_results_{round} (commit {commit}), "
    "{submitter}/results/<system>/{benchmark}/result_*.txt and {submitter}/systems/<system>.json"
)
_MLPERF_COMMITS = {
    "v0.6": "f312518c2d6107eec983750eed23950f1f0c8a0e",
    "v0.7": "0a8a85a209c8e45b661596c382cc20f4e32fd2fe",
    "v1.1": "ebe92f81f7a69255a3b0a907595d8be623d75ec6",
    "v2.0": "8437fbb78349aa3c3054aeccb1d47d2a315a80e7",
    "v3.1": "d06288b2bd675a9d88e0e6181f5bb5626b71ec19",
}
_DEEPBENCH_SRC = (
    "baidu-research/DeepBench, commit da81ba7820739e2e506dc27f382d15be5479f98f, "
    "results/train/DeepBench_*.xlsx (all-reduce sheets)"
)
_RELEARN_SRC = (
    "extra-p/extrap-gpr, commit 015c5f88183b082aeb4e0a91536d5e3d4dfb51a8, "
    "relearn/relearn-125_execution_times/*.out (Ritter et al., 'Cost-Effective Empirical "
    "Performance Modeling'; Zenodo 10085298)"
)
_EXTRAP_SRC = "extra-p/extrap, commit 291ac8153ad38c582f36aa8653cd587634393310, {path}"


def _mlperf_source(round_: str, submitter: str, benchmark: str) -> str:
    return _MLPERF_SRC.format(round=round_, commit=_MLPERF_COMMITS[round_], submitter=submitter, benchmark=benchmark)


def _tf(name: str, title: str, model: str, platform: str, where: str, terms: str) -> Dataset:
    return Dataset(
        name=name,
        title=title,
        description=(
            f"{model} training throughput on {where}, synthetic input, 1-{'64' if 'cluster' in platform else '8'}"
            " GPUs × per-GPU batch 32/64, as seconds per ImageNet epoch"
        ),
        source=_TF_SRC,
        filename="tf_cnn/tf_cnn_benchmarks_2017.csv",
        format="csv",
        time="epoch_time_s",
        factors={"p": "gpus", "b": "batch_per_gpu", "N": "samples"},
        terms=terms,
        kind="training",
        rows_filter={"platform": platform, "model": model, "data": "synthetic"},
    )


def _mlperf(
    name: str, title: str, filename: str, round_: str, submitter: str, benchmark: str, what: str, terms: str
) -> Dataset:
    return Dataset(
        name=name,
        title=title,
        description=f"MLPerf Training {round_} {what}: time to train vs accelerators (global batch grows with scale)",
        source=_mlperf_source(round_, submitter, benchmark),
        filename=f"mlperf/{filename}",
        format="csv",
        time="time_s",
        factors={"p": "accelerators", "B": "global_batch", "nodes": "nodes"},
        terms=terms,
        kind="training",
    )


def _extrap(
    name: str,
    title: str,
    description: str,
    filename: str,
    src_path: str,
    factors: dict,
    terms: str,
    rows_filter: dict | None = None,
    kind: str = "synthetic",
) -> Dataset:
    return Dataset(
        name=name,
        title=title,
        description=description,
        source=_EXTRAP_SRC.format(path=src_path),
        filename=f"extrap/{filename}",
        format="extrap",
        time=None,
        factors=factors,
        terms=terms,
        kind=kind,
        rows_filter=rows_filter,
    )


_CATALOGUE: list[Dataset] = [
    # ---------------------------------------------------------------------------------- training
    _tf(
        "tf-cnn-resnet50-dgx1",
        "ResNet-50 on DGX-1 (8× P100), TensorFlow 2017",
        "ResNet-50",
        "dgx1-p100",
        "an NVIDIA DGX-1 (8× P100)",
        "1 + I*b^e1 + I*log2(p)",
    ),
    _tf(
        "tf-cnn-resnet50-k80-cluster",
        "ResNet-50 on up to 8 AWS p2.8xlarge (64× K80), TensorFlow 2017",
        "ResNet-50",
        "aws-k80-cluster",
        "a cluster of AWS p2.8xlarge instances (8× K80 each)",
        "1 + I*b^e1 + I*log2(p)",
    ),
    _tf(
        "tf-cnn-inceptionv3-k80-cluster",
        "Inception-v3 on up to 8 AWS p2.8xlarge (64× K80), TensorFlow 2017",
        "InceptionV3",
        "aws-k80-cluster",
        "a cluster of AWS p2.8xlarge instances (8× K80 each)",
        "1 + I*b^e1 + I*log2(p)",
    ),
    Dataset(
        name="tf-cnn-all",
        title="TensorFlow CNN benchmarks 2017: 5 models on 4 platforms, one curve each (groups)",
        description=(
            "Every synthetic-input row of the TensorFlow benchmarks page: InceptionV3, ResNet-50, "
            "ResNet-152, AlexNet and VGG16 on a DGX-1, GCE and AWS K80 servers and an AWS K80 cluster, "
            "as seconds per ImageNet epoch; fit one model per model × platform"
        ),
        source=_TF_SRC,
        filename="tf_cnn/tf_cnn_benchmarks_2017.csv",
        format="csv",
        time="epoch_time_s",
        factors={"p": "gpus", "b": "batch_per_gpu", "N": "samples"},
        terms="1 + I*b^e1 + I*log2(p)",
        kind="training",
        rows_filter={"data": "synthetic"},
        groups=("model", "platform"),
    ),
    _tf(
        "tf-cnn-vgg16-dgx1",
        "VGG16 on DGX-1 (8× P100), TensorFlow 2017",
        "VGG16",
        "dgx1-p100",
        "an NVIDIA DGX-1 (8× P100)",
        "1 + I*b^e1 + I*log2(p)",
    ),
    Dataset(
        name="extradeep-cifar10",
        title="CIFAR-10 Horovod training on JUWELS Booster, wall time vs GPUs",
        description=(
            "Whole-job wall time of a TensorFlow+Horovod CIFAR-10 training script on 2-20 GPUs, "
            "4 repetitions (from Darshan log headers, 1 s resolution)"
        ),
        source=(
            "extra-p/extradeep, commit 32b84f91b7d0b41c48157bc33459b1ac2757d887, 'sample measurements/"
            "input output analysis/cifar10_g{G}_r{R}.log' (Ritter & Wolf, Extra-Deep, ProTools @ SC23; "
            "DOI 10.5281/zenodo.14183393)"
        ),
        filename="extradeep/cifar10_wall_time.csv",
        format="csv",
        time="time_s",
        factors={"p": "gpus"},
        terms="1 + 1/p + log2(p)",
        kind="training",
    ),
    _mlperf(
        "mlperf-resnet-a100",
        "MLPerf ResNet-50 on Dell XE8545 (4-128 A100)",
        "resnet_a100.csv",
        "v2.0",
        "Dell",
        "resnet",
        "ResNet-50 on Dell PowerEdge XE8545 nodes (4× A100-SXM-40GB each)",
        "1 + 1/p + B/p",
    ),
    _mlperf(
        "mlperf-resnet-tpu-v3",
        "MLPerf ResNet-50 on Google TPU v3 (16-1024 chips)",
        "resnet_tpu_v3.csv",
        "v0.6",
        "Google",
        "resnet",
        "ResNet-50 on Google Cloud TPU v3 pods",
        "1 + 1/p + B/p",
    ),
    _mlperf(
        "mlperf-resnet-gaudi",
        "MLPerf ResNet-50 on Habana Gaudi (8-256 cards)",
        "resnet_gaudi.csv",
        "v1.1",
        "Intel-HabanaLabs",
        "resnet",
        "ResNet-50 on Habana HLS-1H servers (Gaudi)",
        "1 + 1/p + B/p",
    ),
    _mlperf(
        "mlperf-gpt3-h100",
        "MLPerf GPT-3 175B on NVIDIA Eos (768-10752 H100)",
        "gpt3_h100.csv",
        "v3.1",
        "NVIDIA",
        "gpt3",
        "GPT-3 175B pre-training benchmark on NVIDIA Eos (DGX H100)",
        "1 + 1/p + B/p",
    ),
    _mlperf(
        "mlperf-transformer-a100",
        "MLPerf Transformer on DGX A100 (8-480 A100)",
        "transformer_a100.csv",
        "v0.7",
        "NVIDIA",
        "transformer",
        "Transformer (WMT En-De) on NVIDIA DGX A100 nodes",
        "1 + 1/p + B/p",
    ),
    # -------------------------------------------------------------------------------- collective
    Dataset(
        name="deepbench-allreduce-knl",
        title="DeepBench all-reduce on Intel KNL (2-32 nodes, Intel MLSL)",
        description="Baidu DeepBench all-reduce time vs nodes × message size on Xeon Phi 7250 nodes, one algorithm",
        source=_DEEPBENCH_SRC,
        filename="deepbench/allreduce.csv",
        format="csv",
        time="time_s",
        factors={"p": "accelerators", "m": "size_mib", "nodes": "nodes"},
        terms="1 + log2(p) + m*p^e1",
        kind="collective",
        rows_filter={"platform": "IA_KNL7250"},
    ),
    Dataset(
        name="deepbench-allreduce-p100",
        title="DeepBench all-reduce on NVIDIA P100 (2-16 GPUs)",
        description=(
            "Baidu DeepBench all-reduce time vs GPUs × message size on P100; the sheet's fastest "
            "algorithm per cell (NCCL/Baidu ring), 16 GPUs span 2 nodes"
        ),
        source=_DEEPBENCH_SRC,
        filename="deepbench/allreduce.csv",
        format="csv",
        time="time_s",
        factors={"p": "accelerators", "m": "size_mib", "nodes": "nodes"},
        terms="1 + log2(p) + m*p^e1",
        kind="collective",
        rows_filter={"platform": "NV_P100"},
    ),
    # ---------------------------------------------------------------------------------------- hpc
    Dataset(
        name="relearn-main",
        title="RELeARN brain simulation: total time vs ranks × neurons × θ",
        description=(
            "main() timer (max over ranks) of the RELeARN neuron simulation, 32-512 MPI ranks × "
            "5000-9000 neurons per rank × Barnes-Hut θ 0.1-0.5, 2 repetitions"
        ),
        source=_RELEARN_SRC,
        filename="relearn/relearn_timers.csv",
        format="csv",
        time="time_max_s",
        factors={"p": "ranks", "n": "neurons_per_rank", "theta": "theta"},
        terms="1 + n*theta^e1*p^e2",
        kind="hpc",
        rows_filter={"kernel": "main()"},
    ),
    Dataset(
        name="relearn-initialization",
        title="RELeARN: initialization time vs ranks (× neurons × θ)",
        description=(
            "Initialization timer (max over ranks) of the RELeARN simulation, 32-512 MPI ranks × "
            "5000-9000 neurons per rank × θ 0.1-0.5: grows with ranks only"
        ),
        source=_RELEARN_SRC,
        filename="relearn/relearn_timers.csv",
        format="csv",
        time="time_max_s",
        factors={"p": "ranks", "n": "neurons_per_rank", "theta": "theta"},
        terms="1 + p",
        kind="hpc",
        rows_filter={"kernel": "Initialization"},
    ),
    Dataset(
        name="ernest-rcv1",
        title="Ernest: Spark logistic regression on RCV1 (EC2 r3.xlarge)",
        description=(
            "10 iterations of Spark MLlib logistic regression on RCV1 on 1-8 r3.xlarge machines × "
            "input fraction 1.6-12.5 %, the 7 points chosen by Ernest's experiment design"
        ),
        source=(
            "amplab/ernest, commit 4a7359c2570684116504c9a47eecb1271cd08125, examples/rcv1-parsed.csv "
            "(Venkataraman et al., Ernest, NSDI 2016)"
        ),
        filename="ernest/rcv1.csv",
        format="csv",
        time="time_s",
        factors={"m": "machines", "x": "input_fraction"},
        terms="1 + x/m + log2(m) + m",
        kind="hpc",
    ),
    _extrap(
        "extrap-relearn",
        "RELeARN (θ = 0.1) in Extra-P format: ranks × neurons per rank",
        "main() of RELeARN at θ = 0.1, 32-512 ranks × 5000-9000 neurons per rank, max over ranks, 2 reps "
        "(Extra-P's tests/data/text/mpa/relearn_data.txt)",
        "relearn_data.txt",
        "tests/data/text/mpa/relearn_data.txt (= extra-p/extrap-gpr relearn/relearn_data.txt)",
        {"p": "p", "n": "n"},
        "1 + n*p^e1",
        rows_filter={"region": "main()"},
        kind="hpc",
    ),
    # ---------------------------------------------------------------------------------- synthetic
    _extrap(
        "extrap-one-parameter-1",
        "Extra-P test: one parameter, 1 + 0.2·x² with noise",
        "Synthetic: x = 20..60, f = 1 + 0.2·x² with ±2 % noise, 6 repetitions",
        "text_one_parameter_1.txt",
        "tests/data/text/one_parameter_1.txt",
        {"x": "x"},
        "1 + x^e1",
    ),
    _extrap(
        "extrap-one-parameter-6",
        "Extra-P test: one parameter, (p/1000)² + log2(p/1000) + 1 (region met3)",
        "Synthetic: p = 1000..16000, region met3 ≈ (p/1000)² + log2(p/1000) + 1, 3 repetitions",
        "text_one_parameter_6.txt",
        "tests/data/text/one_parameter_6.txt",
        {"p": "p"},
        "1 + p^e1 + log2(p)",
        rows_filter={"region": "met3"},
    ),
    _extrap(
        "extrap-strong-scaling-6",
        "Extra-P test: strong scaling (region met2 reversed)",
        "Synthetic: p = 1000..16000, region met2 = (p/1000)² listed in reverse (time falls with p)",
        "text_strong_scaling_one_parameter_6.txt",
        "tests/data/text/strong_scaling/one_parameter_6.txt",
        {"p": "p"},
        "1 + p^e1",
        rows_filter={"region": "met2"},
    ),
    _extrap(
        "extrap-segmented-1",
        "Extra-P test: segmented, p² then 30 + p",
        "Synthetic: p = 1..10, f = p² for p ≤ 6 and 30 + p for p ≥ 6, noise-free",
        "text_one_parameter_segmented_1.txt",
        "tests/data/text/one_parameter_segmented_1.txt",
        {"p": "p"},
        "1 + min(p^2, 30 + p)",
    ),
    _extrap(
        "extrap-two-parameter-1",
        "Extra-P test: two parameters, 1 + 0.2·x²·log2(y)",
        "Synthetic: x = 20..60 × y = 1..5, f = 1 + 0.2·x²·log2(y) with ±2 % noise, 5 repetitions",
        "text_two_parameter_1.txt",
        "tests/data/text/two_parameter_1.txt",
        {"x": "x", "y": "y"},
        "1 + x^e1*log2(y)",
    ),
    _extrap(
        "extrap-two-parameter-5",
        "Extra-P test: two parameters, 2 + 0.884·s·log2(p)",
        "Synthetic: p = 2..32 × s = 10..50, f = 2 + 0.884·s·log2(p), noise-free",
        "text_two_parameter_5.txt",
        "tests/data/text/two_parameter_5.txt",
        {"p": "p", "s": "s"},
        "1 + s*log2(p)",
    ),
    _extrap(
        "extrap-two-parameter-6",
        "Extra-P test: two parameters, 1 + 0.05·s^1.5·p",
        "Synthetic: p = 2..32 × s = 10..50, f = 1 + 0.05·s^1.5·p, noise-free",
        "text_two_parameter_6.txt",
        "tests/data/text/two_parameter_6.txt",
        {"p": "p", "s": "s"},
        "1 + s^e1*p",
    ),
    _extrap(
        "extrap-three-parameter-1",
        "Extra-P test: three parameters, 1 + 0.2·x²·log2(y) + 0.1·x·y²·z",
        "Synthetic: x = 20..60 × y = 1..5 × z = 100..500, ±2 % noise, 5 repetitions",
        "text_three_parameter_1.txt",
        "tests/data/text/three_parameter_1.txt",
        {"x": "x", "y": "y", "z": "z"},
        "1 + x^2*log2(y) + x*y^2*z",
    ),
    _extrap(
        "extrap-docs-example",
        "Extra-P quick-start example (≈ p^1.5)",
        "Extra-P documentation example: p = 4..64, 3 repetitions, grows ≈ ×2.83 per doubling",
        "docs_examples_input.txt",
        "docs/examples/input.txt",
        {"p": "p"},
        "1 + p^e1",
    ),
    # -------------------------------------------------------------------------------------- sweep
    Dataset(
        name="sweep-dp-sgd-2core",
        title="Data-parallel SGD example swept on a 2-core VM",
        description=(
            "examples/dp_sgd.py (numpy MLP, p worker processes, shared-memory all-reduce) measured "
            "with perfmodel sweep: p = 1-4 × b = 16-256 × N = 30000/120000, E = 3, 3 repetitions"
        ),
        source="measured for this project with `python -m perfmodel sweep` (see data/README.md)",
        filename="sweep/dp_sgd_2core_epyc_kvm.csv",
        format="csv",
        time="time_s",
        factors={"p": "p", "b": "b", "N": "N", "E": "E"},
        terms="1 + N + I + E*N/min(p, 2) + I*(p-1)",
        kind="sweep",
        rows_filter={"status": "ok"},
    ),
]

DEFAULT_DATASET = "tf-cnn-resnet50-dgx1"

_BY_NAME = {d.name: d for d in _CATALOGUE}
assert len(_BY_NAME) == len(_CATALOGUE), "duplicate dataset names"
assert DEFAULT_DATASET in _BY_NAME


def list_datasets(kind: str | None = None) -> list[Dataset]:
    """All datasets (default first), optionally only those of one ``kind``."""
    if kind is not None and kind not in KINDS:
        raise PerfModelError(f"unknown dataset kind {kind!r}; known: {', '.join(KINDS)}")
    return [d for d in _CATALOGUE if kind is None or d.kind == kind]


def get_dataset(name: str) -> Dataset:
    """The catalogue entry called ``name``; unknown names raise :class:`PerfModelError`."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        known = list(_BY_NAME)
        raise PerfModelError(
            f"unknown dataset {name!r}{did_you_mean(str(name), known)}; known: {', '.join(known)}"
        ) from None


def load_frame(name: str) -> pd.DataFrame:
    """The dataset's rows as read from its file, after ``rows_filter`` (index reset)."""
    from .readers import read_csv, read_extrap

    ds = get_dataset(name)
    if not ds.path.exists():
        raise PerfModelError(f"dataset {name!r}: file {ds.path} is missing (data/ is part of the project)")
    frame = read_csv(ds.path) if ds.format == "csv" else read_extrap(ds.path)
    for column, value in (ds.rows_filter or {}).items():
        if column not in frame.columns:
            raise PerfModelError(f"dataset {name!r}: filter column {column!r} not in {ds.filename}")
        frame = frame[_equal(frame[column], value)]
    if frame.empty:
        raise PerfModelError(f"dataset {name!r}: no rows match {ds.rows_filter}")
    return frame.reset_index(drop=True)


def load_dataset(name: str):
    """The dataset as :class:`perfmodel.data.Measurements` with the suggested factor mapping.

    Rows of a sweep whose ``status`` is not ``ok`` (failed or timed-out runs) are left out.
    """
    from .measurements import Measurements
    from .time_units import time_in_seconds

    ds = get_dataset(name)
    frame, time = time_in_seconds(load_frame(name), ds.time_column, ds.time_unit)
    return Measurements.from_frame(frame, time=time, factors=dict(ds.factors), name=ds.name)


def _equal(series: pd.Series, value) -> pd.Series:
    """Equality that also matches numbers read as text (and text read as numbers)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return pd.to_numeric(series, errors="coerce") == value
    return series.astype(str).str.strip() == str(value)
