"""The one executor (perfmodel.parallel): same results on every backend, and no process left behind
when the command that started a pool is ended by SIGTERM or SIGINT."""

import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from perfmodel import parallel
from perfmodel.errors import PerfModelError


def square(x):
    return x * x


@pytest.mark.parametrize("executor", ["serial", "processes"])
def test_execute_gives_the_results_in_task_order(executor):
    seen = []
    out = parallel.execute(square, list(range(40)), executor, workers=2, progress=lambda d, t: seen.append((d, t)))
    assert out == [x * x for x in range(40)]
    assert seen[-1] == (40, 40)


def test_execute_refuses_an_unknown_executor():
    with pytest.raises(PerfModelError, match="unknown executor 'threads'"):
        parallel.execute(square, [1], "threads")


SCRIPT = textwrap.dedent("""
    import sys, time
    from perfmodel import parallel

    def slow(x):
        time.sleep(60)
        return x

    parallel.POOL_THRESHOLD = 0.0
    print("ready", flush=True)
    parallel.run_tasks(slow, list(range(6)), 2, None, None, adaptive=False)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_every_process_the_pool_started(signum):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        me = psutil.Process(proc.pid)
        deadline = time.monotonic() + 60
        while len(me.children(recursive=True)) < 2:  # the two workers (and the resource tracker)
            assert time.monotonic() < deadline, "the pool never started"
            time.sleep(0.05)
        children = me.children(recursive=True)
        proc.send_signal(signum)
        proc.wait(timeout=30)
        gone, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, f"left running after {signal.Signals(signum).name}: {[p.pid for p in alive]}"
        assert proc.returncode != 0
    finally:
        if proc.poll() is None:
            proc.kill()
