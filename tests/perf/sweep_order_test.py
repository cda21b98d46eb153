#!/usr/bin/env python3
"""The perf test's -A sweep runs its columns in the order asked, auto last, and with --alternate 1
every other -N cycle in reverse (auto first), while the table keeps its columns in one order.
The order is read from what the library executed (the EXEC trace of rank 0), not from the
table: each column's calls are the synchronising call and the timed ones, so consecutive
executions of one algorithm are one column.

  sweep_order_test.py TUTTIRUN ALL_REDUCE_PERF
"""
import os
import re
import subprocess
import sys


def executed_order(tuttirun, perf, alternate):
    """Rank 0's algorithms for the 1 KiB float sums, consecutive repeats folded, and the table's
    data rows."""
    env = dict(os.environ, TUTTI_TUNING_CACHE="off", TUTTI_TUNE="0", TUTTI_DEBUG="TRACE",
               TUTTI_DEBUG_SUBSYS="EXEC")
    env.pop("TUTTI_ALGO", None)
    cmd = [tuttirun, "-np", "2", perf, "-b", "1K", "-e", "1K", "-A", "ring,tree", "-c", "1",
           "-w", "0", "-n", "2", "-N", "3", "--alternate", str(alternate)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    order = []
    for line in (p.stdout + p.stderr).splitlines():
        m = re.search(r":0 tutti TRACE EXEC executed (?:window program )?(\w+) \(float sum\).*"
                      r"\(1024 B", line)
        if m and (not order or order[-1] != m.group(1)):
            order.append(m.group(1))
    header = [l for l in p.stdout.splitlines() if l.startswith("#") and "auto-algo" in l]
    rows = [l.split() for l in p.stdout.splitlines() if re.match(r"\s+1024\s", l)]
    return order, header, rows


def main():
    tuttirun, perf = sys.argv[1:3]
    failures = []
    for alternate, want in ((0, ["ring", "tree", "direct"] * 3),
                            (1, ["ring", "tree", "direct", "tree", "ring", "tree", "direct"])):
        order, header, rows = executed_order(tuttirun, perf, alternate)
        # alternate: cycle 1 runs direct (auto), tree, ring; so direct of cycle 0 and 1 fold into
        # one, as do ring of cycle 1 and 2.
        if order != want:
            failures.append(f"--alternate {alternate}: executed {order}, expected {want}")
        if len(header) != 1 or header[0].split()[6:10] != ["ring", "tree", "auto", "auto-algo"]:
            failures.append(f"--alternate {alternate}: header {header}")
        if len(rows) != 3 or any(r[8:10] != ["direct", "0"] for r in rows):
            failures.append(f"--alternate {alternate}: rows {rows} (3 cycles, auto direct, 0 wrong)")
        print(f"--alternate {alternate}: executed {' '.join(order)}; {len(rows)} rows")
    if failures:
        sys.exit("FAIL:\n" + "\n".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
