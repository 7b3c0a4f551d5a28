"""One executor for the library's parallel work: a process pool or a Dask client.

:func:`run_tasks` runs ``[fn(t) for t in tasks]``: in this process while that is cheaper, else in a
process pool (forked when this process has one thread, a forkserver where the host is threaded, such
as the Streamlit server), or on a ``dask.distributed.Client``. It controls the BLAS threads
(one per worker; :func:`blas_single_thread` for this process), reports progress, cancels pending
tasks when ``should_stop()`` turns true, and ends every process it started when the command is
interrupted by SIGTERM or SIGINT (:func:`ending_workers_on_signal`).

The search (:mod:`perfmodel.search`), the λ path and the group fits (:mod:`perfmodel.groups`) all
run through it. Imports nothing from perfmodel but its errors: every layer may use it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import multiprocessing as mp
import os
import signal
import threading
import time as _time
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from .errors import PerfModelError

_starting_worker = threading.local()


def _preparation_data(name, _original=None):
    """multiprocessing's preparation data for a new process, less the parent's ``__main__`` when the
    process is one of our pool workers: a worker of the Streamlit server would otherwise run the
    ``streamlit`` script as ``__mp_main__``, import Streamlit and fill the server's log with "missing
    ScriptRunContext" and "No runtime found" warnings. Our tasks never live in ``__main__``."""
    data = _original(name)
    if getattr(_starting_worker, "active", False):
        data.pop("init_main_from_name", None)
        data.pop("init_main_from_path", None)
    return data


class _WorkerProcess(mp.context.ForkServerProcess):
    """A forkserver process started without the parent's ``__main__`` (see :func:`_preparation_data`)."""

    @staticmethod
    def _Popen(process_obj):
        from multiprocessing import spawn

        if not isinstance(spawn.get_preparation_data, functools.partial):
            spawn.get_preparation_data = functools.partial(_preparation_data, _original=spawn.get_preparation_data)
        _starting_worker.active = True
        try:
            return mp.context.ForkServerProcess._Popen(process_obj)
        finally:
            _starting_worker.active = False


class _WorkerContext(mp.context.ForkServerContext):
    Process = _WorkerProcess


_FORKSERVER = _WorkerContext() if "forkserver" in mp.get_all_start_methods() else None


def pool_context():
    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return mp.get_context("fork")
    if _FORKSERVER is not None:  # a threaded host (e.g. a Streamlit server): never fork it
        _FORKSERVER.set_forkserver_preload(["perfmodel.search"])
        return _FORKSERVER
    return mp.get_context("spawn")


#: OpenBLAS's (get, set) thread-count functions under their build's names; MKL's setter besides.
_BLAS_THREAD_PAIRS = (
    ("openblas_get_num_threads", "openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
)


_BLAS_SET_THREADS = tuple(set_ for _, set_ in _BLAS_THREAD_PAIRS) + ("MKL_Set_Num_Threads",)


def _blas_libraries() -> list:
    """The OpenBLAS/MKL libraries numpy and SciPy loaded (Linux; best effort, else [])."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "blas" in line.lower() or "mkl" in line.lower()}
    except OSError:  # pragma: no cover - not Linux
        return []
    libs = []
    for path in sorted(paths):
        if not path.startswith("/"):
            continue
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:  # pragma: no cover
            continue
    return libs


def one_blas_thread() -> None:
    """Worker initialiser: one BLAS thread per worker process.

    The fits multiply small matrices; OpenBLAS's own threads then only spin, and with one
    worker per core they oversubscribe the machine (measured: the λ path on 2 cores took
    10.1 s with them, 4.3 s without). Best effort: Linux, OpenBLAS/MKL loaded by numpy/scipy.
    """
    for lib in _blas_libraries():
        for name in _BLAS_SET_THREADS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(1)


@contextlib.contextmanager
def blas_single_thread():
    """One BLAS thread in this process while the block runs; the previous counts are restored.

    The search's matrices are small (a few hundred rows): OpenBLAS's threads only spin there, and
    on a loaded machine they made it three times slower (measured on 2 cores at load 5: 38 s
    against 12 s for 8 factors, 300 rows). Best effort, as :func:`one_blas_thread`; the count is
    per process, so a threaded host's other work runs single-threaded BLAS meanwhile."""
    saved = []
    for lib in _blas_libraries():
        for get, set_ in _BLAS_THREAD_PAIRS:
            g, f = getattr(lib, get, None), getattr(lib, set_, None)
            if g is not None and f is not None:
                g.restype = ctypes.c_int
                saved.append((f, int(g())))
                f(1)
    try:
        yield
    finally:
        for f, n in saved:
            f(max(1, n))


def n_workers(workers: int | None = None) -> int:
    """Worker processes used: ``workers``, or every core this process may use."""
    if workers is not None:
        return max(1, int(workers))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class Cancelled(Exception):
    """Raised inside the task runner when ``should_stop()`` turns true."""


#: Seconds of remaining work (estimated from the tasks run so far) that justify starting a
#: process pool; below that the pool's start-up costs more than it saves (measured on 2 cores:
#: a 300-row search whose candidates are all linear took 0.7 s serially and 1.1 s in a pool).
POOL_THRESHOLD = 1.0


#: The same when worker processes cannot be forked from this one (a threaded host such as the
#: Streamlit server uses a forkserver): starting them, importing numpy and SciPy there and
#: pickling the tasks costs seconds (measured on 2 cores: the quick peers of a comparison of a
#: 30-row upload took 3.5-4.0 s in the dashboard with a pool, 1.4-1.9 s serially).
POOL_THRESHOLD_NO_FORK = 8.0


def run_tasks(
    fn: Callable,
    tasks: list,
    workers: int,
    report: Callable[[int], None] | None,
    should_stop: Callable | None,
    adaptive: bool = True,
) -> list:
    """``[fn(t) for t in tasks]``, the rest in a process pool once that pays off.

    Tasks run in this process until the time they took predicts more than
    :data:`POOL_THRESHOLD` seconds (:data:`POOL_THRESHOLD_NO_FORK` when workers cannot be forked)
    for the remaining ones; then (``workers > 1``) the rest go
    to a pool of ``workers`` processes (``adaptive=False``: all tasks, at once). ``report(done)`` after each task; when
    ``should_stop()`` turns true the pending tasks are cancelled and their results are None.
    Exceptions (also from ``report``) cancel the pending tasks and propagate.
    """
    results: list = [None] * len(tasks)
    if not tasks:
        return results
    start = _time.perf_counter()
    forks = workers > 1 and pool_context().get_start_method() == "fork"
    threshold = POOL_THRESHOLD if forks else POOL_THRESHOLD_NO_FORK
    i = 0
    while i < len(tasks):
        if should_stop is not None and should_stop():
            return results
        if workers > 1 and len(tasks) - i >= 2 and not adaptive:
            break
        if i and workers > 1 and len(tasks) - i >= 2:
            per_task = (_time.perf_counter() - start) / i
            if per_task * (len(tasks) - i) > threshold:
                break
        results[i] = fn(tasks[i])
        i += 1
        if report is not None:
            report(i)
    if i == len(tasks):
        return results
    _in_pool(fn, tasks, i, min(workers, len(tasks) - i), results, report, should_stop)
    return results


def _in_pool(
    fn: Callable,
    tasks: list,
    first: int,
    workers: int,
    results: list,
    report: Callable[[int], None] | None,
    should_stop: Callable | None,
) -> None:
    """Run ``tasks[first:]`` in a pool of ``workers`` processes into ``results``."""
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=pool_context(), initializer=one_blas_thread)
    try:
        with ending_workers_on_signal(ex) as starting:
            with starting():
                futures = {ex.submit(fn, tasks[j]): j for j in range(first, len(tasks))}
            pending = set(futures)
            done_count = first
            while pending:
                done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for f in done:
                    results[futures[f]] = f.result()
                    done_count += 1
                    if report is not None:
                        report(done_count)
                if should_stop is not None and should_stop():
                    for f in pending:
                        f.cancel()
                    break
    finally:
        if getattr(ex, "_ended_by_signal", False):
            _end_workers(ex)  # again: workers that were starting when the signal came
            _shut_down_now(ex)
        else:
            ex.shutdown(wait=True, cancel_futures=True)


def _end_workers(ex: ProcessPoolExecutor) -> None:
    """Terminate a pool's worker processes now (they would otherwise outlive an interrupted command,
    holding the resource tracker's pipe open with them). Takes none of the executor's locks: it runs
    in a signal handler, possibly inside ``ex.submit`` (which holds them while it starts workers)."""
    ex._ended_by_signal = True  # type: ignore[attr-defined]  # our own mark on the executor, read by _in_pool
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(2.0)
            if proc.is_alive():
                proc.kill()


def _shut_down_now(ex: ProcessPoolExecutor) -> None:
    """Shut down a pool whose workers were ended, without waiting on them, and let its manager thread
    finish (bounded), so the interpreter's exit does not wake a closed pipe (a traceback on stderr)."""
    import concurrent.futures.process as cfp

    manager = getattr(ex, "_executor_manager_thread", None)
    ex.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join(5.0)
        if not manager.is_alive():
            cfp._threads_wakeups.pop(manager, None)


@contextlib.contextmanager
def ending_workers_on_signal(ex: ProcessPoolExecutor):
    """While the block runs, SIGTERM and SIGINT first end ``ex``'s workers, then interrupt as they
    would have (SIGINT: KeyboardInterrupt; SIGTERM: SystemExit with status 128 + 15), so every
    process the command started ends with it. Only in the main thread (where signals are delivered);
    elsewhere (a Streamlit script thread) the block runs unchanged.

    Yields ``starting``: a context manager for the block that submits tasks. A signal that arrives in
    it waits until it ends: ``submit`` holds the executor's lock while it starts workers, and a worker
    interrupted half-started is not yet the executor's to end (it would print a traceback)."""
    if threading.current_thread() is not threading.main_thread():
        yield contextlib.nullcontext
        return

    owner = os.getpid()
    state: dict = {"defer": False, "pending": None}

    def end(signum):
        _end_workers(ex)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    def handler(signum, frame):
        if os.getpid() != owner:  # a forked worker inherited this handler: die as the signal says
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if state["defer"]:
            state["pending"] = signum
            return
        end(signum)

    @contextlib.contextmanager
    def starting():
        state["defer"] = True
        try:
            yield
        finally:
            state["defer"] = False
            if state["pending"] is not None:
                end(state["pending"])

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield starting
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def with_single_blas_thread(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with blas_single_thread():
            return fn(*args, **kwargs)

    return wrapper


#: The executors named by text; a ``dask.distributed.Client`` is the third kind.
EXECUTORS = ("serial", "processes")


#: Most tasks in one process-pool task (see :func:`execute`).
CHUNK_MAX = 32


def _is_dask_client(obj) -> bool:
    return type(obj).__module__.startswith("distributed") and hasattr(obj, "submit") and hasattr(obj, "gather")


def executor_name(executor) -> str:
    if executor is None:
        return "processes"
    if isinstance(executor, str):
        return executor
    if _is_dask_client(executor):
        return f"dask ({getattr(executor.scheduler, 'address', 'client')})"
    return type(executor).__name__


def _apply_each(fn: Callable, chunk: list) -> list:
    """``[fn(t) for t in chunk]``: one process-pool task of several (see :func:`execute`)."""
    return [fn(t) for t in chunk]


def execute(
    fn: Callable, tasks: list, executor="processes", workers: int | None = None, progress: Callable | None = None
) -> list:
    """``[fn(t) for t in tasks]`` on ``executor``: ``"serial"``, ``"processes"`` (:func:`run_tasks`,
    tasks batched so that no worker idles between them) or a ``dask.distributed.Client``.
    ``fn`` must be a top-level function (it is pickled); ``progress(done, total)`` after each task."""
    total = len(tasks)

    def report(done: int) -> None:
        if progress is not None:
            progress(done, total)

    if executor is None:
        executor = "processes"
    if isinstance(executor, str):
        if executor not in EXECUTORS:
            raise PerfModelError(
                f"unknown executor {executor!r}; use {', '.join(EXECUTORS)} or a dask.distributed.Client"
            )
        count = 1 if executor == "serial" else n_workers(workers)
        if count == 1:
            return run_tasks(fn, tasks, 1, report, None)
        # Batches of tasks per pool task: the pool hands out one task per idle worker and waits for
        # this process to send the next, which on a busy machine leaves workers idle between tasks.
        size = max(1, min(CHUNK_MAX, math.ceil(total / (count * 8))))
        chunks = [tasks[i : i + size] for i in range(0, total, size)]
        ends = [min(total, (i + 1) * size) for i in range(len(chunks))]
        out = run_tasks(
            functools.partial(_apply_each, fn), chunks, count, lambda done: report(ends[done - 1]), None, adaptive=True
        )
        return [o for chunk in out for o in chunk]
    if _is_dask_client(executor):
        from distributed import as_completed

        futures = executor.map(fn, tasks, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        results: list = [None] * total
        for done, f in enumerate(as_completed(futures), start=1):
            results[index[f.key]] = f.result()
            report(done)
        return results
    raise PerfModelError(
        f"executor must be 'serial', 'processes' or a dask.distributed.Client, got {type(executor).__name__}"
    )


_DASK_SCHEMES = ("tcp",)
#: Seconds to reach a scheduler and read its handshake (a peer that is not one must not hang the command)
DASK_PROBE_SECONDS = 5.0


def check_dask_address(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a scheduler address ``tcp://HOST:PORT`` (or ``HOST:PORT``; IPv6 as
    ``[::1]``), None for ``"local"``; anything else (empty, no port, another scheme) a PerfModelError."""
    import re

    text = address if isinstance(address, str) else ""
    if text == "local":
        return None
    m = re.fullmatch(r"(?:([A-Za-z][A-Za-z0-9+.-]*)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})", text)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if scheme and scheme.group(1).lower() not in _DASK_SCHEMES:
        why = (
            "needs certificates (a Dask Security configuration), which the command line does not take"
            if scheme.group(1).lower() == "tls"
            else "is not a scheduler protocol the command line connects to"
        )
        raise PerfModelError(f"--dask {address!r}: {scheme.group(1)}:// {why}; give tcp://HOST:PORT or 'local'")
    if not m or not 0 < int(m.group(3)) < 65536:
        raise PerfModelError(
            f"--dask {address!r} is not a scheduler address: give tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786) or 'local'"
        )
    return m.group(2).strip("[]"), int(m.group(3))


def probe_scheduler(host: str, port: int, timeout: float = DASK_PROBE_SECONDS) -> None:
    """Connect to ``host:port`` and read the handshake a Dask scheduler sends first (an 8-byte length,
    then a few small frames), within ``timeout`` seconds in all; a PerfModelError otherwise (nothing
    listening, a silent peer such as an HTTP server, or bytes that are not a handshake)."""
    import socket
    import struct

    where = f"{host}:{port}"
    deadline = _time.monotonic() + timeout

    def read(sock, n):
        data = b""
        while len(data) < n:
            left = deadline - _time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the peer closed the connection")
            data += chunk
        return data

    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            (total,) = struct.unpack("<Q", read(sock, 8))
            if not 16 <= total <= 1 << 20:
                raise ValueError
            body = read(sock, total)
            (nframes,) = struct.unpack("<Q", body[:8])
            if not 1 <= nframes <= 64 or len(body) < 8 * (nframes + 1):
                raise ValueError
    except TimeoutError:
        raise PerfModelError(f"--dask {where}: no Dask scheduler answered within {timeout:g} s") from None
    except ValueError:
        raise PerfModelError(
            f"--dask {where}: the peer is not a Dask scheduler (its first bytes are no Dask handshake)"
        ) from None
    except OSError as exc:
        raise PerfModelError(f"--dask {where}: cannot reach the Dask scheduler ({exc.strerror or exc})") from None


#: The address a local cluster listens on: this machine only (nothing is served to the network unless
#: the user runs a scheduler of their own and gives its address).
LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def dask_client(address: str, workers: int | None = None):
    """A ``dask.distributed.Client``: ``"local"`` starts a ``LocalCluster`` of ``workers`` processes
    (one thread each) on this machine and closes it afterwards; any other text is a scheduler
    address such as ``tcp://10.0.0.5:8786``."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise PerfModelError("the Dask backend needs dask.distributed: pip install 'perfmodel[dask]'") from None

    if address == "local":
        # Everything on this machine's loopback only (LOOPBACK): the scheduler, the workers and the
        # dashboard, which ":0" served on every interface while the link said 127.0.0.1. The dashboard
        # on a free port: Dask's default 8787 is often taken on a shared machine, and Dask then warns
        # "Port 8787 is already in use" without saying what it means.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Port \d+ is already in use")
            cluster = LocalCluster(
                n_workers=n_workers(workers),
                threads_per_worker=1,
                processes=True,
                host=LOOPBACK,
                dashboard_address=f"{LOOPBACK}:0",
            )
        with cluster, Client(cluster) as client:
            yield client
        return
    checked = check_dask_address(address)
    assert checked is not None  # None is "local", handled above
    host, port = checked
    probe_scheduler(host, port)
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise PerfModelError(f"cannot reach the Dask scheduler at {address!r}: {exc}") from None
    with client:
        yield client


def dashboard_address(client) -> str | None:
    """Where a Dask client's dashboard is served (``http://127.0.0.1:PORT/status``), with a note
    when the page cannot draw (Dask's dashboard needs bokeh); None when the scheduler serves none."""
    try:
        link = client.dashboard_link
    except Exception:  # a scheduler without a dashboard service
        return None
    if not link:
        return None
    import importlib.util

    return link if importlib.util.find_spec("bokeh") else f"{link} (its pages need bokeh: pip install bokeh)"
