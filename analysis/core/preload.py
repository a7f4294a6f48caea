"""A preloaded analysis: one process imports numpy, pandas, matplotlib and the section modules
once, then forks a worker for each `python -m analysis` call sent to it.

Why: a section's analysis spends about 2.2 of its 3-4 CPU-s importing its libraries (matplotlib
1.0, pandas 0.8, scipy 0.35). The test suite runs about 180 of them, so a quarter of its CPU went
on imports. A forked worker starts from the imported state, and each call still starts clean.
Users need none of this: a run calls the analysis a few times.

    $ .venv/bin/python -m analysis serve /tmp/tk.sock &     # ready once /tmp/tk.sock exists
    $ TK_ANALYSIS_SERVER=/tmp/tk.sock .venv/bin/python -m analysis qd1 --results results
    (the same output, exit code and files as without the variable, in about 1.5 CPU-s, not 4)

The caller sends its argv, working folder, environment, umask and its stdin, stdout and stderr
(the descriptors themselves), then waits for the exit status. A signal it gets (Ctrl-C, a
TERM) is passed on to the worker; if the caller dies (kill -9), the worker is killed. A worker
that dies of a signal makes the caller die of the same one, so bash sees what it would have.

Only code identical to the server's is run there: the caller's analysis/ and lib/*.tsv (the
tables the registry reads) must match the server's in name, size and mtime, and its Python must
be the same venv. Otherwise, or when no server answers, the command runs in the caller's own
process, as it always did. A worker runs in the server's cgroup and on its CPUs, so a command
that measures the host (host-ceiling) or runs the run loop is never sent (analysis/__main__.py
names those that are).
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import stat
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STD_FDS = (0, 1, 2)
PASSED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def fingerprint(root: Path) -> list[list]:
    """[path, size, mtime_ns] of every file the analysis runs or reads under `root` (lists, as
    they come back from JSON)."""
    files = [p for p in (root / "analysis").rglob("*") if "__pycache__" not in p.parts]
    files += (root / "lib").glob("*.tsv")
    stats = [(p, p.stat()) for p in files]
    return sorted([p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns]
                  for p, st in stats if stat.S_ISREG(st.st_mode))


def _identity(root: Path) -> dict:
    return {"files": fingerprint(root), "prefix": str(Path(sys.prefix).resolve())}


class _Lines:
    """JSON lines over a stream socket, each message one line."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buffer = sock, b""

    def send(self, message: dict) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def receive(self) -> dict | None:
        """The next message, or None when the other end has closed."""
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


# --- the caller's side -----------------------------------------------------------------------

def forward(path: str, argv: list[str]) -> int | None:
    """Run `python -m analysis argv` in the server at `path`: its exit code, or None when it was
    not run there (no server, or not the same code), and the caller runs it itself."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    lines = _Lines(sock)
    with sock:
        fds = [fd for fd in STD_FDS if _is_open(fd)]
        socket.send_fds(sock, [b"F"], fds)
        lines.send({"argv": argv, "argv0": sys.argv[0], "cwd": os.getcwd(),
                    "env": dict(os.environ), "umask": _umask(), "fds": fds, **_identity(ROOT)})
        reply = lines.receive()
        if not reply or not reply.get("run"):
            return None
        for signum in PASSED_SIGNALS:
            signal.signal(signum, lambda n, _frame: lines.send({"signal": n}))
        while (message := lines.receive()) is not None:
            if "exit" in message:
                return message["exit"]
            if "signal" in message:
                signal.signal(message["signal"], signal.SIG_DFL)
                os.kill(os.getpid(), message["signal"])
                return 128 + message["signal"]
    print(f"analysis: the preloaded analysis at {path} stopped before the command ended",
          file=sys.stderr)
    return 1


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --- the server's side -----------------------------------------------------------------------

def serve(path: str, run: Callable[[list[str]], int], modules: Iterable[str]) -> None:
    """Import `modules`, then listen at `path` and run each call's argv with `run` in a worker.
    The socket appears once the imports are done. Ends with its parent (the test session)."""
    for name in modules:
        importlib.import_module(name)
    _warm_figures()
    own = _identity(ROOT)
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(f"{path}.{os.getpid()}")
    listener.listen(64)
    os.rename(f"{path}.{os.getpid()}", path)  # a caller finds it only once it listens
    # each call is handled by a child (it waits for its worker); reaping them here keeps their
    # CPU time in this process's children's time, where the test session reads it
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    while os.getppid() == parent:
        if not select.select([listener], [], [], 1.0)[0]:
            continue
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _handle(conn, run, own)
            finally:
                os._exit(0)
        conn.close()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def _warm_figures() -> None:
    """Draw one small figure with text, so the font files and renderer setup each worker would
    load on its first figure are loaded once here: a §2 worker on the fixture tree took 1.03-1.08
    CPU-s after it, 1.07-1.11 without (four each, alternated)."""
    if "matplotlib" not in sys.modules:
        return
    import io

    from matplotlib.figure import Figure
    fig = Figure(figsize=(2, 2))
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], label="warm")
    ax.set_title("warm")
    ax.legend()
    fig.savefig(io.BytesIO(), format="png")


def _handle(conn: socket.socket, run: Callable[[list[str]], int], own: dict) -> None:
    """One call: check the code is the same, fork the worker, pass signals on, report how it
    ended."""
    _, fds, _, _ = socket.recv_fds(conn, 1, len(STD_FDS))
    lines = _Lines(conn)
    request = lines.receive()
    if request is None or {"files": request["files"], "prefix": request["prefix"]} != own:
        lines.send({"run": False})
        return
    worker = os.fork()
    if worker == 0:
        conn.close()
        _work(request, fds, run)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(worker)
    try:
        lines.send({"run": True})
        while pidfd not in select.select([conn, pidfd], [], [])[0]:
            message = lines.receive()
            if message is None:
                raise ConnectionResetError("the caller closed its end")
            os.kill(worker, message["signal"])
    except OSError:  # the caller died (kill -9), perhaps before it heard: so does its command
        os.kill(worker, signal.SIGKILL)
        os.waitpid(worker, 0)
        return
    _, status = os.waitpid(worker, 0)
    if os.WIFSIGNALED(status):
        lines.send({"signal": os.WTERMSIG(status)})
    else:
        lines.send({"exit": os.waitstatus_to_exitcode(status)})


def _work(request: dict, fds: list[int], run: Callable[[list[str]], int]) -> None:
    """The worker: become the caller's process (descriptors, folder, environment), run, exit
    as `python -m analysis` would have."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    given = dict(zip(request["fds"], fds))
    for fd in STD_FDS:
        if fd in given:
            os.dup2(given[fd], fd)
        else:
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
    for fd in fds:
        if fd not in STD_FDS:
            os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    sys.argv = [request["argv0"], *request["argv"]]
    # new streams on the caller's descriptors, buffered as Python buffers them: by line on a
    # terminal (and stderr always), else by block
    sys.stdin = open(0, closefd=False, encoding=sys.stdin.encoding)  # noqa: SIM115
    sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False,  # noqa: SIM115
                      encoding=sys.stdout.encoding, errors=sys.stdout.errors)
    sys.stderr = open(2, "w", buffering=1, closefd=False, encoding=sys.stderr.encoding,  # noqa: SIM115
                      errors="backslashreplace")
    try:
        code = run(request["argv"])
    except SystemExit as stop:
        code = stop.code
    except KeyboardInterrupt:
        traceback.print_exc()
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:  # noqa: BLE001 - printed as Python would, then exit 1
        traceback.print_exc()
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    _flush()
    os._exit(code or 0)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
