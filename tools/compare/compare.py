#!/usr/bin/env python3
"""Side-by-side all-reduce bandwidth: tutti vs Open MPI vs Gloo, interleaved.

Runs, for R repetitions, in the order A B C A B C ...:
  A  tuttirun -np N all_reduce_perf            (tutti; -A ALGO to force an algorithm)
  B  mpirun --allow-run-as-root --oversubscribe -np N mpi_allreduce_perf   (MPI_Allreduce)
  C  N x gloo_allreduce_perf -R r -S N -F <fresh store dir> -A ALGO        (Gloo tcp loopback)
     once per Gloo algorithm of --gloo-algo (default ring and halving-doubling: "gloo" and
     "gloo-hd" in the tables)
with the same sizes, float32 sum, and prints per size the median out-of-place busbw of each,
the ratios tutti/MPI and tutti/Gloo, then the median time per call (us) of each, and optionally
CSV (--csv) and a plot (--plot, gnuplot or python3-matplotlib). Interleaving spreads the noise
of a shared machine over all three. A one-size tutti run with --limit 1 before each tutti
repetition measures single-thread memcpy bandwidth B (GB/s) (inside the sweep, that second of
copying stalled the first sizes); the table adds the memory-traffic ceiling of a host
all-reduce, 2(n-1)/n * B_rw / (2n) with B_rw = 2B (every input read once, every output written
once), and tutti's busbw as a percentage of it.
With --small-max S, every run is two invocations of the same binary: sizes up to S with
--small-n/--small-w iterations (enough calls for microsecond latencies), the rest with -n/-w
(few calls for the large sizes), so one sweep covers 8 B to 256 MiB in reasonable time; Gloo's
small sizes take milliseconds a call and run --gloo-small-n times; --large-f thins the large
sizes (e.g. factor 2 up to 32 KiB, 4 above).
Standard library only.

  tools/compare/compare.py --build build -np 4 -b 8 -e 64M -f 4 --reps 5 --csv cmp.csv
  tools/compare/compare.py --build build -np 4 -b 8 -e 256M -f 2 -n 5 -w 1 \
      --small-max 32K --small-n 1000 --small-w 100 --large-f 4 --reps 3
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nccl_table  # noqa: E402


def find(build, names):
    for n in names:
        p = os.path.join(build, n)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def run_tutti(a, sizes):
    cmd = [a.tuttirun, "-np", str(a.np), a.tutti_bin] + sizes
    if a.algo:
        cmd += ["-A", a.algo]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=a.timeout).stdout.decode(errors="replace")


def tutti_ceiling(a):
    """Single-thread memcpy GB/s from a one-size tutti run with --limit 1 (in a run of its own:
    inside a sweep, the second of copying on one core stalled the first sizes by 10-30 ms per
    1000 calls on a 2-core VM)."""
    text = run_tutti(a, ["--limit", "1", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "-c", "0"])
    for line in text.splitlines():
        if line.startswith("# Ceiling:"):
            try:
                return float(line.split()[2])
            except (IndexError, ValueError):
                pass
    return None


def run_mpi(a, sizes):
    cmd = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(a.np), a.mpi_bin] + sizes
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=a.timeout).stdout.decode(errors="replace")


def run_gloo(a, sizes, algo):
    store = tempfile.mkdtemp(prefix="tutti-gloo-")
    try:
        procs = [subprocess.Popen([a.gloo_bin, "-R", str(r), "-S", str(a.np), "-F", store,
                                   "-A", algo] + sizes,
                                  stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
                                  stderr=subprocess.STDOUT) for r in range(a.np)]
        out = procs[0].communicate(timeout=a.timeout)[0].decode(errors="replace")
        for p in procs[1:]:
            p.wait(timeout=a.timeout)
        return out
    finally:
        shutil.rmtree(store, ignore_errors=True)


def parse_bytes(text):
    """nccl-tests size syntax: 8, 64K, 256M, 1G (powers of 1024)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def sweeps(a, system):
    """The perf binaries' argument lists of one run: one sweep, or small + large sizes (Gloo,
    whose small calls take milliseconds, with --gloo-small-n of them; the large sizes with
    factor --large-f when given)."""
    full = ["-b", a.b, "-e", a.e, "-f", a.f, "-n", a.n, "-w", a.w]
    if not a.small_max:
        return [full]
    lo, hi, f, cut = parse_bytes(a.b), parse_bytes(a.e), int(a.f), parse_bytes(a.small_max)
    size = lo
    while size <= cut and size <= hi:
        size *= f
    gloo = system.startswith("gloo")
    out = []
    if lo <= cut:
        out.append(["-b", str(lo), "-e", str(min(cut, hi)), "-f", a.f,
                    "-n", a.gloo_small_n if gloo else a.small_n,
                    "-w", a.gloo_small_w if gloo else a.small_w])
    if size <= hi:
        out.append(["-b", str(size), "-e", a.e, "-f", a.large_f or a.f, "-n", a.n, "-w", a.w])
    return out


def measures_by_size(text, name):
    """{size: (busbw GB/s, time us)} of the out-of-place column."""
    t = nccl_table.parse(text)
    if not t.ok() or not t.rows:
        sys.stderr.write("%s: unexpected output:\n%s\n" % (name, text[-2000:]))
        return {}
    if nccl_table.wrong_total(t):
        sys.stderr.write("%s: WRONG RESULTS reported\n" % name)
    return {r["size"]: (r["oop"]["busbw"], r["oop"]["time"]) for r in t.rows}


def plot(path, sizes, med, systems, floor=None, title=""):
    data = path + ".dat"
    with open(data, "w") as f:
        for s in sizes:
            f.write("%d %s\n" % (s, " ".join("%g" % (med[n].get(s) or 0) for n in systems)))
    if shutil.which("gnuplot"):
        cols = ", ".join("'%s' using 1:%d with linespoints title '%s'" % (data, i + 2, n)
                         for i, n in enumerate(systems))
        if floor:
            cols += ", %g with lines dashtype 2 lc rgb 'gray' title 'memory ceiling'" % floor
        script = ("set terminal png size 900,600; set output '%s'; set logscale x 2; "
                  "set format x '%%.0s%%cB'; set title '%s'; "
                  "set xlabel 'message size'; set ylabel 'busbw (GB/s)'; set key left top; "
                  "plot %s" % (path, title.replace("'", ""), cols))
        subprocess.run(["gnuplot", "-e", script], check=True)
        return "gnuplot"
    try:
        import matplotlib  # noqa: F401
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stderr.write("--plot: neither gnuplot nor python3-matplotlib is installed "
                         "(apt-get install gnuplot-nox); data left in %s\n" % data)
        return None
    for n in systems:
        plt.plot(sizes, [med[n].get(s) or 0 for s in sizes], marker="o", label=n)
    if floor:
        plt.axhline(floor, linestyle="--", color="gray", label="memory ceiling")
    plt.title(title)
    plt.xscale("log", base=2)
    plt.xlabel("size (B)")
    plt.ylabel("busbw (GB/s)")
    plt.legend()
    plt.savefig(path, dpi=100)
    return "matplotlib"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default="build", help="CMake build directory")
    ap.add_argument("-np", "--np", type=int, default=4)
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-f", default="4")
    ap.add_argument("-n", default="20", help="iterations per size")
    ap.add_argument("-w", default="5", help="warm-up iterations")
    ap.add_argument("--reps", type=int, default=3, help="repetitions R (medians over R)")
    ap.add_argument("-A", "--algo", default="", help="tutti algorithm (default automatic)")
    ap.add_argument("--gloo-algo", default="ring,hd",
                    help="Gloo algorithms, comma-separated: ring, bcube, hd (halving-doubling)")
    ap.add_argument("--small-max", default="", help="sizes up to this run with --small-n/-w")
    ap.add_argument("--small-n", default="1000")
    ap.add_argument("--small-w", default="50")
    ap.add_argument("--gloo-small-n", default="50", help="Gloo's iterations for the small sizes")
    ap.add_argument("--gloo-small-w", default="5")
    ap.add_argument("--large-f", default="", help="size factor above --small-max (default -f)")
    ap.add_argument("--only", default="tutti,mpi,gloo", help="systems to run")
    ap.add_argument("--csv", default="", help="write per-repetition and median rows here")
    ap.add_argument("--plot", default="", help="PNG of the median busbw (gnuplot or matplotlib)")
    ap.add_argument("--timeout", type=float, default=1800)
    a = ap.parse_args()

    pt = os.path.join(a.build, "perf_tests")
    a.tutti_bin = find(pt, ["all_reduce_perf"])
    a.tuttirun = find(os.path.join(a.build, "tools", "tuttirun"), ["tuttirun"])
    a.mpi_bin = find(pt, ["mpi_allreduce_perf"])
    a.gloo_bin = find(pt, ["gloo_allreduce_perf"])
    a.mpirun = shutil.which("mpirun")
    gloo_algos = [g for g in a.gloo_algo.split(",") if g]
    for g in gloo_algos:
        if g not in ("ring", "bcube", "hd"):
            ap.error("unknown Gloo algorithm %r (ring, bcube, hd)" % g)
    runners = {"tutti": (run_tutti, a.tutti_bin and a.tuttirun),
               "mpi": (run_mpi, a.mpi_bin and a.mpirun)}
    for g in gloo_algos:  # "gloo" is Gloo's ring; "gloo-hd", "gloo-bcube" the others
        runners["gloo" if g == "ring" else "gloo-" + g] = (
            lambda a, sizes, g=g: run_gloo(a, sizes, g), a.gloo_bin)
    systems = []
    for name in a.only.split(","):
        names = [k for k in runners if k.startswith("gloo")] if name == "gloo" else [name]
        if name != "gloo" and name not in runners:
            ap.error("unknown system %r" % name)
        for k in names:
            if not runners[k][1]:
                sys.stderr.write("skipping %s: binary not built in %s\n" % (k, a.build))
                continue
            systems.append(k)
    if not systems:
        return 1
    runs = {n: [] for n in systems}
    ceilings = []
    for rep in range(a.reps):
        for n in systems:  # interleaved: A B C A B C ...
            sys.stderr.write("rep %d/%d: %s\n" % (rep + 1, a.reps, n))
            if n == "tutti":  # once per repetition, before the sweep
                ceiling = tutti_ceiling(a)
                if ceiling:
                    ceilings.append(ceiling)
            by_size = {}
            for sizes in sweeps(a, n):
                by_size.update(measures_by_size(runners[n][0](a, sizes), n))
            runs[n].append(by_size)
    all_sizes = sorted({s for n in systems for r in runs[n] for s in r})

    def median_of(n, k):
        return {s: statistics.median([r[s][k] for r in runs[n] if r.get(s) is not None])
                for s in all_sizes if any(r.get(s) is not None for r in runs[n])}
    med = {n: median_of(n, 0) for n in systems}
    tmed = {n: median_of(n, 1) for n in systems}
    memcpy = statistics.median(ceilings) if ceilings else None
    floor = 2.0 * (a.np - 1) / a.np * (2.0 * memcpy) / (2.0 * a.np) if memcpy else None

    label = "tutti" + (" -A " + a.algo if a.algo else "")
    print("# all-reduce float32 sum, %d ranks, out-of-place busbw (GB/s), median of %d "
          "interleaved runs; gloo algorithms %s" % (a.np, a.reps, a.gloo_algo))
    head = "%12s" % "size(B)" + "".join("%10s" % n for n in systems)
    if "tutti" in systems:
        head += "".join("%15s" % ("tutti/" + n) for n in systems if n != "tutti")
    if floor:
        head += "%12s" % "tutti/ceil"
    print(head + ("   # " + label if "tutti" in systems else ""))
    for s in all_sizes:
        line = "%12d" % s + "".join("%10.3f" % med[n].get(s, float("nan")) for n in systems)
        if "tutti" in systems:
            for n in systems:
                if n == "tutti":
                    continue
                b, t = med[n].get(s), med["tutti"].get(s)
                line += "%15s" % ("%.2f" % (t / b) if b and t is not None else "-")
        if floor and "tutti" in systems and med["tutti"].get(s) is not None:
            line += "%11.0f%%" % (100.0 * med["tutti"][s] / floor)
        print(line)
    if floor:
        print("# memory ceiling: single-thread memcpy %.2f GB/s (median of the tutti runs), "
              "B_rw = %.2f GB/s -> all-reduce busbw ceiling 2(n-1)/n * B_rw/(2n) = %.3f GB/s"
              % (memcpy, 2 * memcpy, floor))
    print("# median time per call (us), out-of-place")
    print("%12s" % "size(B)" + "".join("%10s" % n for n in systems) +
          "".join("%15s" % ("tutti/" + n) for n in systems if n != "tutti" and "tutti" in systems))
    for s in all_sizes:
        line = "%12d" % s + "".join("%10.1f" % tmed[n].get(s, float("nan")) for n in systems)
        if "tutti" in systems:
            for n in systems:
                if n == "tutti":
                    continue
                b, t = tmed[n].get(s), tmed["tutti"].get(s)
                line += "%15s" % ("%.2f" % (t / b) if b and t is not None else "-")
        print(line)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("system,rep,size,busbw_GBps,time_us\n")
            for n in systems:
                for i, r in enumerate(runs[n]):
                    for s in sorted(r):
                        f.write("%s,%d,%d,%.6f,%.3f\n" % (n, i, s, r[s][0], r[s][1]))
                for s in sorted(med[n]):
                    f.write("%s,median,%d,%.6f,%.3f\n" % (n, s, med[n][s], tmed[n][s]))
        print("# CSV written to %s" % a.csv)
    if a.plot:
        how = plot(a.plot, all_sizes, med, systems, floor,
                   "all-reduce float32 sum, %d ranks (median busbw of %d interleaved runs)"
                   % (a.np, a.reps))
        if how:
            print("# plot written to %s (%s)" % (a.plot, how))
    return 0


if __name__ == "__main__":
    sys.exit(main())
