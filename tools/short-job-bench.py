#!/usr/bin/env python3
"""What self-tuning costs a short job (issue 67): per repetition, a fresh tuning cache and three
jobs in a row of the all-reduce perf test with nccl-tests' short settings (-n 20 -w 5), each
beside a job with TUTTI_TUNE=0 (the cost model alone, no calibration). Prints, per size and job,
the time ratio automatic / TUTTI_TUNE=0 (median over the repetitions, and the worst), with the
algorithms each ran. 1.00 is "self-tuning costs nothing"; the first job calibrates inside the
perf test's warm-up, so its timed calls are those of the model after calibration.

  tools/short-job-bench.py --np 4 --reps 3            (from the repository root, after a build)
"""
import argparse
import collections
import os
import shutil
import statistics
import subprocess
import tempfile


def run_job(build, np, sizes, env):
    cmd = [f"{build}/tools/tuttirun/tuttirun", "-np", str(np),
           f"{build}/perf_tests/all_reduce_perf", "-b", sizes[0], "-e", sizes[1], "-f", "4",
           "-n", "20", "-w", "5", "--show_algo", "1"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) >= 14 and words[0].isdigit():
            rows[int(words[0])] = (float(words[5]), words[13])  # out-of-place time (us), algo
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--build", default="build")
    ap.add_argument("--min", default="8")
    ap.add_argument("--max", default="16M")
    args = ap.parse_args()
    ratios = collections.defaultdict(list)  # (job, size) -> ratios
    algos = collections.defaultdict(set)    # (mode, size) -> algorithms
    base = dict(os.environ)
    for _ in range(args.reps):
        cache = tempfile.mkdtemp(prefix="tutti-short-job-")
        model_cache = tempfile.mkdtemp(prefix="tutti-short-job-model-")
        try:
            for job in (1, 2, 3):
                auto = run_job(args.build, args.np, (args.min, args.max),
                               dict(base, TUTTI_TUNING_CACHE=cache))
                model = run_job(args.build, args.np, (args.min, args.max),
                                dict(base, TUTTI_TUNING_CACHE=model_cache, TUTTI_TUNE="0"))
                for size, (us, algo) in auto.items():
                    if size in model and model[size][0] > 0:
                        ratios[(job, size)].append(us / model[size][0])
                        algos[("auto", size)].add(algo)
                        algos[("tune0", size)].add(model[size][1])
        finally:
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(model_cache, ignore_errors=True)
    sizes = sorted({size for _, size in ratios})
    print(f"# {args.np} ranks, {args.reps} fresh caches x 3 jobs; time ratio auto / TUTTI_TUNE=0 "
          "(median / worst), out of place")
    print(f"{'bytes':>10}  {'job 1':>11}  {'job 2':>11}  {'job 3':>11}  algorithms")
    for size in sizes:
        cells = []
        for job in (1, 2, 3):
            r = ratios[(job, size)]
            cells.append(f"{statistics.median(r):.2f}/{max(r):.2f}" if r else "-")
        print(f"{size:>10}  " + "  ".join(f"{c:>11}" for c in cells) +
              f"  auto {','.join(sorted(algos[('auto', size)]))};"
              f" tune0 {','.join(sorted(algos[('tune0', size)]))}")


if __name__ == "__main__":
    main()
