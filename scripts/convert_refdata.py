#!/usr/bin/env python3
"""Convert the public reference measurements in ``../shared/refdata`` into the tidy CSVs in ``data/``.

Reproducible: run ``python scripts/convert_refdata.py`` from the repository root (or pass
``--refdata DIR --out DIR``); the output depends only on the input files. Every output CSV has one row
per measured run, factor columns with units in their names, and a time column in **seconds**.
Provenance, units and caveats of every file are in ``data/README.md``.

What is converted (see the functions below for the exact rules):

* MLPerf Training: per-run rows of a few clean time-to-train vs accelerators curves
  (``mlperf_runs.csv`` joined with ``mlperf_systems.csv``; successful runs only; minutes × 60 = seconds).
* TensorFlow CNN benchmarks (2017): images/s converted to seconds per ImageNet-1k epoch
  (1,281,167 images / images_per_sec).
* DeepBench all-reduce: milliseconds / 1000 = seconds; message size in floats and bytes.
* RELeARN timers: per kernel, per repetition (already in seconds).
* Ernest rcv1: 10 iterations of Spark logistic regression (seconds).
* Extra-Deep CIFAR-10: whole-job wall time vs GPUs (seconds).
* Extra-P text inputs: copied verbatim (byte for byte).
* NVIDIA DeepLearningExamples (the stakeholder's walk): six EfficientNet throughput series on a DGX A100
  (images/s, kept as published, with a ``model`` column), and BERT-Large pre-training on DGX-2H nodes
  (16 V100 each) as hours to train (phase 1 + phase 2 samples over the published throughputs).

The script never writes outside ``--out`` and never deletes anything but the files it regenerates.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
DEFAULT_REFDATA = REPO.parent / "shared" / "refdata"
DEFAULT_OUT = REPO / "data"

IMAGENET_TRAIN_IMAGES = 1_281_167  # ImageNet-1k (ILSVRC-2012) training set size
BYTES_PER_FLOAT32 = 4

# MLPerf curves shipped: output file -> (round, submitter, benchmark, systems in order of size).
# Chosen from mlperf-training/README.md "Good clean strong-scaling curves"; each is one submitter's
# same-round, same-code series over accelerator counts.
MLPERF_CURVES: dict[str, dict] = {
    "resnet_a100.csv": {
        "version": "v2.0",
        "submitter": "Dell",
        "benchmark": "resnet",
        "systems": [
            "XE8545x4A100-SXM-40GB",
            "2xXE8545x4A100-SXM-40GB",
            "4xXE8545x4A100-SXM-40GB",
            "8xXE8545x4A100-SXM-40GB",
            "16xXE8545x4A100-SXM-40GB",
            "32xXE8545x4A100-SXM-40GB",
        ],
    },
    "resnet_tpu_v3.csv": {
        "version": "v0.6",
        "submitter": "Google",
        "benchmark": "resnet",
        "systems": ["tpu-v3-32", "tpu-v3-128", "tpu-v3-256", "tpu-v3-512", "tpu-v3-1024", "tpu-v3-2048"],
    },
    "resnet_gaudi.csv": {
        "version": "v1.1",
        "submitter": "Intel-HabanaLabs",
        "benchmark": "resnet",
        "systems": ["HLS-1H-N2", "HLS-1H-N4", "HLS-1H-N8", "HLS-1H-N16", "HLS-1H-N32", "HLS-1H-N64"],
    },
    "gpt3_h100.csv": {
        "version": "v3.1",
        "submitter": "NVIDIA",
        "benchmark": "gpt3",
        "systems": [
            "eos_n96_ngc23.09_nemo",
            "eos-dfw_n512_ngc23.09_nemo",
            "eos-dfw_n768_ngc23.09_nemo",
            "eos-dfw_n1024_ngc23.09_nemo",
            "eos-dfw_n1280_ngc23.09_nemo",
            "eos-dfw_n1344_ngc23.09_nemo",
        ],
    },
    "transformer_a100.csv": {
        "version": "v0.7",
        "submitter": "NVIDIA",
        "benchmark": "transformer",
        "systems": [
            "dgxa100_ngc20.06_pytorch",
            "dgxa100_n2_ngc20.06_pytorch",
            "dgxa100_n10_ngc20.06_pytorch",
            "dgxa100_n20_ngc20.06_pytorch",
            "dgxa100_n60_ngc20.06_pytorch",
        ],
    },
}

TF_PLATFORM_IDS = {
    "DGX-1 (8x P100)": "dgx1-p100",
    "GCE n1-standard-32-k80x8 (8x K80)": "gce-k80",
    "AWS p2.8xlarge (8x K80)": "aws-k80",
    "AWS p2.8xlarge cluster (distributed, up to 8 instances x 8 K80)": "aws-k80-cluster",
}

# Extra-P text inputs copied verbatim: source (relative to refdata) -> name under data/extrap/.
EXTRAP_FILES = {
    "extrap-tests/docs_examples_input.txt": "docs_examples_input.txt",
    "extrap-tests/text_one_parameter_1.txt": "text_one_parameter_1.txt",
    "extrap-tests/text_one_parameter_6.txt": "text_one_parameter_6.txt",
    "extrap-tests/text_one_parameter_segmented_1.txt": "text_one_parameter_segmented_1.txt",
    "extrap-tests/text_strong_scaling_one_parameter_6.txt": "text_strong_scaling_one_parameter_6.txt",
    "extrap-tests/text_three_parameter_1.txt": "text_three_parameter_1.txt",
    "extrap-tests/text_two_parameter_1.txt": "text_two_parameter_1.txt",
    "extrap-tests/text_two_parameter_5.txt": "text_two_parameter_5.txt",
    "extrap-tests/text_two_parameter_6.txt": "text_two_parameter_6.txt",
    "relearn-hpc/relearn_data_extrap_format.txt": "relearn_data.txt",
}


# NVIDIA DeepLearningExamples rows for the stakeholder's walk (tests/browser/test_walk_browser.py).
DLE_CSV = "nvidia-dle-training/dle_training.csv"
#: The throughput table: (group in dle_training.csv, model name in data/) on DGX A100 80GB, AMP.
DLE_A100_CNN = {
    "PyTorch|EfficientNet|model=efficientnet-b0|AMP|DGX-A100-80GB": "efficientnet-b0",
    "PyTorch|EfficientNet|model=efficientnet-b4|AMP|DGX-A100-80GB": "efficientnet-b4",
    "PyTorch|EfficientNet|model=efficientnet-widese-b0|AMP|DGX-A100-80GB": "efficientnet-widese-b0",
    "PyTorch|EfficientNet|model=efficientnet-widese-b4|AMP|DGX-A100-80GB": "efficientnet-widese-b4",
    "TensorFlow2|EfficientNet-v1|v1-b4|AMP|DGX-A100-80GB": "efficientnet-v1-b4",
    "TensorFlow2|EfficientNet-v2-S|v2-s|AMP|DGX-A100-80GB": "efficientnet-v2-s",
}
#: The time-to-train table: BERT-Large pre-training, TensorFlow, mixed precision, DGX-2H (16 V100 per node).
DLE_BERT_PHASES = {
    "TensorFlow|BERT-large|pretrain;multinode;seq=128|AMP|DGX-2H-V100-32GB": 7038 * 65536,  # phase 1
    "TensorFlow|BERT-large|pretrain;multinode;seq=512|AMP|DGX-2H-V100-32GB": 1563 * 32768,  # phase 2
}


class ConversionError(RuntimeError):
    """The reference data does not look like what this converter was written for."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConversionError(message)


def _write_csv(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, lineterminator="\n")
    return path


# --------------------------------------------------------------------------------------------- MLPerf
def convert_mlperf(refdata: Path, out: Path) -> list[Path]:
    """One CSV per curve in MLPERF_CURVES, one row per successful run (repeats are separate rows).

    Runs come from ``mlperf_runs.csv`` (``status == ok`` i.e. the log was read, and
    ``run_status == success`` i.e. the run reached the quality target); accelerator counts from
    ``mlperf_systems.csv``. Entries flagged ``identical_to_earlier_entry`` in ``mlperf_summary.csv``
    (re-submitted logs) are dropped. ``time_s`` = ``minutes`` × 60.
    """
    src = refdata / "mlperf-training"
    runs = pd.read_csv(src / "mlperf_runs.csv")
    systems = pd.read_csv(src / "mlperf_systems.csv")
    summary = pd.read_csv(src / "mlperf_summary.csv")
    key = ["version", "submitter", "system"]
    duplicates = summary[summary["identical_to_earlier_entry"].notna()][key + ["benchmark"]]
    written = []
    for filename, spec in MLPERF_CURVES.items():
        sel = runs[
            (runs["version"] == spec["version"])
            & (runs["submitter"] == spec["submitter"])
            & (runs["benchmark"] == spec["benchmark"])
            & runs["system"].isin(spec["systems"])
        ]
        sel = sel.merge(duplicates, on=key + ["benchmark"], how="left", indicator=True)
        sel = sel[sel["_merge"] == "left_only"].drop(columns="_merge")
        sel = sel[(sel["status"] == "ok") & (sel["run_status"] == "success")]
        _require(
            set(sel["system"]) == set(spec["systems"]),
            f"MLPerf {filename}: systems without successful runs: {sorted(set(spec['systems']) - set(sel['system']))}",
        )
        sel = sel.merge(systems, on=key, how="left", validate="many_to_one")
        _require(sel["total_accelerators"].notna().all(), f"MLPerf {filename}: system without accelerators")
        order = {name: i for i, name in enumerate(spec["systems"])}
        sel = sel.assign(_order=sel["system"].map(order)).sort_values(["_order", "file"])
        frame = pd.DataFrame(
            {
                "round": sel["version"],
                "submitter": sel["submitter"],
                "system": sel["system"],
                "benchmark": sel["benchmark"],
                "accelerator": sel["accelerator_model_name"],
                "framework": sel["framework"],
                "nodes": sel["number_of_nodes"].astype(int),
                "accelerators_per_node": sel["accelerators_per_node"].astype(int),
                "accelerators": sel["total_accelerators"].astype(int),
                "global_batch": sel["global_batch_size"].astype(int),
                "run": sel["file"].str.replace(".txt", "", regex=False),
                "time_min": sel["minutes"],
                "time_s": (sel["minutes"] * 60).round(3),
            }
        )
        written.append(_write_csv(frame, out / "mlperf" / filename))
    return written


# ------------------------------------------------------------------------------------------ TF CNN
def convert_tf_cnn(refdata: Path, out: Path) -> list[Path]:
    """All measured rows of the 2017 tf_cnn_benchmarks page (rows whose throughput is "N/A" are dropped).

    ``epoch_time_s`` = 1,281,167 / ``images_per_sec``: seconds per ImageNet-1k epoch at the measured
    throughput (the page reports throughput only). ``step_time_s`` = ``global_batch`` / ``images_per_sec``.
    ``samples`` = 1,281,167 so that a data-size symbol N can be mapped.
    """
    src = pd.read_csv(refdata / "tf-cnn-benchmarks-2017" / "tf_cnn_benchmarks_2017.csv")
    unknown = set(src["platform"]) - set(TF_PLATFORM_IDS)
    _require(not unknown, f"TF CNN: unknown platforms {sorted(unknown)}")
    src = src[src["images_per_sec"].notna()]
    _require(
        bool((src["global_batch"] == src["gpus"] * src["batch_per_gpu"]).all()),
        "TF CNN: global_batch != gpus * batch_per_gpu",
    )
    frame = pd.DataFrame(
        {
            "platform": src["platform"].map(TF_PLATFORM_IDS),
            "platform_description": src["platform"],
            "data": src["data"],
            "model": src["model"],
            "model_params_millions": src["model_params_millions_approx"],
            "gpus": src["gpus"].astype(int),
            "batch_per_gpu": src["batch_per_gpu"].astype(int),
            "global_batch": src["global_batch"].astype(int),
            "samples": IMAGENET_TRAIN_IMAGES,
            "images_per_sec": src["images_per_sec"],
            "step_time_s": (src["global_batch"] / src["images_per_sec"]).round(6),
            "epoch_time_s": (IMAGENET_TRAIN_IMAGES / src["images_per_sec"]).round(3),
            "source_section": src["source_section"],
        }
    )
    return [_write_csv(frame, out / "tf_cnn" / "tf_cnn_benchmarks_2017.csv")]


# --------------------------------------------------------------------------------------- DeepBench
def convert_deepbench(refdata: Path, out: Path) -> list[Path]:
    """All-reduce rows that have a time (V100/T4 sheets list configurations without times: dropped).

    ``time_s`` = ``mean_time_ms`` / 1000; ``size_bytes`` = 4 × ``size_floats`` (all rows are fp32);
    ``nodes`` = 1 where the sheet leaves it blank (single-node runs).
    """
    src = pd.read_csv(refdata / "deepbench" / "deepbench_allreduce.csv")
    _require(set(src["precision"]) == {"fp32"}, "DeepBench: expected only fp32 all-reduce rows")
    src = src[src["mean_time_ms"].notna()]
    frame = pd.DataFrame(
        {
            "platform": src["platform"],
            "algorithm": src["algorithm"],
            "precision": src["precision"],
            "accelerators": src["n_accelerators"].astype(int),
            "nodes": src["n_nodes"].fillna(1).astype(int),
            "size_floats": src["size_floats"].astype(int),
            "size_bytes": (src["size_floats"] * BYTES_PER_FLOAT32).astype(int),
            "size_mib": (src["size_floats"] * BYTES_PER_FLOAT32 / 2**20).round(6),
            "time_s": (src["mean_time_ms"] / 1000).round(9),
            "std_time_s": (src["std_time_ms"] / 1000).round(9),
            "gb_per_s": src["gb_per_s"].round(6),
        }
    )
    return [_write_csv(frame, out / "deepbench" / "allreduce.csv")]


# ----------------------------------------------------------------------------------------- RELeARN
def convert_relearn(refdata: Path, out: Path) -> list[Path]:
    """Every timer of every run: ranks × neurons per rank × theta × kernel × repetition (seconds)."""
    src = pd.read_csv(refdata / "relearn-hpc" / "relearn_timers_p_n_theta.csv")
    frame = pd.DataFrame(
        {
            "ranks": src["ranks_p"].astype(int),
            "neurons_per_rank": src["neurons_per_rank_n"].astype(int),
            "neurons_total": (src["ranks_p"] * src["neurons_per_rank_n"]).astype(int),
            "theta": src["theta"],
            "repetition": src["run"].astype(int),
            "kernel": src["kernel"],
            "depth": src["depth"].astype(int),
            "time_min_s": src["time_min_s"],
            "time_avg_s": src["time_avg_s"],
            "time_max_s": src["time_max_s"],
            "slurm_job": src["slurm_job"].astype(int),
        }
    ).sort_values(["kernel", "ranks", "neurons_per_rank", "theta", "repetition"], kind="stable")
    return [_write_csv(frame, out / "relearn" / "relearn_timers.csv")]


# ------------------------------------------------------------------------------------------- Ernest
def convert_ernest(refdata: Path, out: Path) -> list[Path]:
    """The 7 (cores, input fraction) points of Ernest's rcv1 example; r3.xlarge has 4 cores."""
    src = pd.read_csv(refdata / "ernest-rcv1" / "rcv1-parsed.csv", skipinitialspace=True)
    src.columns = [c.strip() for c in src.columns]
    _require(list(src.columns) == ["#Cores", "Input Fraction", "Time (s)"], f"Ernest: columns {list(src.columns)}")
    cores = src["#Cores"].astype(int)
    _require(bool((cores % 4 == 0).all()), "Ernest: cores not a multiple of 4")
    frame = pd.DataFrame(
        {
            "cores": cores,
            "machines": cores // 4,
            "input_fraction": src["Input Fraction"],
            "time_s": src["Time (s)"],
        }
    )
    return [_write_csv(frame, out / "ernest" / "rcv1.csv")]


# ---------------------------------------------------------------------------------------- Extra-Deep
def convert_extradeep(refdata: Path, out: Path) -> list[Path]:
    """Whole-job wall time (1 s resolution) of the CIFAR-10 Horovod job vs GPUs, 4 repetitions."""
    src = pd.read_csv(refdata / "extradeep-cifar10-darshan" / "cifar10_runtime_vs_gpus.csv")
    _require(
        bool((src["job_end_unix"] - src["job_start_unix"] == src["wall_time_s"]).all()),
        "Extra-Deep: wall_time_s != end - start",
    )
    frame = pd.DataFrame(
        {
            "gpus": src["gpus"].astype(int),
            "repetition": src["repetition"].astype(int),
            "mpi_ranks": src["nprocs_mpi"].astype(int),
            "job_start_unix": src["job_start_unix"].astype(int),
            "job_end_unix": src["job_end_unix"].astype(int),
            "time_s": src["wall_time_s"].astype(float),
            "script_args": src["script_args"],
            "source_file": src["source_file"],
        }
    ).sort_values(["gpus", "repetition"])
    return [_write_csv(frame, out / "extradeep" / "cifar10_wall_time.csv")]


# ------------------------------------------------------------------------------------------- Extra-P
def copy_extrap(refdata: Path, out: Path) -> list[Path]:
    """Extra-P text-format inputs, byte for byte (read by ``perfmodel.data.read_extrap``)."""
    written = []
    for src_name, dst_name in EXTRAP_FILES.items():
        dst = out / "extrap" / dst_name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(refdata / src_name, dst)
        written.append(dst)
    return written


# ------------------------------------------------------------------------- NVIDIA DeepLearningExamples
def convert_dle_walk(refdata: Path, out: Path) -> list[Path]:
    """The two published tables of the stakeholder's walk.

    * ``a100_efficientnet_throughput.csv``: the images/s of six EfficientNet models (PyTorch and
      TensorFlow 2, mixed precision) on 1 to 64 A100s of DGX A100 nodes (8 GPUs each), as published;
      columns ``model, framework, gpus, batch_per_gpu, images_per_sec``.
    * ``bert_large_v100_time_to_train.csv``: BERT-Large pre-training (TensorFlow, mixed precision) on 1
      to 32 DGX-2H nodes of 16 V100: ``time_to_train_h`` = (phase-1 sequences / the seq-128 throughput +
      phase-2 sequences / the seq-512 throughput) / 3600, with the phases of NVIDIA's LAMB recipe
      (7,038 steps of 65,536 sequences, then 1,563 of 32,768; the global batches the table's per-GPU
      batch × accumulation × GPUs give at every row, checked here)."""
    src = pd.read_csv(refdata / DLE_CSV)
    cnn = src[src["group"].isin(DLE_A100_CNN)]
    _require(set(cnn["group"]) == set(DLE_A100_CNN), "DLE: an EfficientNet series is missing")
    _require(bool((cnn["throughput_unit"] == "images/s").all()), "DLE: EfficientNet throughputs not in images/s")
    a100 = pd.DataFrame(
        {
            "model": cnn["group"].map(DLE_A100_CNN),
            "framework": cnn["framework"],
            "gpus": cnn["gpus"].astype(int),
            "batch_per_gpu": cnn["batch_size_per_gpu"].astype(int),
            "images_per_sec": cnn["throughput"].astype(float),
        }
    ).sort_values(["model", "gpus"], kind="stable")
    phases = []
    for group, sequences in DLE_BERT_PHASES.items():
        rows = src[src["group"] == group].sort_values("gpus")
        _require(len(rows) == 4, f"DLE: {group} has {len(rows)} rows, expected 4")
        batch = rows["batch_size_per_gpu"] * rows["grad_accum"] * rows["gpus"]
        step_batch = 65536 if "seq=128" in group else 32768
        _require(bool((batch == step_batch).all()), f"DLE: {group}: global batch {sorted(set(batch))} != {step_batch}")
        phases.append(
            rows.set_index("gpus")[["nodes", "throughput"]].assign(seconds=lambda r, n=sequences: n / r["throughput"])
        )
    one, two = phases
    _require(list(one.index) == list(two.index), "DLE: the BERT phases are measured at different GPU counts")
    bert = pd.DataFrame(
        {
            "gpus": one.index.astype(int),
            "nodes": one["nodes"].astype(int).to_numpy(),
            "time_to_train_h": ((one["seconds"] + two["seconds"]) / 3600).round(4).to_numpy(),
        }
    )
    return [
        _write_csv(a100, out / "nvidia_dle" / "a100_efficientnet_throughput.csv"),
        _write_csv(bert, out / "nvidia_dle" / "bert_large_v100_time_to_train.csv"),
    ]


CONVERTERS = [
    convert_mlperf,
    convert_tf_cnn,
    convert_deepbench,
    convert_relearn,
    convert_ernest,
    convert_extradeep,
    copy_extrap,
    convert_dle_walk,
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--refdata",
        type=Path,
        default=DEFAULT_REFDATA,
        help=f"folder with the reference data (default: {DEFAULT_REFDATA})",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if not args.refdata.is_dir():
        print(f"error: reference data folder not found: {args.refdata}", file=sys.stderr)
        return 2
    try:
        for convert in CONVERTERS:
            for path in convert(args.refdata, args.out):
                rows = "" if path.suffix != ".csv" else f" ({sum(1 for _ in path.open()) - 1} rows)"
                print(f"wrote {path.relative_to(args.out)}{rows}")
    except (ConversionError, FileNotFoundError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
