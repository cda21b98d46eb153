#!/usr/bin/env python3
"""Hierarchical vs flat all-gather, reduce-scatter and all-to-all across network-namespace hosts.

    tools/hier-netns-bench.py [--build build] [--layouts 4x2,2x4] [--colls allgather,...]
                              [--rate-gbit 1] [-b 4K] [-e 64M] [-n 5] [--reps 1] [--md FILE]
                              [--tuning FILE] [--warm N]

For each layout H x L (H hosts of tools/netns-cluster.sh, egress shaped to --rate-gbit with tbf,
L ranks each, ranks interleaved: rank r on host r % H) and each collective, one perf-test run
with `-A all` times every algorithm and the automatic choice at every size (sizes are the
nccl-tests size column: each rank's whole buffer), checked (-c 1). Printed per size: the best
flat algorithm, hier, hier / best flat, what auto chose and its time, the line-rate bound (the
bytes that must cross each host's link: (n - L) / n x size for all-gather and reduce-scatter,
L x (n - L) / n x size for all-to-all(-v), divided by the rate) with hier's and the best
algorithm's share of it, and tutti-sim's prediction for hier and for the best flat algorithm
(`tutti-sim --hosts H --ranks n --interleave --net-gbps rate`, its per-message latency fitted to the best
flat algorithm's time at the smallest size: see fitted_sim) with its error. --reps > 1 runs everything
again and takes the median time per cell. --tuning FILE gives the ranks and tutti-sim a cost
model (TUTTI_TUNING_FILE): the tbf shaping is invisible to the topology, so without one the
automatic choice prices the veth at the built-in tcp speed. Online refinement (docs/tuning.md)
explores inside the automatic column's own calls unless --warm N first settles it in an
automatic-only run of N calls per size (a tuning cache kept for the layout and collective).
Needs root (network namespaces).
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PERF = {"allgather": "all_gather_perf", "reducescatter": "reduce_scatter_perf",
        "alltoall": "alltoall_perf", "alltoallv": "alltoallv_perf"}


def run_perf(args, coll, hosts, per_host, warm_up=False):
    """One -A all run (warm_up: an automatic-only run of --warm iterations per size first fills
    the tuning cache, which the -A all run then reads)."""
    n = hosts * per_host
    host_list = ",".join(f"tutti-h{r % hosts}:1" for r in range(n))
    with tempfile.NamedTemporaryFile(suffix=".csv", delete=False) as f:
        path = f.name
    env = [f"TUTTI_TUNING_CACHE={args.cache_dir}"]
    if args.tuning:
        env.append(f"TUTTI_TUNING_FILE={args.tuning}")
    algos = ["-n", str(args.warm), "-w", "0"] if warm_up else [
        "-n", str(args.n), "-w", "1", "-A", "all"]
    cmd = [os.path.join(args.build, "tools/tuttirun/tuttirun"), "-np", str(n), "--hosts",
           host_list, "--timeout", "900"] + [x for e in env for x in ("-x", e)] + [
           os.path.join(args.build, "perf_tests", PERF[coll]),
           "-b", args.b, "-e", args.e, "-f", "4", "-c", "1", "--csv", path] + algos
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    rows = list(csv.DictReader(open(path)))
    os.unlink(path)
    times = {}  # (size, algo) -> (time_us, used); out-of-place rows only
    for r in rows:
        if r["placement"] != "out-of-place" or not r["time_us"]:
            continue
        if r["wrong"] not in ("", "0"):
            sys.exit(f"{coll} {r['algo_requested']} wrong at {r['size']} B: {r['wrong']}")
        times[(int(r["size"]), r["algo_requested"])] = (float(r["time_us"]), r["algo_used"])
    if warm_up:
        return run_perf(args, coll, hosts, per_host)
    return times


def run_sim(args, coll, hosts, n, extra_latency_us=0.0):
    cmd = [os.path.join(args.build, "tools/tutti-sim/tutti-sim"), "--coll", coll, "--hosts",
           str(hosts), "--ranks", str(n), "--net-gbps", str(args.rate_gbit), "-b", args.b, "-e",
           args.e, "-f", "4", "--csv", "--interleave", "--net-latency-us", str(extra_latency_us)]
    if args.tuning:
        cmd += ["--tuning", args.tuning]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return {(int(r["size"]), r["algo"]): float(r["time_us"])
            for r in csv.DictReader(out.splitlines())}


def fitted_sim(args, coll, hosts, n, times):
    """tutti-sim with its per-message network latency fitted to one measurement: the best flat
    algorithm at the smallest size (here 8 ranks share 2 cores, so a message waits for its
    receiver to be scheduled: far more than the built-in tcp alpha). Everything else predicted.
    """
    s0 = min(s for s, _ in times)
    flat = {a: t for (s, a), (t, _) in times.items() if s == s0 and a not in ("auto", "hier")}
    best = min(flat, key=flat.get)
    base, probe = run_sim(args, coll, hosts, n), run_sim(args, coll, hosts, n, 100.0)
    per_us = (probe[(s0, best)] - base[(s0, best)]) / 100.0  # messages on the critical path
    extra = max(0.0, (flat[best] - base[(s0, best)]) / per_us) if per_us > 0 else 0.0
    print(f"# {coll}: tutti-sim latency fitted on {best} at {s0} B: +{extra:.0f} us per message",
          flush=True)
    return run_sim(args, coll, hosts, n, extra)


def bound_us(coll, size, n, per_host, rate_gbit):
    crossing = (n - per_host) / n * size * (per_host if coll.startswith("alltoall") else 1)
    return crossing / (rate_gbit * 1e9 / 8) * 1e6


def report(args, coll, hosts, per_host, reps, sim, md):
    n = hosts * per_host
    sizes = sorted({s for s, _ in reps[0]})
    algos = sorted({a for _, a in reps[0]} - {"auto"})
    flat = [a for a in algos if a != "hier"]
    title = (f"{coll}, {hosts} hosts x {per_host} ranks (interleaved), {args.rate_gbit} Gbit/s "
             f"per host, time in us (median of {len(reps)} run(s), each the mean of -n {args.n}; "
             + (f"auto warm after {args.warm} calls per size)" if args.warm else "auto cold)"))
    head = ("| size | best flat | flat us | hier us | hier/flat speed-up | auto (chose) | "
            "bound us | hier % of bound | best % of bound | sim flat us (err) | sim hier us (err) |")
    lines = [f"\n{title}\n", head, "|" + "---|" * (head.count("|") - 1)]
    for s in sizes:
        med = {}
        for a in algos + ["auto"]:
            vals = [r[(s, a)][0] for r in reps if (s, a) in r]
            if vals:
                med[a] = statistics.median(vals)
        used = reps[0].get((s, "auto"), (0, "?"))[1]
        best_flat = min(flat, key=lambda a: med.get(a, float("inf")))
        hier, fl = med.get("hier"), med.get(best_flat)
        bnd = bound_us(coll, s, n, per_host, args.rate_gbit)
        best = min(hier, fl)

        def err(pred, meas):
            return f"{pred:.0f} ({(pred - meas) / meas * 100:+.0f}%)" if pred else "-"
        lines.append(
            f"| {s} | {best_flat} | {fl:.0f} | {hier:.0f} | {fl / hier:.2f} | "
            f"{med.get('auto', 0):.0f} ({used}) | {bnd:.0f} | {bnd / hier * 100:.0f} | "
            f"{bnd / best * 100:.0f} | {err(sim.get((s, best_flat)), fl)} | "
            f"{err(sim.get((s, 'hier')), hier)} |")
    text = "\n".join(lines)
    print(text, flush=True)
    if md:
        md.write(text + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--layouts", default="4x2,2x4")
    p.add_argument("--colls", default="allgather,reducescatter,alltoall")
    p.add_argument("--rate-gbit", type=float, default=1.0)
    p.add_argument("-b", default="4K")
    p.add_argument("-e", default="64M")
    p.add_argument("-n", type=int, default=5)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--md", help="also append the tables (markdown) to this file")
    p.add_argument("--warm", type=int, default=0,
                   help="before each -A all run, an automatic-only run of this many iterations "
                   "per size fills a tuning cache (online refinement settles its choices) that "
                   "the -A all run then reads: auto is the warm choice. 0 (default): no cache, "
                   "auto explores inside its own timed calls (cold)")
    p.add_argument("--tuning", help="cost model file for the ranks (TUTTI_TUNING_FILE) and "
                   "tutti-sim: the automatic choice then knows the shaped links' speed")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    md = open(args.md, "a") if args.md else None
    cluster = os.path.join(HERE, "netns-cluster.sh")
    rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    if args.tuning:
        args.tuning = os.path.abspath(args.tuning)
    print(f"# tools/hier-netns-bench.py {' '.join(sys.argv[1:])} at {rev}, "
          f"{os.cpu_count()} cores", flush=True)
    args.cache_dir = "off"
    try:
        for layout in args.layouts.split(","):
            hosts, per_host = (int(x) for x in layout.split("x"))
            subprocess.run([cluster, "up", str(hosts), "--rate", f"{args.rate_gbit:g}gbit"],
                           check=True, capture_output=True)
            for coll in args.colls.split(","):
                with tempfile.TemporaryDirectory(prefix="tutti-tune-") as cache:
                    args.cache_dir = cache if args.warm > 0 else "off"
                    reps = [run_perf(args, coll, hosts, per_host, args.warm > 0 and i == 0)
                            for i in range(args.reps)]
                sim = fitted_sim(args, coll, hosts, hosts * per_host, reps[0])
                report(args, coll, hosts, per_host, reps, sim, md)
    finally:
        subprocess.run([cluster, "down"], capture_output=True)


if __name__ == "__main__":
    main()
