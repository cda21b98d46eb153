#!/usr/bin/env python3
"""Self-tuning's choice at one size, job after job ("Confirmation in later jobs" in
docs/perf/tuning-design-record-2026-11-22-to-2026-12-06.md; figures in
docs/perf/self-tuning-history-2026-11-29-to-2026-12-06.md). Each repetition runs a cold job on a fresh tuning cache,
then, from copies of the cache it left, one warm job per variant (a variant is environment
settings, e.g. TUTTI_TUNE_CONFIRM_JOBS=1 against the default; --warm-jobs K: K of them, one after
the other on the variant's copy), in alternating order between repetitions. Every job is the perf test at one size with `-A all` (every algorithm forced in
turn and the automatic choice, the same run), --cycles sweeps with the columns in alternating
order; a job's score is auto's busbw over the best forced column's, each column's median over
the sweeps after the first (the first holds the exploring). Prints each job's choice and score,
and per job kind the median and worst score, how often it chose its job's best forced algorithm,
and its choices scored by the pooled forced times (each algorithm's time over its job's fastest,
the median over every job of the run: a yardstick less noisy than one job's columns).

  tools/autotune-jobs.py --np 2 --coll all_reduce --size 4M [--iters 80] [--cycles 4]
                         [--reps 6] [--variant NAME:VAR=VALUE,...]... [--warm-jobs 1]
                         [--verbose] [--build build]

Without --variant: "final" (TUTTI_TUNE_CONFIRM_JOBS=1, the default: the cold job's verdict kept)
against "confirm" (TUTTI_TUNE_CONFIRM_JOBS=3: the run-off is run again and the jobs' evidence
together decides).
"""
import argparse
import csv
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare"))
from compare import parse_bytes  # noqa: E402

# autotune-bench.py's datatype rule (float32, int8 where a rank would hold less than a float32).
_spec = importlib.util.spec_from_file_location(
    "autotune_bench", os.path.join(os.path.dirname(os.path.abspath(__file__)), "autotune-bench.py"))
_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench)


def run_job(a, cache, env_extra, out_csv):
    """One perf-test job on `cache`: (auto's score, auto's algorithm, best forced, TUNE lines)."""
    dtype = _bench.datatype(a.coll, a.np, parse_bytes(a.size))
    # Refinement as this tool's figures were taken: exploring from a shape's third call, in
    # consecutive calls (the library's defaults hold it off for short jobs); a variant may set
    # either.
    env = dict(os.environ, TUTTI_TUNING_CACHE=cache, TUTTI_DEBUG="INFO", TUTTI_DEBUG_SUBSYS="TUNE",
               TUTTI_TUNE_EXPLORE_AFTER="2", TUTTI_TUNE_EXPLORE_SHARE="1")
    env.pop("TUTTI_ALGO", None)
    env.update(env_extra)
    cmd = [os.path.join(a.build, "tools", "tuttirun", "tuttirun"), "-np", str(a.np),
           os.path.join(a.build, "perf_tests", f"{a.coll}_perf"), "-b", a.size, "-e", a.size,
           "-d", dtype, "-A", "all", "-c", "1", "-w", "5", "-n", str(a.iters),
           "-N", str(a.cycles), "--alternate", "1", "--csv", out_csv]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    times, used = {}, []
    for r in csv.DictReader(open(out_csv)):
        if r["placement"] != "out-of-place" or not r["time_us"]:
            continue
        name = r["algo_requested"]
        if name != "auto" and int(r["wrong"] or 0) != 0:
            continue
        times.setdefault(name, []).append(float(r["time_us"]))
        if name == "auto":
            used.append(r["algo_used"])
    later = {n: statistics.median(v[1:]) for n, v in times.items() if len(v) > 1}
    forced = {n: t for n, t in later.items() if n != "auto"}
    best = min(forced, key=forced.get)
    tune = [line.split("TUNING ", 1)[1] for line in (p.stdout + p.stderr).splitlines()
            if "TUNING learned" in line or "TUNING exploring" in line]
    return forced[best] / later["auto"], used[-1], best, forced, tune


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--coll", default="all_reduce")
    ap.add_argument("--size", default="4M")
    ap.add_argument("--iters", type=int, default=80)
    ap.add_argument("--cycles", type=int, default=4)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:VAR=VALUE,... (a warm job per variant and repetition)")
    ap.add_argument("--warm-jobs", type=int, default=1,
                    help="warm jobs per variant, one after the other on its cache (NAME#1, ...)")
    ap.add_argument("--verbose", action="store_true", help="print the TUNE decisions")
    a = ap.parse_args()
    variants = []
    for v in a.variant or ["final:TUTTI_TUNE_CONFIRM_JOBS=1", "confirm:TUTTI_TUNE_CONFIRM_JOBS=3"]:
        name, _, settings = v.partition(":")
        variants.append((name, dict(s.split("=", 1) for s in settings.split(",") if s)))
    def label(name, k):
        return name if a.warm_jobs == 1 else f"{name}#{k}"

    scores = {"cold": []}
    pooled, choices = {}, {}  # algorithm -> its time over the job's fastest, every job
    hits = {"cold": 0}
    for k in range(1, a.warm_jobs + 1):
        for name, _ in variants:
            scores[label(name, k)], hits[label(name, k)] = [], 0
    with tempfile.TemporaryDirectory(prefix="tutti-autotune-jobs-") as d:
        out_csv = os.path.join(d, "out.csv")
        for rep in range(a.reps):
            cold = os.path.join(d, f"cold{rep}")
            order = variants if rep % 2 == 0 else variants[::-1]
            jobs = [("cold", cold, {}, 0)]
            for k in range(1, a.warm_jobs + 1):
                jobs += [(label(n, k), os.path.join(d, f"{n}{rep}"), e, k) for n, e in order]
            for name, cache, env, k in jobs:
                if k == 1:  # a copy of what the cold job left
                    shutil.copytree(cold, cache)
                score, algo, best, forced, tune = run_job(a, cache, env, out_csv)
                fastest = min(forced.values())
                for n, t in forced.items():
                    pooled.setdefault(n, []).append(t / fastest)
                choices.setdefault(name, []).append(algo)
                scores[name].append(score)
                hits[name] += algo == best
                cols = " ".join(f"{n} {t:.0f}" for n, t in sorted(forced.items(), key=lambda x: x[1]))
                print(f"rep {rep} {name:8s} auto {algo:13s} score {score:.3f}  best {best} "
                      f"(forced us: {cols})", flush=True)
                if a.verbose:
                    for line in tune:
                        print(f"    {line}")
    print(f"\n{a.coll} {a.size} at {a.np} ranks, {a.reps} repetitions: auto / best forced "
          "(medians over the sweeps after the first)")
    cost = {n: statistics.median(v) for n, v in pooled.items()}
    top = min(cost.values())
    print("pooled: each algorithm's forced time over its job's fastest, median over all "
          f"{len(scores) * a.reps} jobs: " +
          ", ".join(f"{n} {c / top:.3f}" for n, c in sorted(cost.items(), key=lambda x: x[1])))
    print("| job | auto / best forced: median | worst | chose its job's best forced | "
          "choice by the pooled times: mean (best 1) | worst | choices |")
    print("|---|---|---|---|---|---|---|")
    for name, v in scores.items():
        chosen = [top / cost[c] if c in cost else 0 for c in choices[name]]
        print(f"| {name} | {statistics.median(v):.3f} | {min(v):.3f} | {hits[name]} of {len(v)} | "
              f"{statistics.mean(chosen):.3f} | {min(chosen):.3f} | "
              f"{', '.join(sorted(set(choices[name]), key=choices[name].count, reverse=True))} |")


if __name__ == "__main__":
    main()
