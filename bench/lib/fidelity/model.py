"""What bench/fidelity measures: the workloads, the plain fio configurations, one measurement,
the settings of a full and a quick run, and the targets' bounds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROG = "bench/fidelity"
TK_SRC = Path(__file__).resolve().parents[3]
EXIT_OK, EXIT_MISSED, EXIT_USAGE, EXIT_UNSAFE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

# The targets: (direction, bound) on toolkit / best plain fio.
THROUGHPUT, LATENCY, PEAK = "throughput", "latency", "peak"
TARGETS = {THROUGHPUT: (">=", 0.9), LATENCY: ("<=", 1.25), PEAK: (">=", 0.9)}

ENGINES = ("psync", "libaio", "io_uring")
SYNC_ENGINES = ("psync",)  # one I/O in flight per job, whatever iodepth says
ZRAM = "/dev/zram0"
MiB = 1 << 20
# What fio costs beyond runtime + ramp per run here (start-up and shut-down), for the estimates.
FIO_START_S = 0.35


@dataclass(frozen=True)
class Workload:
    name: str  # the toolkit's case name, or "peak"
    rw: str
    bs: str
    metric: str  # the throughput the toolkit's table reports for it: iops | bw_MBps


# §2's four cases (qd1_test.bash) and §5's peak random IOPS (qd_sweep_test.bash).
QD1_CASES = (
    Workload("randread-4k", "randread", "4k", "iops"),
    Workload("randwrite-4k", "randwrite", "4k", "iops"),
    Workload("read-128k", "read", "128k", "bw_MBps"),
    Workload("write-128k", "write", "128k", "bw_MBps"),
)
PEAK_WORKLOAD = Workload("peak", "randread", "4k", "iops")
# One io_uring job's 4 KiB random reads at a deep queue, with fio's defaults, with the options
# the toolkit's probe chose, and as fio's t/io_uring runs it (registered buffers and files, a
# quarter of the depth submitted and reaped at a time, polled only where it can be).
URING_WORKLOAD = Workload("uring", "randread", "4k", "iops")
URING_QD = 128
UNIT = {"iops": "IOPS", "bw_MBps": "MB/s", "lat_us": "lat µs"}


@dataclass(frozen=True, order=True)
class Config:
    """One plain fio configuration."""

    engine: str
    iodepth: int = 1
    numjobs: int = 1
    options: tuple[str, ...] = ()  # more fio options, key=value (io_uring's own)
    tag: str = ""  # what the options are, shown instead of them

    def __str__(self) -> str:
        text = self.engine if self.engine in SYNC_ENGINES else f"{self.engine} QD{self.iodepth}"
        return text + (f" x{self.numjobs} jobs" if self.numjobs > 1 else "") + (
            f" ({self.tag})" if self.tag else "")


@dataclass(frozen=True)
class Measure:
    iops: float
    bw_MBps: float  # 10^6 bytes/s, as the toolkit's tables
    lat_us: float  # mean total latency (submission + completion), as the toolkit's lat_us_mean

    def get(self, metric: str) -> float:
        return getattr(self, metric)


@dataclass(frozen=True)
class Sample:
    target: str
    workload: str
    config: Config
    trial: int  # 0: the peak's screening round; 1..N: the trials
    measure: Measure


@dataclass(frozen=True)
class Best:
    config: Config
    mean: float
    low: float
    high: float
    n: int


@dataclass
class Settings:
    trials: int
    runtime_s: int  # each plain fio run of a trial
    screen_runtime_s: int  # each plain fio run of the peak's screening round
    ramp: str  # fio's ramp_time for plain runs
    peak_depths: tuple[int, ...]  # async engines' depths in the peak search
    finalists: int  # peak configurations re-measured in every trial
    tk_runtime: int
    tk_ramp: int
    tk_repeat: int
    tk_sweep_args: tuple[str, ...]  # qd_sweep_test.bash's own options


# The async engines' depths start at 8: at one I/O in flight per job psync (in the grid with every
# job count) costs less than either (zram 4 KiB at QD 1: psync 2.6 µs, libaio 4.2, io_uring 44).
DEFAULT = Settings(trials=3, runtime_s=2, screen_runtime_s=1, ramp="500ms",
                   peak_depths=(8, 32, 128), finalists=3,
                   tk_runtime=2, tk_ramp=1, tk_repeat=2, tk_sweep_args=("--no-seq",))
QUICK = Settings(trials=1, runtime_s=1, screen_runtime_s=1, ramp="500ms",
                 peak_depths=(32,), finalists=2,
                 tk_runtime=1, tk_ramp=1, tk_repeat=1,
                 tk_sweep_args=("--no-seq", "--qd", "1,4,16,64"))
