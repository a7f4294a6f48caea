"""The model drive's command line: ``python -m tools.model_drive start|run|cleanup``.

Standard library only (the toolkit's ``analysis`` package is not imported), so it runs with
any python3:

    python -m tools.model_drive run --cache 1G -- bash wss_burst_test.bash \\
        --target '$MODEL_DRIVE' --destroy '$MODEL_DRIVE'
    python -m tools.model_drive start --size 4G --cache 1G --fast 400M --slow 100M --recover 50M
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict

from tools.model_drive.cache import IDLE_S, POLL_S, Event
from tools.model_drive.drive import ModelDrive, model_drive
from tools.ram_device import Terminated, _raise_terminated, _signals_held, clean_leftovers

# The defaults: a drive with a 1 GiB cache.
DEFAULTS = {"size": "4G", "cache": "1G", "fast": "400M", "slow": "100M", "recover": "50M"}
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}     # decimal


def parse_bytes(text: str, *, rate: bool = False) -> int:
    """'1G', '512MiB', '400M', '100MB/s', '4096' -> bytes (or bytes/s). KiB, MiB, GiB, TiB are
    binary and KB, MB, GB, TB decimal; a bare K, M, G, T is binary for a size (like fio's and
    the toolkit's --size) and decimal for a speed (like the report's MB/s)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*(/s)?\s*", text, re.IGNORECASE)
    if not m or (m.group(4) and not rate):
        raise ValueError(f"not a {'speed' if rate else 'size'}: {text!r}")
    number, letter, suffix = float(m.group(1)), m.group(2).lower(), (m.group(3) or "").lower()
    if suffix == "ib" and not letter:
        raise ValueError(f"not a {'speed' if rate else 'size'}: {text!r}")
    binary = suffix == "ib" or (suffix == "" and not rate)
    unit = 1024 ** ("kmgt".index(letter) + 1) if letter and binary else _UNITS[letter]
    value = int(number * unit)
    if value <= 0:
        raise ValueError(f"must be above 0: {text!r}")
    return value


def _human(n: int, rate: bool = False) -> str:
    if rate:
        return f"{n / 1e6:g} MB/s"
    return f"{n / 2**30:g} GiB ({n / 1e9:g} GB)" if n >= 2**30 else f"{n / 2**20:g} MiB"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tools.model_drive",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A model drive: a RAM-backed loop device throttled by a cgroup so that it "
                    "writes like an SSD with a write (SLC) cache of known size.",
        epilog="""\
The model (C = --cache):
  the cache starts with C bytes free and the write limit is --fast; every byte written takes a
  byte of free cache; when none is left the limit is --slow. Writing never regains cache. After
  at least 0.25 s without writes (none done, none waiting in the throttle: cgroup v1 tells),
  the whole idle gap regains cache at --recover bytes/s from the last write, up to C, and the
  limit is --fast again: after a cliff and t s of idle the next
  write gets min(C, recover*t) bytes at --fast. A discard of the whole device (blkdiscard) empties
  the cache at once. Reads are never throttled.

Known answers for a sequential write at full speed from a fresh model drive: C bytes at --fast
(C / fast seconds), then --slow. Only processes in the cgroup are throttled: `run` puts CMD
there; every write to the device counts. Events (switches, with bytes written) are printed to
stderr and, with --events FILE, written as JSON lines.

Sizes: 1G = 1 GiB (binary, like fio's --size); speeds: 400M = 400 MB/s = 400e6 bytes/s.
Write GiB/MiB or GB/MB to say it explicitly.

Examples:
  python -m tools.model_drive run --cache 1G -- bash wss_burst_test.bash \\
      --target '$MODEL_DRIVE' --destroy '$MODEL_DRIVE'
  python -m tools.model_drive start --size 4G --cache 1G --fast 400M --slow 100M --recover 50M
  python -m tools.model_drive cleanup     # after the owner was killed with SIGKILL
Needs root. Exit codes: `run` exits with CMD's code; 1 the model drive failed; 2 bad usage;
130 interrupted (SIGINT), 143 terminated (SIGTERM).""")
    sub = p.add_subparsers(dest="command", required=True, metavar="{start,run,cleanup}")

    def params(sp):
        sp.add_argument("--size", default=DEFAULTS["size"],
                        help="device size (default %(default)s); RAM is used only where written")
        sp.add_argument("--cache", default=DEFAULTS["cache"],
                        help="write cache C (default %(default)s)")
        sp.add_argument("--fast", default=DEFAULTS["fast"],
                        help="write speed while the cache has room (default %(default)s)")
        sp.add_argument("--slow", default=DEFAULTS["slow"],
                        help="write speed once the cache is full (default %(default)s)")
        sp.add_argument("--recover", default=DEFAULTS["recover"],
                        help="cache regained per second of idle (default %(default)s)")
        sp.add_argument("--idle", type=float, default=IDLE_S,
                        help="seconds without writes, done or waiting, before idle counts "
                             "(default %(default)s)")
        sp.add_argument("--poll", type=float, default=POLL_S,
                        help="seconds between polls of the device's counters "
                             "(default %(default)s)")
        sp.add_argument("--events", metavar="FILE",
                        help="write the parameters, then each event, as JSON lines to FILE")
        sp.add_argument("--quiet", action="store_true", help="do not print events to stderr")

    start = sub.add_parser(
        "start", help="set up, print MODEL_DRIVE=... lines, run until SIGINT or SIGTERM",
        description="Set up a model drive, print its device and cgroup as KEY=VALUE lines on "
                    "stdout, and keep it until SIGINT or SIGTERM; then remove everything "
                    "(processes still in the cgroup are stopped).")
    params(start)
    run = sub.add_parser(
        "run", help="run CMD in the cgroup with MODEL_DRIVE set, clean up when it exits",
        description="Set up a model drive, run CMD inside its cgroup with MODEL_DRIVE (the "
                    "device) and MODEL_DRIVE_PROCS in the environment, and remove everything when "
                    "CMD exits. An argument '$MODEL_DRIVE' or '${MODEL_DRIVE}' (quoted, so the "
                    "shell leaves it) is replaced by the device. Exits with CMD's code.")
    params(run)
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    sub.add_parser("cleanup", help="remove what model drives of killed owners left behind",
                   description="Remove the cgroups, loop devices and tmpfs mounts of model "
                               "drives whose owner process is gone (e.g. killed with SIGKILL).")
    return p


def _drive_args(args) -> dict:
    return {"size": parse_bytes(args.size), "cache": parse_bytes(args.cache),
            "fast": parse_bytes(args.fast, rate=True), "slow": parse_bytes(args.slow, rate=True),
            "recover": parse_bytes(args.recover, rate=True), "idle_s": args.idle,
            "poll_s": args.poll}


def _stop_child(proc: subprocess.Popen, first: signal.Signals | None) -> int:
    """Stop CMD after a signal, with signals held so a second one cannot cut this short:
    ``first`` now (None: it got the terminal's Ctrl-C itself, so give it 3 s to finish), then
    SIGTERM, then SIGKILL."""
    steps = [(first, 10.0)] if first else [(None, 3.0)]
    steps += [(signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)]
    with _signals_held():
        for sig, wait_s in steps:
            if sig is not None and proc.poll() is None:
                proc.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                return proc.wait(timeout=wait_s)
        return proc.wait()


def _run_cmd(drive: ModelDrive, cmd: list[str]) -> int:
    """CMD in the cgroup with MODEL_DRIVE set; its exit code. On a signal CMD is stopped before
    the model drive goes (the exception then propagates to the cleanup)."""
    env = {**os.environ, **drive.env()}
    cmd = [re.sub(r"\$\{MODEL_DRIVE\}|\$MODEL_DRIVE(?![A-Za-z0-9_])", drive.device, a)
           for a in cmd]
    proc = subprocess.Popen(drive.wrap(cmd), env=env)
    try:
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return proc.wait(timeout=0.2)
            if drive.watcher.error is not None:     # the throttle no longer follows the model
                _stop_child(proc, signal.SIGTERM)
                drive.check()
    except KeyboardInterrupt:
        _stop_child(proc, None)
        raise
    except Terminated:
        _stop_child(proc, signal.SIGTERM)
        raise


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if os.geteuid() != 0:
        print("model-drive: needs root (loop device, mount, cgroup)", file=sys.stderr)
        return 2
    if args.command == "cleanup":
        found = clean_leftovers()
        for kind, items in found.items():
            for item in items:
                print(f"removed {kind[:-1]} {item}")
        if not any(found.values()):
            print("nothing left behind by a model drive")
        return 0
    try:
        params = _drive_args(args)
    except ValueError as exc:
        print(f"model-drive: {exc}", file=sys.stderr)
        return 2
    if params["slow"] > params["fast"]:
        print("model-drive: --slow must not exceed --fast", file=sys.stderr)
        return 2
    cmd = getattr(args, "cmd", [])
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.command == "run" and not cmd:
        print("model-drive: run needs a command after --", file=sys.stderr)
        return 2

    events_file = open(args.events, "w") if args.events else None  # noqa: SIM115

    def on_event(e: Event) -> None:
        if not args.quiet:
            print(f"model-drive: {e.describe()}", file=sys.stderr, flush=True)
        if events_file:
            events_file.write(json.dumps(asdict(e)) + "\n")
            events_file.flush()

    signal.signal(signal.SIGTERM, _raise_terminated)   # so the cleanup runs
    try:
        with model_drive(**params, on_event=on_event) as drive:
            if events_file:
                events_file.write(json.dumps({"model_drive": drive.params()}) + "\n")
            print(f"model-drive: {drive.device}: cache {_human(drive.cache)}, "
                  f"fast {_human(drive.fast, True)}, slow {_human(drive.slow, True)}, "
                  f"recover {_human(drive.recover, True)}, size {_human(drive.size)}",
                  file=sys.stderr, flush=True)
            on_event(drive.events[0])
            if args.command == "run":
                return _run_cmd(drive, cmd)
            print(f"MODEL_DRIVE={drive.device}\nMODEL_DRIVE_PROCS={drive.cgroup_procs}",
                  flush=True)
            print("# run a command on it, throttled:\n#   sh -c 'echo $$ > \"$0\" && exec "
                  f"\"$@\"' {drive.cgroup_procs} fio --filename={drive.device} ...\n"
                  f"# stop with Ctrl-C or kill -TERM {os.getpid()}", flush=True)
            while drive.watcher.is_alive():
                time.sleep(0.2)
            drive.check()
            return 1
    except KeyboardInterrupt:
        print("model-drive: interrupted; everything removed", file=sys.stderr)
        return 130
    except Terminated:
        print("model-drive: terminated; everything removed", file=sys.stderr)
        return 143
    except (OSError, RuntimeError) as exc:
        print(f"model-drive: {exc}", file=sys.stderr)
        return 1
    finally:
        if events_file:
            events_file.close()

