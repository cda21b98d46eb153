#!/usr/bin/env python3
"""Self-tuning against the best forced algorithm (docs/tuning.md, "Self-tuning"; figures in
docs/perf/self-tuning-history-2026-11-29-to-2026-12-06.md). For each rank count and collective, each repetition runs the perf test
four times with `-A all` (every algorithm forced in turn, then the automatic choice, at every
size, in the same run) on one fresh tuning cache: first cold (the job calibrates the host and
explores the shapes it meets), then warm (the same cache: choices from the first call), then
the cost model alone (TUTTI_TUNE=0: no calibration, no refinement; --no-model leaves this job
out), then an oracle (--no-oracle leaves it out): the warm cache with each size's choice
replaced by the warm job's best forced algorithm, a chooser that knew the answer. Its ratio is
the metric's own floor on this machine: what the best possible choice scores when its column
and the forced ones are measured again. Each job sweeps the sizes several times (the perf
test's -N): the cold job --cold-cycles (4) times, the others --cycles (4) times, every other
sweep with the columns in reverse order (the perf test's --alternate 1: auto first, so that no
column always follows the same one). Prints per size the median over repetitions of auto busbw /
best forced busbw:
  - cold, 1st sweep: each size's exploration is inside the measured calls, as a job that calls
    each size only ITERS times pays it (calibration ran before, at the communicator's first
    call, in the perf test's warm-up);
  - cold, after exploring: the cold job's sweeps after each size's last explored call (the
    TUNE log's count of them; the first sweep's when that ends inside it), what it learned
    (each column's median over them); a size whose exploration ran past the first sweep is
    listed;
  - warm: each column's median over the warm job's sweeps, so that a slow stretch of the
    machine does not decide a column alone (at 4 ranks on 2 cores one algorithm's columns in
    one run differ by up to 30%);
  - warm pick: the forced column of the algorithm auto used (the choice without the auto
    column's own noise);
  - model alone: the model job's auto column, each column's median over its sweeps;
  - oracle: the oracle job's auto column, likewise;
  - warm vs best out of sample: the warm job's auto against the best forced algorithm chosen on
    other sweeps than it is measured on (best_out_of_sample): the best of 8-10 close, noisy
    columns' medians is biased high, so the plain ratio scores even a perfect chooser below 1;
and the worst size and median of each, the warm worst where the model alone reached >= 0.90
(no regression where the model already chose well), and what calibration and exploration cost
(from the TUNE log).

  tools/autotune-bench.py [--build build] [--np 2,4] [--colls all_reduce,all_gather,reduce_scatter]
                          [--reps 3] [--ranges 8:8:600,16:64K:600,256K:2M:300,4M:64M:80] [-f 4] [-w 5] [-a 1|3]
                          [--cycles 4] [--cold-cycles 4] [--no-model] [--no-oracle] [--logs DIR]

Each range is MIN:MAX:ITERS, one perf-test invocation (the same cache), in float32 unless its
smallest size leaves a rank less than 4 bytes (all-gather and reduce-scatter of 8 B on 4
ranks): that range runs in int8. A shape's exploration
takes TUTTI_TUNE_EXPLORE_AFTER (2) + up to 8 candidates x (2 + 5..15) calls (more timed calls
for small sizes), and when others come within 25% of the fastest (the fastest 3 however far
behind, the model's choice among them, when the fastest's timed calls took less than 20 ms in
all) a run-off of up to 3 of them, each (2..4 passes) x 3
untimed + 4..32 timed calls (32 while their calls take up to 1 ms together), and up to two
rounds more when its halves disagree. ITERS + 2 (the calls of a size per sweep) covers the
first round and one run-off round up to 2 MiB (up to 270 calls at 8 B - 64 KiB with all-reduce's
8 candidates) and, from 4 MiB, for all-gather's 4 candidates (74 calls), not all-reduce's 8
(88); what is left, and later rounds, spill into the second sweep and beyond. The default ITERS make a sample of a small or
middle size last tens of milliseconds, several of the scheduler's time slices (with more ranks
than cores a sample of a few milliseconds is one slice's luck). The calls spent exploring are
reported separately. --logs DIR keeps each job's output and TUNE log
(COLL-npN-repK-JOB.log).
"""
import argparse
import csv
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare"))
from compare import parse_bytes  # noqa: E402


def datatype(coll, np, smallest):
    """float32, unless a range's smallest size leaves a rank less than one float32 (all-gather
    and reduce-scatter of 8 B on 4 ranks): then int8."""
    return "float" if coll == "all_reduce" or smallest // np >= 4 else "int8"


def run_perf(a, np, coll, cache, out_csv, cycles, types, tune=True):
    """Runs the perf test over the ranges; types[size] gets each size's datatype. Returns the
    job's bandwidths ((size, algorithm or "auto") -> per sweep), auto's algorithm per size and
    sweep, the calibration times and explored-call counts of its TUNE log, the log itself, and
    each size's ITERS."""
    env = dict(os.environ, TUTTI_TUNING_CACHE=cache, TUTTI_DEBUG="INFO", TUTTI_DEBUG_SUBSYS="TUNE",
               TUTTI_TUNE="1" if tune else "0", TUTTI_TUNE_EXPLORE_SHARE=a.explore_share,
               TUTTI_TUNE_EXPLORE_AFTER=a.explore_after)
    env.pop("TUTTI_ALGO", None)
    log = ""
    rows = []
    iters_of = {}
    for r in a.ranges.split(","):
        lo, hi, iters = r.split(":")
        cmd = [os.path.join(a.build, "tools", "tuttirun", "tuttirun"), "-np", str(np),
               os.path.join(a.build, "perf_tests", f"{coll}_perf"), "-b", lo, "-e", hi, "-f", a.f,
               "-d", datatype(coll, np, parse_bytes(lo)),
               "-A", "all", "-c", "1", "-w", str(a.w), "-n", iters, "-a", a.average,
               "-N", str(cycles), "--alternate", "1", "--csv", out_csv]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
        log += p.stdout + p.stderr
        found = list(csv.DictReader(open(out_csv)))
        rows += found
        iters_of.update({int(r["size"]): int(iters) for r in found})
    calib = [float(x) for x in re.findall(r"calibrated \w+ in ([0-9.]+) ms", log)]
    explored = [int(x) for x in re.findall(r"after (\d+) explored calls", log)]
    # (size, algorithm or "auto") -> algbw per cycle; size -> auto's algorithm per cycle
    bws, used = {}, {}
    for r in rows:
        if r["placement"] != "out-of-place" or not r["busbw_GBps"]:
            continue
        size, name = int(r["size"]), r["algo_requested"]
        if name != "auto" and int(r["wrong"] or 0) != 0:
            continue
        # From the time: the CSV's busbw has too few digits for 8 B (its factor over algbw is
        # the same for every column of a size, so the ratios are busbw's).
        bws.setdefault((size, name), []).append(size / float(r["time_us"]) / 1e3)
        types[size] = r["type"]
        if name == "auto":
            used.setdefault(size, []).append(r["algo_used"])
    return {"bws": bws, "used": used, "calib": calib, "explored": explored, "log": log,
            "iters": iters_of}


def bucket_of(coll, np, size):
    """A size's tuning bucket: floor(log2) of the bytes per rank (online_tuner.h), the size for
    all-reduce, size / ranks for the others."""
    return (size if coll == "all_reduce" else size // np).bit_length() - 1


def first_clean_sweep(log, coll, np, iters_of):
    """size -> the cold job's first sweep that ran nothing but the size's learned choice (>= 1),
    or None when the job ended before the size's exploration did. A shape's calls up to its
    winner are TUTTI_TUNE_EXPLORE_AFTER (2) + its explored calls (the TUNE log's `learned <key>:
    <algo> after N explored calls`); a sweep makes ITERS + 2 calls of a size (one before the
    timed ones, one checked after). A run-off's later rounds spill into the second sweep and
    beyond (ITERS covers one round), and a sweep with explored calls measures the exploring."""
    name = coll.replace("_", "")
    learned = {int(b): int(n) for b, n in re.findall(
        rf"learned {name} n{np} h1 b(\d+) w\d: \S+ after (\d+) explored calls", log)}
    exploring = {int(b) for b in re.findall(rf"exploring on: {name} n{np} h1 b(\d+) w\d", log)}
    out = {}
    for size, iters in iters_of.items():
        b = bucket_of(coll, np, size)
        if b in learned:
            out[size] = max(1, -(-(2 + learned[b]) // (iters + 2)))
        else:  # settled without exploring (one candidate), or still exploring at the end
            out[size] = None if b in exploring else 1
    return out


def write_oracle(cache, oracle, coll, np, best_by_size):
    """Copies the tuning cache directory `cache` to `oracle` with the choice of each size's shape
    replaced by that size's best forced algorithm. A shape's bucket is floor(log2) of the bytes
    per rank (online_tuner.h): the size for all-reduce, size / ranks for the others. The
    run-offs' evidence lines go: the oracle's choices are final (no confirming run-off)."""
    shutil.copytree(cache, oracle)
    name = coll.replace("_", "")
    buckets = {bucket_of(coll, np, s): s for s in best_by_size}
    choice = re.compile(rf"^choice {name} n{np} h1 b(\d+) w\d \S+$")
    for path in glob.glob(os.path.join(oracle, "*.tuning")):
        lines = [line for line in open(path).read().splitlines()
                 if not line.startswith("evidence ")]
        done = set()
        for i, line in enumerate(lines):
            m = choice.match(line)
            if m and int(m.group(1)) in buckets:
                size = buckets[int(m.group(1))]
                lines[i] = line.rsplit(" ", 1)[0] + " " + best_by_size[size]
                done.add(size)
        if done != set(best_by_size):
            sys.exit(f"oracle: no choice in {path} for sizes {sorted(set(best_by_size) - done)}")
        open(path, "w").write("\n".join(lines) + "\n")


def summarise(bws, used, cycles):
    """Each column's median bandwidth over the sweeps `cycles(size)` (a slice): the best forced
    algorithm per size, auto's bandwidth and most used algorithm, every forced column."""
    best, auto, forced = {}, {}, {}
    for (size, name), v in bws.items():
        if not v[cycles(size)]:
            continue
        bw = statistics.median(v[cycles(size)])
        if name == "auto":
            names = used[size][cycles(size)]
            auto[size] = (bw, max(set(names), key=names.count))
        else:
            forced[(size, name)] = bw
            if bw > best.get(size, (0, ""))[0]:
                best[size] = (bw, name)
    return best, auto, forced


def best_out_of_sample(bws, size):
    """The best forced algorithm's bandwidth at `size`, chosen and measured on different sweeps:
    for each sweep, the algorithm with the best median over the other sweeps, and its bandwidth
    in this one; the median of these. The best of many columns' medians (summarise) is biased
    high where columns are close and noisy: it takes each sweep's lucky column. None with fewer
    than 2 sweeps."""
    cols = {name: v for (s, name), v in bws.items() if s == size and name != "auto"}
    sweeps = min((len(v) for v in cols.values()), default=0)
    if sweeps < 2:
        return None
    held_out = []
    for k in range(sweeps):
        pick = max(cols, key=lambda n: statistics.median(cols[n][:k] + cols[n][k + 1:sweeps]))
        held_out.append(cols[pick][k])
    return statistics.median(held_out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", default="2,4")
    ap.add_argument("--colls", default="all_reduce,all_gather,reduce_scatter")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ranges", default="8:8:600,16:64K:600,256K:2M:300,4M:64M:80")
    ap.add_argument("-f", default="4")
    ap.add_argument("-w", type=int, default=5)
    ap.add_argument("--cycles", type=int, default=4,
                    help="size sweeps of the warm, model and oracle jobs")
    ap.add_argument("--cold-cycles", type=int, default=4,
                    help="size sweeps of the cold job: the first explores, the rest run its choices")
    ap.add_argument("--no-model", dest="model", action="store_false",
                    help="leave out the third job (TUTTI_TUNE=0: the cost model alone, the baseline)")
    ap.add_argument("--no-oracle", dest="oracle", action="store_false",
                    help="leave out the oracle job (the warm cache set to each size's best forced)")
    ap.add_argument("--logs", help="keep each job's perf-test output and TUNE log in this folder")
    ap.add_argument("--explore-after", default="2",
                    help="TUTTI_TUNE_EXPLORE_AFTER of the jobs: 2, as the bench's figures were "
                    "taken (the library's default, 64, holds exploring off for a short job)")
    ap.add_argument("--explore-share", default="1",
                    help="TUTTI_TUNE_EXPLORE_SHARE of the jobs: 1 (explore in consecutive calls, "
                    "so that the cold job's sweeps settle every size; the library's default, "
                    "1/8, settles after about 8x the calls: tools/short-job-bench.py measures "
                    "what it costs a short job)")
    ap.add_argument("-a", dest="average", default="1",
                    help="perf-test time over ranks: 1 mean (nccl-tests' default), 3 the slowest")
    a = ap.parse_args()
    for np in [int(x) for x in a.np.split(",")]:
        for coll in a.colls.split(","):
            ratios = {"cold": {}, "explored": {}, "warm": {}, "pick": {}, "model": {}, "oracle": {},
                      "warm-oos": {}}
            picks = {"explored": {}, "warm": {}, "model": {}}
            bests = {}
            calib, explored, types, spilled = [], [], {}, []
            for rep in range(a.reps):
                with tempfile.TemporaryDirectory(prefix="tutti-autotune-") as d:
                    cache = os.path.join(d, "cache")
                    warm_best = {}
                    for job in ("cold", "warm") + (("model",) if a.model else ()) + (
                            ("oracle",) if a.oracle else ()):
                        if job == "oracle":
                            write_oracle(cache, os.path.join(d, "oracle"), coll, np, warm_best)
                        r = run_perf(
                            a, np, coll, os.path.join(d, "oracle") if job == "oracle" else cache,
                            os.path.join(d, job + ".csv"),
                            a.cold_cycles if job == "cold" else a.cycles, types,
                            tune=job != "model")
                        if a.logs:
                            os.makedirs(a.logs, exist_ok=True)
                            with open(os.path.join(a.logs, f"{coll}-np{np}-rep{rep}-{job}.log"),
                                      "w") as f:
                                f.write(r["log"])
                        phases = [(job, lambda size: slice(None))]
                        if job == "cold":
                            calib += r["calib"]
                            explored.append(sum(r["explored"]))
                            # The first sweep pays the exploration; the sweeps after a size's
                            # last explored call run what it learned.
                            clean = first_clean_sweep(r["log"], coll, np, r["iters"])
                            spilled += [(size, k, rep) for size, k in clean.items() if k != 1]
                            phases = [("cold", lambda size: slice(0, 1)),
                                      ("explored", lambda size: slice(
                                          clean[size] or a.cold_cycles, None))]
                        bws, used = r["bws"], r["used"]
                        for phase, cycles in phases:
                            best, auto, forced = summarise(bws, used, cycles)
                            for size, (bw, name) in best.items():
                                if size not in auto or bw <= 0:
                                    continue
                                ratios[phase].setdefault(size, []).append(auto[size][0] / bw)
                                if phase in ("cold", "oracle"):
                                    continue
                                picks[phase].setdefault(size, []).append(auto[size][1])
                                if phase == "warm":
                                    oos = best_out_of_sample(bws, size)
                                    if oos:
                                        ratios["warm-oos"].setdefault(size, []).append(
                                            auto[size][0] / oos)
                                    warm_best[size] = name
                                    bests.setdefault(size, []).append(name)
                                    if (size, auto[size][1]) in forced:
                                        ratios["pick"].setdefault(size, []).append(
                                            forced[(size, auto[size][1])] / bw)
            print(f"\n## {coll}, {np} ranks ({a.reps} repetitions; auto busbw / best forced busbw, "
                  "median; best forced (warm) and auto's algorithm per repetition)")
            print("| size (B) | cold: 1st sweep | cold: after exploring | warm | warm pick | "
                  "model alone | oracle | warm vs best out of sample | best forced | auto cold | "
                  "auto warm | model alone |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")

            def med(phase, size):
                return f"{statistics.median(ratios[phase][size]):.2f}" if size in ratios[phase] else "-"
            for size in sorted(ratios["warm"]):
                dtype = "" if types.get(size, "float") == "float" else f" ({types[size]})"
                print(f"| {size}{dtype} | {med('cold', size)} | {med('explored', size)} | {med('warm', size)} | "
                      f"{med('pick', size)} | {med('model', size)} | {med('oracle', size)} | "
                      f"{med('warm-oos', size)} | "
                      f"{','.join(bests[size])} | "
                      f"{','.join(picks['explored'].get(size, []))} | {','.join(picks['warm'][size])} | "
                      f"{','.join(picks['model'].get(size, []))} |")
            for phase in ("cold", "explored", "warm", "pick", "model", "oracle", "warm-oos"):
                meds = [statistics.median(v) for v in ratios[phase].values()]
                if meds:
                    print(f"{phase}: worst size {min(meds):.2f}, median {statistics.median(meds):.2f}")
            if ratios["model"]:
                # The model already chose well (>= 0.90 of the best): does the tuned choice keep it?
                good = [x for x in ratios["model"] if x in ratios["warm"]
                        and statistics.median(ratios["model"][x]) >= 0.90]
                if good:
                    worst = min(good, key=lambda x: statistics.median(ratios["warm"][x]))
                    print(f"where the model alone reached >= 0.90 ({len(good)} sizes): warm worst "
                          f"{statistics.median(ratios['warm'][worst]):.2f} ({worst} B, model alone "
                          f"{statistics.median(ratios['model'][worst]):.2f})")
            if calib:
                print(f"calibration at first init: {min(calib):.1f}-{max(calib):.1f} ms (ranks x runs)")
            print(f"explored calls per cold run (all shapes): {','.join(str(x) for x in explored)}")
            if spilled:
                print("exploration past the cold job's first sweep (after exploring: the sweeps "
                      "after it): " + ", ".join(
                          f"{size} B explored into sweep {k} of {a.cold_cycles} (rep {rep + 1})"
                          if k else
                          f"{size} B unsettled after {a.cold_cycles} sweeps (rep {rep + 1})"
                          for size, k, rep in spilled))


if __name__ == "__main__":
    main()
