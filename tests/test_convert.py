"""The converted data match their sources.

Two kinds of checks:
  * literal numbers read by hand from the reference files in ../shared/refdata (quoted in each test),
    asserted against the shipped files in data/ (these need only data/);
  * the converter re-run on ../shared/refdata reproduces data/ exactly (skipped where the reference
    data is absent; CI has it).
"""

from __future__ import annotations

import filecmp
import importlib.util
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
REFDATA = ROOT.parent / "shared" / "refdata"
needs_refdata = pytest.mark.skipif(not REFDATA.is_dir(), reason="../shared/refdata not present")


def _converter():
    spec = importlib.util.spec_from_file_location("convert_refdata", ROOT / "scripts" / "convert_refdata.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _csv(rel: str) -> pd.DataFrame:
    return pd.read_csv(DATA / rel)


# ----------------------------------------------------------------------------- hand-checked rows
def test_tf_cnn_resnet50_dgx1_one_gpu():
    # refdata tf_cnn_benchmarks_2017.csv line 3:
    # DGX-1 (8x P100),synthetic,ResNet-50,25.6,1,64,64,219,...  -> 219 images/s
    d = _csv("tf_cnn/tf_cnn_benchmarks_2017.csv")
    row = d[
        (d.platform == "dgx1-p100")
        & (d.data == "synthetic")
        & (d.model == "ResNet-50")
        & (d.gpus == 1)
        & (d.batch_per_gpu == 64)
    ]
    assert len(row) == 1
    row = row.iloc[0]
    assert row.images_per_sec == 219
    assert row.epoch_time_s == pytest.approx(1281167 / 219, abs=1e-3)  # 5850.078 s per epoch
    assert row.step_time_s == pytest.approx(64 / 219, abs=1e-6)
    assert row.samples == 1281167


def test_tf_cnn_k80_cluster_64_gpus():
    # refdata line 199: "AWS p2.8xlarge cluster (...)",synthetic,ResNet-50,25.6,64,64,4096,2744,...
    d = _csv("tf_cnn/tf_cnn_benchmarks_2017.csv")
    row = d[
        (d.platform == "aws-k80-cluster") & (d.model == "ResNet-50") & (d.gpus == 64) & (d.batch_per_gpu == 64)
    ].iloc[0]
    assert row.global_batch == 4096
    assert row.epoch_time_s == pytest.approx(1281167 / 2744, abs=1e-3)
    # the page's "N/A" rows (AlexNet, real data, 8 GPUs) are not measurements and are dropped
    assert len(d) == 207
    assert d.images_per_sec.notna().all()


def test_mlperf_resnet_a100_runs():
    # refdata mlperf_runs.csv: v2.0,Dell,XE8545x4A100-SXM-40GB,resnet,result_0.txt,1024,62.2032,success,ok
    # and result_4.txt,816,66.7762,aborted,ok (not a successful run: dropped)
    d = _csv("mlperf/resnet_a100.csv")
    one_node = d[d.system == "XE8545x4A100-SXM-40GB"]
    assert sorted(one_node.run) == ["result_0", "result_1", "result_2", "result_3"]
    r0 = one_node[one_node.run == "result_0"].iloc[0]
    assert r0.time_min == 62.2032
    assert r0.time_s == pytest.approx(62.2032 * 60, abs=1e-3)  # 3732.192 s
    assert (r0.accelerators, r0.nodes, r0.accelerators_per_node, r0.global_batch) == (4, 1, 4, 1024)
    assert sorted(set(d.accelerators)) == [4, 8, 16, 32, 64, 128]
    assert len(d) == 28  # 30 logs, 2 aborted


def test_mlperf_gaudi_and_gpt3_runs():
    # v1.1,Intel-HabanaLabs,HLS-1H-N2,resnet,result_1.txt,2048,56.1387,success,ok ; HLS-1H-N2 = 2 nodes x 4 Gaudi
    g = _csv("mlperf/resnet_gaudi.csv")
    row = g[(g.system == "HLS-1H-N2") & (g.run == "result_1")].iloc[0]
    assert (row.accelerators, row.global_batch) == (8, 2048)
    assert row.time_s == pytest.approx(56.1387 * 60, abs=1e-3)
    # v3.1,NVIDIA,eos-dfw_n1344_ngc23.09_nemo,gpt3,result_2.txt,2688,3.9337,success,ok ; 1344 nodes x 8 H100
    h = _csv("mlperf/gpt3_h100.csv")
    row = h[(h.system == "eos-dfw_n1344_ngc23.09_nemo") & (h.run == "result_2")].iloc[0]
    assert (row.accelerators, row.global_batch) == (10752, 2688)
    assert row.time_s == pytest.approx(3.9337 * 60, abs=1e-3)


def test_mlperf_tpu_counts_chips_and_drops_aborted_run():
    # systems: tpu-v3-32 has 16 chips (system names count cores); tpu-v3-1024 result_1 logged "abort"
    d = _csv("mlperf/resnet_tpu_v3.csv")
    assert set(d[d.system == "tpu-v3-32"].accelerators) == {16}
    assert "result_1" not in set(d[d.system == "tpu-v3-1024"].run)
    assert len(d[d.system == "tpu-v3-1024"]) == 4


def test_deepbench_allreduce_rows():
    # refdata: IA_KNL7250,fp32,100000,2,2,0.09,0,8.8888...,Intel MLSL
    d = _csv("deepbench/allreduce.csv")
    knl = d[(d.platform == "IA_KNL7250") & (d.size_floats == 100000) & (d.accelerators == 2)].iloc[0]
    assert knl.time_s == pytest.approx(0.09 / 1000, rel=1e-12)
    assert knl.size_bytes == 400000 and knl.nodes == 2 and knl.algorithm == "Intel MLSL"
    # refdata: NV_P100,fp32,64500000,16,2,152.47234999999998,0.1993...,27.07...,Baidu RingAllReduce
    p100 = d[(d.platform == "NV_P100") & (d.size_floats == 64500000) & (d.accelerators == 16)].iloc[0]
    assert p100.time_s == pytest.approx(0.15247235, rel=1e-9)
    assert p100.nodes == 2 and p100.algorithm == "Baidu RingAllReduce"
    # refdata: NV_P100,fp32,100000,2,,0.101934... (blank node count = one node)
    one = d[(d.platform == "NV_P100") & (d.size_floats == 100000) & (d.accelerators == 2)].iloc[0]
    assert one.nodes == 1
    assert set(d.platform) == {"IA_KNL7250", "NV_1080Ti", "NV_M40", "NV_P100", "NV_TitanX", "NV_TitanX_Pascal"}


def test_relearn_rows():
    # refdata line 1360: 32,5000,0.1,1,main(),0,406.493,406.497,406.498,12690268
    d = _csv("relearn/relearn_timers.csv")
    row = d[
        (d.ranks == 32) & (d.neurons_per_rank == 5000) & (d.theta == 0.1) & (d.repetition == 1) & (d.kernel == "main()")
    ].iloc[0]
    assert (row.time_min_s, row.time_avg_s, row.time_max_s) == (406.493, 406.497, 406.498)
    assert row.neurons_total == 160000 and row.slurm_job == 12690268
    assert len(d) == 3416


def test_ernest_rows():
    # refdata rcv1-parsed.csv: "32,0.125,7.94516801834"
    d = _csv("ernest/rcv1.csv")
    assert list(d.columns) == ["cores", "machines", "input_fraction", "time_s"]
    row = d.iloc[0]
    assert (row.cores, row.machines, row.input_fraction, row.time_s) == (32, 8, 0.125, 7.94516801834)
    assert len(d) == 7


def test_extradeep_rows():
    # refdata: cifar10_g2_r1.log ... job_start 1632923784, job_end 1632923936, wall 152
    d = _csv("extradeep/cifar10_wall_time.csv")
    row = d[(d.gpus == 2) & (d.repetition == 1)].iloc[0]
    assert row.time_s == 1632923936 - 1632923784 == 152
    assert sorted(set(d.gpus)) == [2, 4, 6, 8, 12, 16, 20] and len(d) == 28
    assert d[(d.gpus == 6) & (d.repetition == 1)].iloc[0].time_s == 130  # the documented outlier


def test_extrap_file_verbatim_sample():
    # text_two_parameter_5.txt starts with these lines in Extra-P's repository
    text = (DATA / "extrap" / "text_two_parameter_5.txt").read_text()
    assert text.startswith("PARAMETER p s\nPOINTS ( 2 10 ) ( 4 10 )")
    assert "# formula: 2 + 0.884 * s * log(p)" in text


def test_dle_walk_tables():
    # refdata nvidia-dle-training/dle_training.csv, TensorFlow/LanguageModeling/BERT/README.md lines 878 and 882
    # (DGX-2H, mixed precision, 1 node of 16 GPUs): 3081.69 sequences/s at seq 128, 577.79 at seq 512;
    # phase 1: 7,038 steps × 65,536 sequences, phase 2: 1,563 × 32,768
    bert = _csv("nvidia_dle/bert_large_v100_time_to_train.csv")
    assert list(bert.columns) == ["gpus", "nodes", "time_to_train_h"]
    assert list(bert["gpus"]) == [16, 64, 256, 512] and list(bert["nodes"]) == [1, 4, 16, 32]
    expected = (7038 * 65536 / 3081.69 + 1563 * 32768 / 577.79) / 3600
    assert bert["time_to_train_h"].iloc[0] == pytest.approx(expected, abs=1e-4)
    # PyTorch/Classification/ConvNets/efficientnet README (DGX A100 80GB, AMP): efficientnet-b4, 1 GPU, 331 img/s
    a100 = _csv("nvidia_dle/a100_efficientnet_throughput.csv")
    assert list(a100.columns) == ["model", "framework", "gpus", "batch_per_gpu", "images_per_sec"]
    assert a100["model"].nunique() == 6
    row = a100[(a100["model"] == "efficientnet-b4") & (a100["gpus"] == 1)].iloc[0]
    assert (row["batch_per_gpu"], row["images_per_sec"]) == (128, 331.0)


# --------------------------------------------------------------------- reproducibility / rules
@needs_refdata
def test_converter_reproduces_shipped_data(tmp_path):
    conv = _converter()
    assert conv.main(["--refdata", str(REFDATA), "--out", str(tmp_path)]) == 0
    produced = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert produced, "converter wrote nothing"
    for rel in produced:
        assert (DATA / rel).is_file(), f"{rel} produced but not shipped in data/"
        assert filecmp.cmp(tmp_path / rel, DATA / rel, shallow=False), f"{rel} differs from data/{rel}"


@needs_refdata
def test_extrap_files_are_byte_identical_to_sources():
    conv = _converter()
    for src, dst in conv.EXTRAP_FILES.items():
        assert (REFDATA / src).read_bytes() == (DATA / "extrap" / dst).read_bytes(), dst


@needs_refdata
def test_mlperf_drops_entries_identical_to_earlier_ones(tmp_path, monkeypatch):
    conv = _converter()
    # v2.1 Dell XE8545x4A100-SXM-40GB resnet is flagged identical to the v2.0 entry in mlperf_summary.csv
    monkeypatch.setattr(
        conv,
        "MLPERF_CURVES",
        {
            "dup.csv": {
                "version": "v2.1",
                "submitter": "Dell",
                "benchmark": "resnet",
                "systems": ["XE8545x4A100-SXM-40GB", "2xXE8545x4A100-SXM-40GB"],
            }
        },
    )
    with pytest.raises(conv.ConversionError, match="without successful runs"):
        conv.convert_mlperf(REFDATA, tmp_path)


def test_converter_reports_missing_refdata(tmp_path, capsys):
    conv = _converter()
    assert conv.main(["--refdata", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]) == 2
    assert "not found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
