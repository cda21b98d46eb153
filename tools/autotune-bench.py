#!/usr/bin/env python3
"""Self-tuning against the best forced algorithm (docs/tuning.md, "Self-tuning"; figures in
docs/performance.md). For each rank count and collective, each repetition runs the perf test
twice with `-A all` (every algorithm forced in turn, then the automatic choice, at every size,
in the same run) on one fresh tuning cache: first cold (the job calibrates the host and
explores the shapes it meets), then warm (the same cache: choices from the first call). The
warm job sweeps the sizes --cycles times (the perf test's -N) and takes each column's median
busbw over its cycles, so a slow stretch of the machine does not decide a column alone (at 4
ranks on 2 cores one algorithm's columns in one run differ by up to 30%). Prints per size the
median over repetitions of auto busbw / best forced busbw for cold and warm, the same for the
forced column of the algorithm auto used ("pick": the choice without the auto column's own
noise), the worst size, and what calibration and exploration cost (from the TUNE log).

  tools/autotune-bench.py [--build build] [--np 2,4] [--colls all_reduce,all_gather,reduce_scatter]
                          [--reps 3] [--ranges 16:64K:180,256K:2M:120,4M:64M:80] [-f 4] [-w 5] [-a 1|3]
                          [--cycles 3]

Each range is MIN:MAX:ITERS, one perf-test invocation (the same cache). A shape's exploration
takes TUTTI_TUNE_EXPLORE_AFTER (2) + up to 6 candidates x (2 + 5..15) calls (more timed calls
for small sizes), and when others come within 25% of the fastest a run-off of up to 3 of them,
each 2 x 3 untimed + 4..16 timed calls (16 while their calls take up to 8 ms together).
ITERS + 1 must cover it for the cold run to finish exploring a size (and leave its winner for
the warm run): up to 170 calls at 16 B - 64 KiB, about 110 at 256 KiB - 2 MiB, 74 from 4 MiB.
So the cold column includes the exploration and the warm one is the choice after it. The calls
spent exploring are reported separately.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile


def run_perf(a, np, coll, cache, out_csv, cycles):
    env = dict(os.environ, TUTTI_TUNING_CACHE=cache, TUTTI_DEBUG="INFO", TUTTI_DEBUG_SUBSYS="TUNE")
    env.pop("TUTTI_ALGO", None)
    log = ""
    rows = []
    for r in a.ranges.split(","):
        lo, hi, iters = r.split(":")
        cmd = [os.path.join(a.build, "tools", "tuttirun", "tuttirun"), "-np", str(np),
               os.path.join(a.build, "perf_tests", f"{coll}_perf"), "-b", lo, "-e", hi, "-f", a.f,
               "-A", "all", "-c", "1", "-w", str(a.w), "-n", iters, "-a", a.average,
               "-N", str(cycles), "--csv", out_csv]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
        log += p.stdout + p.stderr
        rows += list(csv.DictReader(open(out_csv)))
    calib = [float(x) for x in re.findall(r"calibrated \w+ in ([0-9.]+) ms", log)]
    explored = [int(x) for x in re.findall(r"after (\d+) explored calls", log)]
    bws, used = {}, {}  # (size, algorithm or "auto") -> busbw per cycle; size -> auto's algorithms
    for r in rows:
        if r["placement"] != "out-of-place" or not r["busbw_GBps"]:
            continue
        size, name = int(r["size"]), r["algo_requested"]
        if name != "auto" and int(r["wrong"] or 0) != 0:
            continue
        bws.setdefault((size, name), []).append(float(r["busbw_GBps"]))
        if name == "auto":
            used.setdefault(size, []).append(r["algo_used"])
    best, auto, forced = {}, {}, {}
    for (size, name), v in bws.items():
        bw = statistics.median(v)
        if name == "auto":
            auto[size] = (bw, max(set(used[size]), key=used[size].count))
        else:
            forced[(size, name)] = bw
            if bw > best.get(size, (0, ""))[0]:
                best[size] = (bw, name)
    return best, auto, forced, calib, explored


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", default="2,4")
    ap.add_argument("--colls", default="all_reduce,all_gather,reduce_scatter")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ranges", default="16:64K:180,256K:2M:120,4M:64M:80")
    ap.add_argument("-f", default="4")
    ap.add_argument("-w", type=int, default=5)
    ap.add_argument("--cycles", type=int, default=3, help="size sweeps of the warm job")
    ap.add_argument("-a", dest="average", default="1",
                    help="perf-test time over ranks: 1 mean (nccl-tests' default), 3 the slowest")
    a = ap.parse_args()
    for np in [int(x) for x in a.np.split(",")]:
        for coll in a.colls.split(","):
            ratios = {"cold": {}, "warm": {}, "pick": {}}
            picks = {"cold": {}, "warm": {}}
            bests = {}
            calib, explored = [], []
            for rep in range(a.reps):
                with tempfile.TemporaryDirectory(prefix="tutti-autotune-") as d:
                    cache = os.path.join(d, "cache")
                    for phase in ("cold", "warm"):
                        best, auto, forced, c, e = run_perf(
                            a, np, coll, cache, os.path.join(d, phase + ".csv"),
                            1 if phase == "cold" else a.cycles)
                        if phase == "cold":
                            calib += c
                            explored.append(sum(e))
                        for size, (bw, name) in best.items():
                            if size in auto and bw > 0:
                                ratios[phase].setdefault(size, []).append(auto[size][0] / bw)
                                picks[phase].setdefault(size, []).append(auto[size][1])
                                bests.setdefault(size, []).append(name)
                                if phase == "warm" and (size, auto[size][1]) in forced:
                                    ratios["pick"].setdefault(size, []).append(
                                        forced[(size, auto[size][1])] / bw)
            print(f"\n## {coll}, {np} ranks ({a.reps} repetitions; auto busbw / best forced busbw, "
                  "median; best forced per repetition; auto's algorithm per repetition)")
            print("| size (B) | cold | warm | warm pick | best forced | auto cold | auto warm |")
            print("|---|---|---|---|---|---|---|")
            for size in sorted(ratios["warm"]):
                print(f"| {size} | {statistics.median(ratios['cold'].get(size, [0])):.2f} | "
                      f"{statistics.median(ratios['warm'][size]):.2f} | "
                      f"{statistics.median(ratios['pick'].get(size, [0])):.2f} | {','.join(bests[size])} | "
                      f"{','.join(picks['cold'].get(size, []))} | {','.join(picks['warm'][size])} |")
            for phase in ("cold", "warm", "pick"):
                meds = [statistics.median(v) for v in ratios[phase].values()]
                if meds:
                    print(f"{phase}: worst size {min(meds):.2f}, median {statistics.median(meds):.2f}")
            if calib:
                print(f"calibration at first init: {min(calib):.1f}-{max(calib):.1f} ms (ranks x runs)")
            print(f"explored calls per cold run (all shapes): {','.join(str(x) for x in explored)}")


if __name__ == "__main__":
    main()
