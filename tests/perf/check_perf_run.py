#!/usr/bin/env python3
"""Runs one perf test binary (under tuttirun, mpirun or alone), then checks its output.

  check_perf_run.py [--launcher tuttirun|mpirun|torchrun|slurm|gloo|none] [--launch-bin PATH]
                    [--np N] [--expect ok|fail] [--corrupt] [--sizes MIN:MAX:FACTOR]
                    [--expect-sizes S,S,..] [--json FILE] [--expect-algo NAME]
                    -- BINARY ARGS...

--launcher torchrun / slurm: starts N processes itself with the variables those launchers set
               (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT / SLURM_PROCID,
               SLURM_NTASKS, SLURM_LOCALID and a TUTTI_STORE_FILE directory); mpirun runs
               `mpirun -np N` with TUTTI_STORE_FILE exported (Open MPI sets no address).
--expect-sizes: the rows' sizes are exactly this list, repeated (-N cycles, types, ops).
--json FILE:   the -J output parses, has one result per row, every nwrong 0, and with
               --expect-algo every result ran that algorithm.

--expect ok:   exit status 0, the nccl-tests table and footer exactly, every #wrong 0,
               "Out of bounds values : 0 OK", rows for every size of the sweep.
--expect fail: (with --corrupt: TUTTI_TEST_CORRUPT=1) non-zero exit status, a FAILED footer
               and at least one row with #wrong > 0.
--self-test:   checks the parser on built-in samples (no binary run).
"""
import argparse
import os
import json
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "compare"))
import nccl_table  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from free_ports import free_port_pair  # noqa: E402

GOOD = """# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 8(factor) warmup iters: 1 iters: 2 agg iters: 1 validation: 1 graph: 0
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    21.56    0.00    0.00       0   114.13    0.00    0.00       0
          64            16     float     sum      -1    21.56    0.00    0.00       0      N/A     N/A     N/A     N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.0243712 
#
"""


def self_test():
    t = nccl_table.parse(GOOD)
    assert t.ok(), t.problems
    assert len(t.rows) == 2 and t.rows[1]["ip"]["time"] is None
    assert t.footer["errors"] == 0
    bad = GOOD.replace("  #wrong     time", "  error      time", 1)
    assert not nccl_table.parse(bad).ok()
    short = GOOD.replace("    0.00       0   114.13", "   114.13", 1)
    assert not nccl_table.parse(short).ok()
    nofooter = "\n".join(l for l in GOOD.splitlines() if "Out of bounds" not in l)
    assert not nccl_table.parse(nofooter).ok()
    print("parser self-test passed")
    return 0


def expected_sizes(spec):
    lo, hi, f = (int(x) for x in spec.split(":"))
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= f
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", default="tuttirun",
                    choices=["tuttirun", "mpirun", "torchrun", "slurm", "gloo", "none"])
    ap.add_argument("--expect-sizes", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--expect-algo", default="")
    ap.add_argument("--launch-bin", default="")
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--expect", default="ok", choices=["ok", "fail"])
    ap.add_argument("--corrupt", action="store_true")
    ap.add_argument("--sizes", default="", help="MIN:MAX:FACTOR of the sweep, checked per row group")
    ap.add_argument("--extra-columns", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=280)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")
    env = dict(os.environ)
    env.pop("TUTTI_TEST_CORRUPT", None)
    if a.corrupt:
        env["TUTTI_TEST_CORRUPT"] = "1"
    store = None
    if a.launcher == "tuttirun":
        procs = [subprocess.Popen([a.launch_bin or "tuttirun", "-np", str(a.np)] + cmd,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)]
    elif a.launcher == "mpirun":
        store = tempfile.mkdtemp(prefix="tutti-store-")
        env["TUTTI_STORE_FILE"] = store
        launch = [a.launch_bin or "mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                  str(a.np), "-x", "TUTTI_STORE_FILE"]
        if a.corrupt:
            launch += ["-x", "TUTTI_TEST_CORRUPT"]
        procs = [subprocess.Popen(launch + cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env)]
    elif a.launcher in ("torchrun", "slurm"):
        # What torchrun / srun put in each process's environment, nothing of tuttirun's.
        for k in [k for k in env if k.startswith(("TUTTI_RANK", "TUTTI_WORLD", "TUTTI_LOCAL",
                                                   "TUTTI_ADDR", "OMPI_", "PMIX_"))]:
            env.pop(k)
        if a.launcher == "torchrun":
            port = free_port_pair()
            names = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       LOCAL_WORLD_SIZE=str(a.np), TORCHELASTIC_RUN_ID="check-perf")
        else:
            store = tempfile.mkdtemp(prefix="tutti-store-")
            names = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")
            env.update(TUTTI_STORE_FILE=store, SLURM_JOB_ID="4242", SLURM_STEP_ID="0")
        procs = []
        for r in range(a.np):
            e = dict(env)
            e.update({names[0]: str(r), names[1]: str(a.np), names[2]: str(r)})
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE if r == 0 else
                                          subprocess.DEVNULL, stderr=subprocess.PIPE, env=e))
    elif a.launcher == "gloo":
        store = tempfile.mkdtemp(prefix="gloo-store-")
        procs = [subprocess.Popen(cmd + ["-R", str(r), "-S", str(a.np), "-F", store],
                                  stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
                                  stderr=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
                                  env=env) for r in range(a.np)]
    else:
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)]
    try:
        out, err = procs[0].communicate(timeout=a.timeout)
        out = out.decode(errors="replace")
        err = err.decode(errors="replace")
        rcs = [procs[0].returncode]
        for p in procs[1:]:
            perr = p.communicate(timeout=a.timeout)[1]
            rcs.append(p.returncode)
            if perr and p.returncode:
                err += perr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        print("FAIL: timed out after %gs" % a.timeout)
        return 1
    finally:
        if store:
            shutil.rmtree(store, ignore_errors=True)
    rc = max(abs(r) for r in rcs)
    sys.stdout.write(out)
    if err:
        sys.stdout.write("---- stderr ----\n" + err + "----------------\n")
    t = nccl_table.parse(out, extra_columns=a.extra_columns)
    failures = ["format: " + p for p in t.problems]
    wrong = nccl_table.wrong_total(t)
    if a.expect == "ok":
        if rc != 0:
            failures.append("exit status %d, expected 0" % rc)
        if wrong:
            failures.append("%d wrong elements" % wrong)
        if t.footer.get("status") != "OK":
            failures.append("footer is not 'Out of bounds values : 0 OK'")
        if a.sizes and t.rows:
            sizes = expected_sizes(a.sizes)
            # Rows come in groups (one per type/op/root); each group walks the sweep.
            got = [r["size"] for r in t.rows]
            if len(got) % len(sizes):
                failures.append("%d rows, not a multiple of the %d sizes" % (len(got), len(sizes)))
        if a.expect_sizes and t.rows:
            want = [int(x) for x in a.expect_sizes.split(",")]
            got = [r["size"] for r in t.rows]
            if len(got) % len(want) or got != want * (len(got) // len(want)):
                failures.append("row sizes %s, expected %s repeated" % (got, want))
        if a.json:
            try:
                with open(a.json) as f:
                    j = json.load(f)
                res = j["results"]
                if len(res) != len(t.rows):
                    failures.append("JSON has %d results for %d rows" % (len(res), len(t.rows)))
                for r in res:
                    for place in ("out_of_place", "in_place"):
                        if r[place]["nwrong"] != 0:
                            failures.append("JSON: %d B %s nwrong %s" % (r["size"], place,
                                                                         r[place]["nwrong"]))
                        if a.expect_algo and r[place].get("algorithm") != a.expect_algo:
                            failures.append("JSON: %d B %s ran %s, not %s" % (
                                r["size"], place, r[place].get("algorithm"), a.expect_algo))
                if j.get("errors") not in (0, []):  # a list of messages, empty when fine
                    failures.append("JSON errors = %s" % j.get("errors"))
            except (OSError, ValueError, KeyError, TypeError) as e:
                failures.append("JSON output %s: %s" % (a.json, e))
    else:
        if rc == 0:
            failures.append("exit status 0, expected a failure")
        if t.footer.get("status") != "FAILED":
            failures.append("footer does not say FAILED")
        if not wrong:
            failures.append("no row reports #wrong > 0")
    if not t.rows:
        failures.append("no result rows")
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("PASS: %d rows checked" % len(t.rows))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
