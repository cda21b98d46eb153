"""Starts n ranks of a worker script as separate processes with torch's launch variables
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), as torchrun
would (Debian's torchrun 1.13 crashes on Python 3.11, so the tests do not use it)."""
import os
import random
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A port that binds now, below the kernel's ephemeral range: a port the kernel handed
    out (bind to 0) is free only until the next outgoing connection of any process takes it,
    and the tests beside this one make many (torch's store bound it after such a connection
    had: EADDRINUSE)."""
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # every candidate taken: the kernel's choice
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(n, script, args=(), env=None, timeout=300):
    """Returns [(returncode, stdout, stderr)] per rank; kills every rank after timeout."""
    port = free_port()
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
