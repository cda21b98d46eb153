"""Starts n ranks of a worker script as separate processes with torch's launch variables
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), as torchrun
would. The ranks are forked from one process that imported torch (rank_zygote.py), which
spares each rank torch's import; under a sanitizer, or with a variable only a process start
reads, each rank is a fresh interpreter. torchrun itself is tested in test_backend.py."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from free_ports import free_port_pair  # noqa: E402


# What a forked rank cannot take from its environment: read when a process starts.
_START_ONLY = ("LD_PRELOAD", "ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS", "PYTHONPATH",
               "OMP_NUM_THREADS")
_zygote = None


def _rank_env(n, r, port, env):
    e = dict(os.environ)
    e.update({"RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r),
              "LOCAL_WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1",
              "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"})
    e["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, e.get("PYTHONPATH", "")) if p)
    e.update(env or {})
    return e


def _forks_ranks(env):
    """Ranks are forked from rank_zygote.py unless a sanitizer runtime is preloaded (it reads
    its options at process start, and a gloo reference run changes them) or the launch changes
    what only a process start reads."""
    return "LD_PRELOAD" not in os.environ and not any(k in (env or {}) for k in _START_ONLY)


def _zygote_process():
    global _zygote
    if _zygote is None or _zygote.poll() is not None:
        _zygote = subprocess.Popen([sys.executable, os.path.join(HERE, "rank_zygote.py")],
                                   env=_rank_env(1, 0, 0, None), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
    return _zygote


def _run_forked(script, args, envs, timeout):
    with tempfile.TemporaryDirectory() as d:
        z = _zygote_process()
        z.stdin.write(json.dumps({"script": os.path.join(HERE, script), "args": list(args),
                                  "envs": envs, "timeout": timeout, "dir": d}) + "\n")
        z.stdin.flush()
        reply = z.stdout.readline()
        if not reply:
            raise RuntimeError(f"rank_zygote.py ended (exit {z.wait()}) during a launch of {script}")
        results = []
        for r, (rc, timed_out) in enumerate(json.loads(reply)):
            out, err = (open(os.path.join(d, f"rank{r}.{s}")).read() for s in ("out", "err"))
            if timed_out:
                err += f"\n[launch.py: killed after {timeout} s]"
            results.append((rc, out, err))
        return results


def _run_spawned(script, args, envs, timeout):
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, script), *args], env=e,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for e in envs]
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


def run_ranks(n, script, args=(), env=None, timeout=300):
    """Returns [(returncode, stdout, stderr)] per rank; kills every rank after timeout."""
    port = free_port_pair()
    envs = [_rank_env(n, r, port, env) for r in range(n)]
    run = _run_forked if _forks_ranks(env) else _run_spawned
    return run(script, args, envs, timeout)


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
