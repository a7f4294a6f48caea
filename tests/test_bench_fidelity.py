"""bench/fidelity's pure logic (bench/lib/fidelity/): the search grid, reading fio's JSON, choosing
the best plain fio configuration and judging the toolkit against it. No fio runs here (the bench
itself is timed; it is run by hand, see bench/README.md)."""

from __future__ import annotations

import math

import pytest

from analysis.fio.output import FioOutputError
from bench.lib.fidelity.model import Config, Measure, Sample
from bench.lib.fidelity.plain import read_fio_json
from bench.lib.fidelity.report import peak_config
from bench.lib.fidelity.search import (
    best_config,
    expand_uring_options,
    finalists,
    job_counts,
    judge,
    peak_grid,
    t_io_uring_options,
    trial_order,
)
from bench.lib.fidelity.toolkit import io_poll, jobfile_config
from tests.conftest import SAMPLES


def sample(config, trial, iops=0.0, lat_us=0.0, workload="randread-4k"):
    return Sample("zram", workload, config, trial, Measure(iops, iops * 4096 / 1e6, lat_us))


def test_job_counts_go_to_twice_the_cpus():
    assert job_counts(1) == [1, 2]
    assert job_counts(2) == [1, 2, 4]
    assert job_counts(6) == [1, 2, 4, 6, 12]


def test_peak_grid_gives_psync_no_depths():
    grid = peak_grid((1, 32), [1, 2])
    assert [c for c in grid if c.engine == "psync"] == [Config("psync", 1, 1), Config("psync", 1, 2)]
    assert Config("io_uring", 32, 2) in grid and Config("libaio", 1, 1) in grid
    assert len(grid) == 2 + 2 * 2 * 2
    assert str(Config("libaio", 32, 2)) == "libaio QD32 x2 jobs"
    assert str(Config("psync")) == "psync"


# fio 3.36 outputs from real drives (tests/fixtures/fio-samples/README.md has their provenance).
RANDREAD = SAMPLES / ("vsalvaggio__Advanced-Computer-Systems-Projects/Project3/results/"
                      "zeroq_randread_4k.json")
RANDRW = SAMPLES / "samisrana__SSD-Performance-Profiling/fio_results/fio_randrw_4k_iodepth_64.json"


def test_read_fio_json_one_direction():
    m = read_fio_json(RANDREAD.read_text())
    assert m.iops == pytest.approx(703196.926769)
    assert m.bw_MBps == pytest.approx(2880.294612)  # bw_bytes / 1e6, as the toolkit's tables
    assert m.lat_us == pytest.approx(1.182880548)  # lat_ns (total), not clat_ns


def test_read_fio_json_weights_latency_by_ios_and_skips_leading_text():
    m = read_fio_json("fio: a warning fio printed first\n" + RANDRW.read_text())
    assert m.iops == pytest.approx(2436.092732 + 2438.809353)
    assert m.bw_MBps == pytest.approx((9978235 + 9989363) / 1e6)
    expected = (13106867.09589 * 146168 + 13140140.563906 * 146331) / (146168 + 146331) / 1e3
    assert m.lat_us == pytest.approx(expected)


def test_read_fio_json_refuses_no_io():
    with pytest.raises(FioOutputError):
        read_fio_json('{"jobs": [{"read": {"total_ios": 0}}]}')


def test_best_config_needs_every_trial_and_ignores_the_screening():
    psync, uring, libaio = Config("psync"), Config("io_uring", 32), Config("libaio", 32)
    samples = [
        sample(uring, 0, iops=900),  # screening only: not a candidate
        sample(psync, 1, iops=100), sample(psync, 2, iops=120),
        sample(libaio, 1, iops=110), sample(libaio, 2, iops=104),
        sample(Config("libaio", 128), 2, iops=500),  # one lucky trial of two
    ]
    best = best_config(samples, "iops", trials=2)
    assert (best.config, best.mean, best.n) == (psync, 110, 2)


def test_best_config_picks_the_best_mean():
    psync, libaio = Config("psync"), Config("libaio", 32)
    samples = [sample(psync, 1, iops=100, lat_us=5), sample(psync, 2, iops=120, lat_us=4),
               sample(libaio, 1, iops=125, lat_us=3), sample(libaio, 2, iops=90, lat_us=9)]
    best = best_config(samples, "iops", trials=2)
    assert (best.config, best.mean, best.low, best.high, best.n) == (psync, 110, 100, 120, 2)
    fastest = best_config(samples, "lat_us", trials=2, lower_is_better=True)
    assert (fastest.config, fastest.mean) == (psync, 4.5)
    assert best_config(samples, "iops", trials=3) is None


def test_finalists_are_the_best_screened():
    screen = [sample(Config("psync", 1, j), 0, iops=v) for j, v in ((1, 50), (2, 90), (4, 70))]
    assert finalists(screen, "iops", 2) == [Config("psync", 1, 2), Config("psync", 1, 4)]


@pytest.mark.parametrize(("kind", "toolkit", "plain", "ok"), [
    ("throughput", 90, 100, True), ("throughput", 89.9, 100, False),
    ("latency", 12.5, 10, True), ("latency", 12.6, 10, False),
    ("peak", 95, 100, True), ("peak", 50, 100, False),
    ("throughput", None, 100, False), ("latency", 10, None, False),
])
def test_judge_against_the_benchs_targets(kind, toolkit, plain, ok):
    ratio, met = judge(kind, toolkit, plain)
    assert met is ok
    assert ratio is None if toolkit is None or plain is None else math.isclose(ratio,
                                                                               toolkit / plain)


def test_trial_order_alternates():
    assert trial_order(["tmpfs", "zram"], 1) == ["tmpfs", "zram"]
    assert trial_order(["tmpfs", "zram"], 2) == ["zram", "tmpfs"]
    assert trial_order(["tmpfs", "zram"], 3) == ["tmpfs", "zram"]


def test_jobfile_config_reads_the_case_over_global(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text("[global]\nioengine=io_uring\niodepth=1\n; a comment=no\n"
                   "[randread-4k]\nioengine=psync\niodepth=32\nnumjobs=2\n")
    assert jobfile_config(job) == "psync QD32 x2 jobs"
    assert jobfile_config(tmp_path / "missing.fio") == ""


def test_peak_config_names_the_toolkits_configuration():
    text = "4 KiB random read: 755,012 IOPS at QD 1 x 2 jobs with psync (2.6 µs mean, p99 5 µs)"
    assert peak_config(text) == "QD 1 x 2 jobs with psync"
    assert peak_config("4 KiB random read: 65,922 IOPS at QD 128 (1,970 µs mean)") == \
        "QD 128"
    assert peak_config("no configuration named") == ""


def test_expand_uring_options_as_the_jobfile_renders_them():
    """The toolkit's recorded io_uring choice becomes the options its jobfile carries at a depth:
    QD/4 the depth's quarter (none below 2), sqthread_poll only with 2 x jobs + 1 CPUs."""
    recorded = ("fixedbufs=1 registerfiles=1 iodepth_batch_submit=QD/4 "
                "iodepth_batch_complete_min=QD/4 sqthread_poll=1")
    assert expand_uring_options(recorded, 128, cpus=2) == (
        "fixedbufs=1", "registerfiles=1", "iodepth_batch_submit=32",
        "iodepth_batch_complete_min=32")
    assert expand_uring_options(recorded, 4, cpus=3)[-1] == "sqthread_poll=1"
    assert expand_uring_options(recorded, 4, cpus=3)[:2] == ("fixedbufs=1", "registerfiles=1")
    assert expand_uring_options("defaults", 128, cpus=8) == ()


def test_t_io_uring_options_poll_only_where_the_device_polls(tmp_path):
    assert t_io_uring_options(128, poll=False) == (
        "fixedbufs=1", "registerfiles=1", "iodepth_batch_submit=32",
        "iodepth_batch_complete_min=32")
    assert t_io_uring_options(128, poll=True)[-1] == "hipri=1"
    # a file in tmp_path: its device has no poll queues here (or is no block device at all)
    (tmp_path / "f").write_bytes(b"x")
    assert io_poll(str(tmp_path / "f")) in (False, True)
    assert io_poll(str(tmp_path / "missing")) is False


def test_uring_configs_are_told_apart():
    a = Config("io_uring", 128, 1, (), "fio's defaults")
    b = Config("io_uring", 128, 1, ("fixedbufs=1",), "toolkit's options")
    assert a != b and str(a) == "io_uring QD128 (fio's defaults)"
    assert str(Config("io_uring", 32)) == "io_uring QD32"
