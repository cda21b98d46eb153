#!/usr/bin/env python3
"""Launches with the real launchers, as a user would: no tutti variables in the environment.

  launch_tests.py CASE --build DIR [--np N]

Cases (exit 0 pass, 1 fail, 77 skipped with the reason printed):
  mpirun-perf     mpirun -np N all_reduce_perf -c 1: the rendezvous through PMIx, the
                  nccl-tests table with every #wrong 0 (tests/perf/check_perf_run.py)
  mpirun-killed   mpirun --enable-recovery -np N launch_check --die-rank 2: every other rank
                  fails its all-reduce with an error naming rank 2, within the timeout
  mpich-perf      MPICH's Hydra (mpiexec.hydra -n N all_reduce_perf -c 1): the rendezvous
                  through the PMI-1 key-value space (PMI_FD), the table with every #wrong 0
  mpich-killed    mpiexec.hydra -disable-auto-cleanup -n N launch_check --die-rank 2
                  --die-by-exit: as mpirun-killed (rank 2 ends with _exit: Hydra 4.0 ends the
                  whole job, -disable-auto-cleanup or not, when a process dies of a signal)
Open MPI's mpirun is /usr/bin/mpirun.openmpi and MPICH's mpiexec /usr/bin/mpiexec.hydra where
Debian installs them (both can be installed; /usr/bin/mpirun is whichever the alternatives
system picked), else mpirun / mpiexec.mpich on PATH.
  srun-perf       srun -n N --mpi=pmix all_reduce_perf -c 1 (run under tools/slurm-local.sh)
  srun-env        srun -n N --mpi=none launch_check: no PMIx, the address from the Slurm
                  variables (first host of the step's node list, the port from the job ids)
  srun-killed     srun -n N --mpi=pmix launch_check --die-rank 2: as mpirun-killed
  sbatch          sbatch examples/slurm/launch_check.sbatch, polled with scontrol: the job
                  completes with exit code 0:0 and its output has every rank's "correct" line
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CHECK_PERF = os.path.join(ROOT, "tests", "perf", "check_perf_run.py")
SKIP = 77
PERF_ARGS = ["-b", "8", "-e", "1M", "-f", "8", "-n", "2", "-w", "1", "-c", "1"]
DIE_RANK = 2
TIMEOUT_S = 20  # TUTTI_TIMEOUT given to the ranks that must notice the dead one


def clean_env():
    """The environment without anything that would tell tutti where to meet."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TUTTI_", "MASTER_", "OMPI_", "PMIX_", "PMI_", "MPI_LOCAL",
                                "HYDRA_", "SLURM_JOB", "SLURM_STEP",
                                "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "RANK",
                                "WORLD_SIZE", "LOCAL_RANK"))}
    if "SLURM_CONF" in os.environ:
        env["SLURM_CONF"] = os.environ["SLURM_CONF"]
    return env


def skip(why):
    print("SKIP: " + why)
    return SKIP


def pmix_built(build):
    info = os.path.join(build, "tools", "tutti-info", "tutti-info")
    if not os.access(info, os.X_OK):
        return True  # cannot tell: let the run decide
    out = subprocess.run([info], capture_output=True, text=True).stdout
    return re.search(r"^\s*pmix\s+yes", out, re.M) is not None


def mpirun_cmd(np):
    mpirun = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
    if not mpirun:
        return None
    cmd = [mpirun]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + ["--oversubscribe", "-np", str(np)]


def mpich_cmd(np):
    hydra = shutil.which("mpiexec.hydra") or shutil.which("mpiexec.mpich")
    return [hydra, "-n", str(np)] if hydra else None


def run(cmd, env, timeout=120):
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    secs = time.monotonic() - t0
    sys.stdout.write(p.stdout)
    if p.stderr:
        sys.stdout.write("---- stderr ----\n" + p.stderr + "----------------\n")
    print("exit status %d after %.1f s" % (p.returncode, secs), flush=True)
    return p, secs


def perf(launch, env):
    cmd = [sys.executable, CHECK_PERF, "--launcher", "none", "--timeout", "120",
           "--sizes", "8:1048576:8", "--"] + launch + PERF_ARGS
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, timeout=180).returncode


def check_correct(out, np):
    missing = [r for r in range(np)
               if "rank %d of %d: all-reduce of" % (r, np) not in out]
    if missing:
        print("FAIL: no 'correct' line from rank(s) %s" % missing)
        return 1
    print("PASS: %d ranks checked their all-reduce" % np)
    return 0


def check_killed(out, secs, np):
    fails = []
    for r in range(np):
        if r == DIE_RANK:
            continue
        line = next((l for l in out.splitlines() if l.startswith("rank %d: error:" % r)), None)
        if line is None:
            fails.append("rank %d printed no error" % r)
        elif "rank %d" % DIE_RANK not in line.split("error:", 1)[1] or "died" not in line:
            fails.append("rank %d's error does not say rank %d died: %s" % (r, DIE_RANK, line))
    if "rank %d of %d: all-reduce" % (DIE_RANK, np) in out:
        fails.append("the killed rank %d reported success" % DIE_RANK)
    if secs > TIMEOUT_S + 10:
        fails.append("took %.1f s, more than TUTTI_TIMEOUT=%d s + 10" % (secs, TIMEOUT_S))
    for f in fails:
        print("FAIL: " + f)
    if not fails:
        print("PASS: every other rank's error names rank %d" % DIE_RANK)
    return 1 if fails else 0


def killed_env():
    env = clean_env()
    env["TUTTI_TIMEOUT"] = str(TIMEOUT_S)  # a bound on the wait, not a launch variable
    return env


def wait_job(job, env, timeout):
    """Polls scontrol (sbatch --wait sleeps up to 10 s between its checks)."""
    end = time.monotonic() + timeout
    state, code = "?", "?"
    while time.monotonic() < end:
        p = subprocess.run(["scontrol", "-o", "show", "job", job], env=env, capture_output=True,
                           text=True)
        m = re.search(r"JobState=(\S+)", p.stdout)
        c = re.search(r"ExitCode=(\S+)", p.stdout)
        state, code = (m.group(1) if m else "?"), (c.group(1) if c else "?")
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
            return state, code
        time.sleep(0.2)
    print("FAIL: job %s still %s after %d s" % (job, state, timeout))
    return state, code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["mpirun-perf", "mpirun-killed", "mpich-perf",
                                     "mpich-killed", "srun-perf", "srun-env", "srun-killed",
                                     "sbatch"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--np", type=int, default=4)
    a = ap.parse_args()
    perf_bin = os.path.join(a.build, "perf_tests", "all_reduce_perf")
    app = os.path.join(a.build, "examples", "launch_check")
    np = a.np

    if a.case.startswith("mpirun"):
        launch = mpirun_cmd(np)
        if launch is None:
            return skip("mpirun is not installed (apt-get install openmpi-bin)")
        if not pmix_built(a.build):
            return skip("tutti was built without PMIx (apt-get install libpmix-dev, rebuild)")
        if a.case == "mpirun-perf":
            return perf(launch + [perf_bin], clean_env())
        # Open MPI aborts the whole job when a rank dies unless told to carry on: with
        # --enable-recovery the other ranks live to report tutti's error.
        p, secs = run(launch[:1] + ["--enable-recovery"] + launch[1:] +
                      [app, "--die-rank", str(DIE_RANK)], killed_env())
        return check_killed(p.stdout, secs, np)

    if a.case.startswith("mpich"):
        launch = mpich_cmd(np)
        if launch is None:
            return skip("MPICH's mpiexec.hydra is not installed (apt-get install mpich)")
        if a.case == "mpich-perf":
            return perf(launch + [perf_bin], clean_env())
        # Hydra ends the whole job when a rank exits non-zero unless told not to clean up, and
        # when one dies of a signal in any case: the rank leaves with _exit, no cleanup.
        p, secs = run(launch[:1] + ["-disable-auto-cleanup"] + launch[1:] +
                      [app, "--die-rank", str(DIE_RANK), "--die-by-exit"], killed_env())
        return check_killed(p.stdout, secs, np)

    if not os.environ.get("SLURM_CONF"):
        return skip("SLURM_CONF is not set: run under tools/slurm-local.sh run")
    if a.case == "srun-perf":
        return perf(["srun", "-n", str(np), "--mpi=pmix", perf_bin], clean_env())
    if a.case == "srun-env":
        env = clean_env()
        p, _ = run(["srun", "-n", str(np), "--mpi=none", app], env)
        if p.returncode != 0:
            print("FAIL: srun exit status %d" % p.returncode)
            return 1
        return check_correct(p.stdout, np)
    if a.case == "srun-killed":
        p, secs = run(["srun", "-n", str(np), "--mpi=pmix", app, "--die-rank", str(DIE_RANK)],
                      killed_env())
        rc = check_killed(p.stdout, secs, np)
        if p.returncode == 0:
            print("FAIL: srun exit status 0 with a killed rank")
            rc = 1
        return rc
    # sbatch
    tmp = tempfile.mkdtemp(prefix="tutti-sbatch-")
    try:
        out = os.path.join(tmp, "job.out")
        env = clean_env()
        env["TUTTI_EXAMPLE_BIN"] = app  # where the script finds the program (not a launch var)
        script = os.path.join(ROOT, "examples", "slurm", "launch_check.sbatch")
        p, _ = run(["sbatch", "--parsable", "--ntasks", str(np), "--output", out, script], env)
        if p.returncode != 0:
            print("FAIL: sbatch exit status %d" % p.returncode)
            return 1
        job = p.stdout.strip().split(";")[0]
        state, code = wait_job(job, env, 150)
        text = open(out).read() if os.path.exists(out) else ""
        print("---- job output ----\n" + text + "--------------------")
        if state != "COMPLETED" or code != "0:0":
            print("FAIL: job %s ended %s with exit code %s" % (job, state, code))
            return 1
        return check_correct(text, np)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
