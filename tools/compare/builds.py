#!/usr/bin/env python3
"""Before/after: one perf test of two tutti builds, alternating, on the same machine.

Runs R repetitions of, in turn (the order swapped every repetition),
  BEFORE/tools/tuttirun/tuttirun -n N BEFORE/perf_tests/PERF ARGS
  AFTER/tools/tuttirun/tuttirun  -n N AFTER/perf_tests/PERF ARGS
and prints per size the median and the minimum out-of-place time (us) of each build and the
ratios after/before (< 1: after faster) as a markdown table. Each build's own tuttirun
launches its own binaries. Standard library only.

  tools/compare/builds.py --before ../old/build --after build -n 2 --reps 5 \\
      -- -b 8 -e 64M -f 4 -n 50 -w 10
"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nccl_table  # noqa: E402


def run(build, nranks, perf, args):
    cmd = [os.path.join(build, "tools/tuttirun/tuttirun"), "-n", str(nranks),
           os.path.join(build, "perf_tests", perf), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit("failed (%d): %s\n%s\n%s" % (out.returncode, " ".join(cmd), out.stdout[-2000:],
                                              out.stderr[-2000:]))
    table = nccl_table.parse(out.stdout, extra_columns=2)
    if table.footer.get("errors", 1) != 0:
        sys.exit("wrong results or no footer: %s\n%s" % (" ".join(cmd), out.stdout[-2000:]))
    return {row["size"]: row["oop"]["time"] for row in table.rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="build directory of the 'before' commit")
    ap.add_argument("--after", required=True, help="build directory of the 'after' commit")
    ap.add_argument("-n", "--nranks", type=int, default=2)
    ap.add_argument("--perf", default="all_reduce_perf")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("args", nargs="*", help="perf test arguments (after --)")
    a = ap.parse_args()
    times = {"before": {}, "after": {}}
    for rep in range(a.reps):
        order = ["before", "after"] if rep % 2 == 0 else ["after", "before"]
        for which in order:
            build = a.before if which == "before" else a.after
            for size, t in run(build, a.nranks, a.perf, a.args).items():
                times[which].setdefault(size, []).append(t)
    print("%d ranks, %s out-of-place time (us), %d alternating runs each" %
          (a.nranks, a.perf, a.reps))
    print("| size | before median | after median | after/before median | before min | "
          "after min | after/before min |")
    print("|---|---|---|---|---|---|---|")
    for size in sorted(times["before"]):
        b, f = times["before"][size], times["after"].get(size, [])
        if not f:
            continue
        bm, fm = statistics.median(b), statistics.median(f)
        print("| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" %
              (size, bm, fm, fm / bm, min(b), min(f), min(f) / min(b)))


if __name__ == "__main__":
    main()
