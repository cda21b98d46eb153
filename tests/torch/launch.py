"""Starts n ranks of a worker script as separate processes with torch's launch variables
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), as torchrun
would (Debian's torchrun 1.13 crashes on Python 3.11, so the tests do not use it)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from free_ports import free_port_pair  # noqa: E402


def run_ranks(n, script, args=(), env=None, timeout=300):
    """Returns [(returncode, stdout, stderr)] per rank; kills every rank after timeout."""
    port = free_port_pair()
    procs = []
    for r in range(n):
        e = dict(os.environ)
        e.update({"RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r),
                  "LOCAL_WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"})
        e["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, e.get("PYTHONPATH", "")) if p)
        e.update(env or {})
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, script), *args],
                                      env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, err = p.communicate()
            err += f"\n[launch.py: killed after {timeout} s]"
        results.append((p.returncode, out, err))
    return results


def reference_env(backend):
    """Extra environment for a launch of `backend`: under ThreadSanitizer (TSAN_OPTIONS set by
    ctest for TUTTI_SANITIZE=thread) a gloo reference run reports nothing, as what TSan would
    find there is in gloo and uninstrumented libtorch, not in tutti."""
    tsan = os.environ.get("TSAN_OPTIONS")
    if backend == "gloo" and tsan is not None:
        return {"TSAN_OPTIONS": tsan + " report_bugs=0"}
    return {}


def describe(results):
    return "\n".join(f"--- rank {r}: rc {rc}\n{out[-3000:]}\n{err[-6000:]}"
                     for r, (rc, out, err) in enumerate(results))
