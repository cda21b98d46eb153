#!/usr/bin/env python3
"""What a host stream costs a call: the same all-reduce blocking (NULL stream) and through a
tutti host stream with each call waited for (enqueue + tuttiStreamSynchronize per call:
all_reduce_perf --memory host-stream --sync_each 1), and enqueued back to back with one
synchronise per timed loop (--memory host-stream), in interleaved rounds of one run, at 8 B,
1 MiB and 64 MiB. Prints the median time per call of each (out of place, the slowest rank)
and the ratios to blocking.

  tools/stream-overhead.py [--build build] [--np 2] [--rounds 5]
"""
import argparse
import os
import statistics
import subprocess
import sys

SIZES = [(8, 4000, 200), (1 << 20, 200, 20), (64 << 20, 6, 2)]  # bytes, iters, warm-up
MODES = [("blocking", []), ("stream, sync each", ["--memory", "host-stream", "--sync_each", "1"]),
         ("stream, sync per loop", ["--memory", "host-stream"])]


def time_us(build, np, size, iters, warmup, extra):
    cmd = [os.path.join(build, "tools", "tuttirun", "tuttirun"), "-np", str(np),
           os.path.join(build, "perf_tests", "all_reduce_perf"), "-b", str(size), "-e",
           str(size), "-n", str(iters), "-w", str(warmup), "-a", "3", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    for line in out.stdout.splitlines():
        f = line.split()
        if f and f[0] == str(size):
            return float(f[5])
    sys.exit(f"no result row in:\n{out.stdout}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    times = {}
    for _ in range(a.rounds):
        for size, iters, warmup in SIZES:
            for name, extra in MODES:
                times.setdefault((size, name), []).append(
                    time_us(a.build, a.np, size, iters, warmup, extra))
    print(f"# {a.np} ranks, median of {a.rounds} interleaved rounds, time per call (us), "
          "out of place, slowest rank (-a 3)")
    print("| bytes | " + " | ".join(n for n, _ in MODES) + " | " +
          " | ".join(f"{n} / blocking" for n, _ in MODES[1:]) + " |")
    print("|---" * (2 * len(MODES)) + "|")
    for size, _, _ in SIZES:
        med = [statistics.median(times[size, n]) for n, _ in MODES]
        print(f"| {size} | " + " | ".join(f"{m:.2f}" for m in med) + " | " +
              " | ".join(f"{m / med[0]:.2f}" for m in med[1:]) + " |")


if __name__ == "__main__":
    main()
