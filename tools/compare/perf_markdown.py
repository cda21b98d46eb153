#!/usr/bin/env python3
"""Markdown tables from the files tools/perf-report.sh writes (docs/perf by default).

  tools/compare/perf_markdown.py [docs/perf] > tables.md

For each allreduce_np<N>.txt (compare.py output): busbw and time per call of tutti, Open MPI
and Gloo with the ratios and tutti's share of the memory ceiling; for each
allreduce_algos_np<N>.txt (all_reduce_perf -A all): busbw per algorithm and the automatic
choice; for the other collectives (<coll>_np4.txt): busbw per algorithm. Standard library only.
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nccl_table  # noqa: E402


def human(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return "%d %s" % (n // f, unit)
    return "%d B" % n


NAMES = {"tutti": "tutti", "mpi": "MPI", "gloo": "Gloo ring", "gloo-hd": "Gloo hd",
         "gloo-bcube": "Gloo bcube"}


def compare_tables(path):
    """The busbw and time tables of one compare.py output, columns named by its header."""
    busbw, times, ceiling = [], {}, ""
    systems, mode = [], None
    for ln in open(path).read().splitlines():
        if ln.startswith("# all-reduce"):
            mode = "bw"
            continue
        if ln.startswith("# median time"):
            mode = "t"
            continue
        if ln.startswith("# memory ceiling"):
            ceiling = ln[2:]
            continue
        toks = ln.split()
        if mode == "bw" and toks and toks[0] == "size(B)":
            systems = []
            for t in toks[1:]:  # the system names, up to the ratio columns / the label
                if "/" in t or t == "#":
                    break
                systems.append(t)
            continue
        if ln.startswith("#") or not toks or not toks[0].isdigit():
            continue
        if mode == "bw":
            busbw.append(toks)
        else:
            times[toks[0]] = toks
    others = [n for n in systems if n != "tutti"]
    head = (["size"] + [NAMES.get(n, n) for n in systems] +
            ["tutti/" + NAMES.get(n, n) for n in others] + ["tutti % of ceiling"] +
            ["time %s (us)" % NAMES.get(n, n) for n in systems])
    out = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    k = len(systems)
    for r in busbw:
        t = times.get(r[0], [])
        cells = ([human(int(r[0]))] + r[1:1 + k] + r[1 + k:1 + k + len(others)] +
                 [r[1 + k + len(others)] if len(r) > 1 + k + len(others) else "-"] +
                 [t[1 + i] if len(t) > 1 + i else "" for i in range(k)])
        out.append("| " + " | ".join(cells) + " |")
    if ceiling:
        out.append("")
        out.append(ceiling.replace("memory ceiling:", "Memory ceiling of this run:"))
    return "\n".join(out)


def medians(csv_path):
    """{system: {size: (busbw, time_us)}} of the median rows of a compare.py CSV."""
    out = {}
    for ln in open(csv_path).read().splitlines()[1:]:
        f = ln.split(",")
        if len(f) == 5 and f[1] == "median":
            out.setdefault(f[0], {})[int(f[2])] = (float(f[3]), float(f[4]))
    return out


def ceiling_shares(txt_path):
    """{size: tutti % of the memory ceiling} from a compare.py table."""
    shares = {}
    mode = None
    for ln in open(txt_path).read().splitlines():
        if ln.startswith("# all-reduce"):
            mode = "bw"
        elif ln.startswith("# median time"):
            mode = None
        toks = ln.split()
        if mode == "bw" and toks and toks[0].isdigit() and toks[-1].endswith("%"):
            shares[int(toks[0])] = toks[-1]
    return shares


def span(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt % lo if fmt % lo == fmt % hi else (fmt % lo) + "-" + (fmt % hi)


def headline(d):
    """The headline table of tables.md from d/allreduce_np<N>.{csv,txt}: time per
    call at 8-256 B, tutti/MPI by time at 512 B - 32 KiB, by busbw above, tutti/Gloo over all
    sizes, tutti's share of the memory ceiling from 16 MiB."""
    head = ("| ranks | 8 - 256 B (us per call) | 512 B - 32 KiB (tutti/MPI) | 64 KiB - 1 MiB "
            "| 4 - 256 MiB | tutti / Gloo ring, hd | % of memory ceiling (>= 16 MiB) |")
    out = [head, "|---|---|---|---|---|---|---|"]
    for n, txt in by_rank_count(d, "allreduce_np"):
        csv = txt[:-4] + ".csv"
        if not os.path.exists(csv):
            continue
        m = medians(csv)
        tutti, mpi = m.get("tutti", {}), m.get("mpi", {})
        sizes = sorted(tutti)

        def ratio_time(lo, hi):
            return [mpi[z][1] / tutti[z][1] for z in sizes
                    if lo <= z <= hi and z in mpi and tutti[z][1] > 0]

        def ratio_bw(other, lo, hi):
            o = m.get(other, {})
            return [tutti[z][0] / o[z][0] for z in sizes
                    if lo <= z <= hi and z in o and o[z][0] > 0]

        small_t = [tutti[z][1] for z in sizes if z <= 256]
        small_m = [mpi[z][1] for z in sizes if z <= 256 and z in mpi]
        shares = ceiling_shares(txt)
        ceil = [float(shares[z][:-1]) for z in sizes if z >= 16 << 20 and z in shares]
        out.append("| %d | %s vs MPI %s | %sx | %sx | %sx | %s, %s | %s |" % (
            n, span(small_t, "%.2f"), span(small_m, "%.2f"),
            span(ratio_time(512, 32 << 10), "%.1f"), span(ratio_bw("mpi", 64 << 10, 1 << 20), "%.1f"),
            span(ratio_bw("mpi", 4 << 20, 256 << 20), "%.1f"),
            span(ratio_bw("gloo", 0, 1 << 40), "%.1f") + "x",
            span(ratio_bw("gloo-hd", 0, 1 << 40), "%.1f") + "x",
            span(ceil, "%.0f") + "%"))
    return "\n".join(out)


def sweep_table(path):
    text = open(path).read()
    header = None
    rows = []
    for ln in text.splitlines():
        if ln.startswith("#") and "size" in ln and "auto-algo" in ln:
            header = ln[1:].split()
        elif not ln.startswith("#") and ln.strip() and ln.split()[0].isdigit():
            rows.append(ln.split())
    if not header:
        return "(no -A all table in %s)" % os.path.basename(path)
    algos = header[5:header.index("auto")]
    out = ["| size | " + " | ".join(algos) + " | auto | auto picked |",
           "|---:|" + "---:|" * len(algos) + "---:|---|"]
    for r in rows:
        vals = r[5:5 + len(algos) + 1]
        best = max((float(v) for v in vals[:-1] if v not in ("n/a", "-")), default=0.0)
        cells = []
        for v in vals[:-1]:
            cells.append("**%s**" % v if v not in ("n/a", "-") and best > 0 and
                         float(v) == best else v)
        out.append("| %s | %s | %s | %s |" % (human(int(r[0])), " | ".join(cells), vals[-1],
                                               r[5 + len(algos) + 1]))
    return "\n".join(out)


def plain_table(path):
    text = open(path).read()
    if "auto-algo" in text:
        return sweep_table(path)
    t = nccl_table.parse(text, 2)
    out = ["| size | time (us) | busbw (GB/s) |", "|---:|---:|---:|"]
    for r in t.rows:
        out.append("| %s | %s | %s |" % (human(r["size"]), r["oop"]["time"], r["oop"]["busbw"]))
    return "\n".join(out)


def by_rank_count(d, prefix):
    """(n, path) of d/<prefix><n>.txt, by rank count."""
    files = glob.glob(os.path.join(d, prefix + "*.txt"))
    pairs = [(int(re.findall(r"np(\d+)", f)[-1]), f) for f in files]
    return sorted(p for p in pairs if os.path.basename(p[1]) == "%s%d.txt" % (prefix, p[0]))


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "docs/perf"
    print("### Headline (medians; ratios > 1: tutti faster)\n")
    print(headline(d))
    print()
    for n, f in by_rank_count(d, "allreduce_np"):
        print("### All-reduce, %s ranks: tutti vs Open MPI vs Gloo (busbw GB/s)\n" % n)
        print(compare_tables(f))
        # tables.md lies beside the plots (perf-report.sh writes both into one directory).
        print("\n![all-reduce %s ranks](allreduce_np%s.png)\n" % (n, n))
    for n, f in by_rank_count(d, "allreduce_64K_256M_np"):
        print("### All-reduce 64 KiB - 256 MiB, %s ranks (a separate run, `-n 5 -w 1`)\n" % n)
        print(compare_tables(f))
        print()
    for n, f in by_rank_count(d, "allreduce_algos_np"):
        print("### All-reduce algorithms, %s ranks (`-A all`, busbw GB/s, best in bold)\n" % n)
        print(sweep_table(f))
        print()
    for coll in ("all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"):
        f = os.path.join(d, "%s_np4.txt" % coll)
        if os.path.exists(f):
            print("### %s, 4 ranks (busbw GB/s)\n" % coll)
            print(plain_table(f))
            print()
    f = os.path.join(d, "sendrecv_np2.txt")
    if os.path.exists(f):
        print("### sendrecv, 2 ranks (each rank sends to and receives from the other)\n")
        print(plain_table(f))
        print()


if __name__ == "__main__":
    main()
