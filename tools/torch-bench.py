#!/usr/bin/env python3
"""torch.distributed on tutti vs gloo, measured side by side in one job (docs/pytorch.md):
all_reduce float32 at 8 B, 1 KiB, 1 MiB and 25 MiB; the backend's overhead over the raw C
call (tuttiAllReduce on the same communicator, same tensor); and the DDP step time of an MLP
with ~16 MB of gradients. Every figure is the median of --reps interleaved repetitions.

    tools/torch-bench.py [--ranks 2,4] [--reps 5] [--out FILE.md] [--plot FILE.png]

Runs each rank count under tuttirun (which sets torch's launch variables).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worker(reps):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    import tutti.torch
    from tutti.torch import _C

    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    groups = {"gloo": dist.group.WORLD, "tutti": dist.new_group(list(range(n)), backend="tutti")}
    sizes = {"8 B": 2, "1 KiB": 256, "1 MiB": 1 << 18, "25 MiB": 25 << 18}
    iters = {"8 B": 2000, "1 KiB": 1000, "1 MiB": 100, "25 MiB": 10}
    gloo_iters = {"8 B": 200, "1 KiB": 200, "1 MiB": 30, "25 MiB": 5}
    res = {}

    def timed(fn, count):
        dist.barrier(group=groups["gloo"])
        t = time.perf_counter()
        for _ in range(count):
            fn()
        return (time.perf_counter() - t) / count * 1e6  # us per call

    for _ in range(reps):
        for label, elems in sizes.items():
            x = torch.ones(elems)
            cases = {
                "gloo": (lambda: dist.all_reduce(x, group=groups["gloo"]), gloo_iters[label]),
                "tutti": (lambda: dist.all_reduce(x, group=groups["tutti"]), iters[label]),
                "tutti raw C": (lambda: _C.raw_allreduce(groups["tutti"], x), iters[label]),
                "tutti pg.allreduce": (lambda: groups["tutti"].allreduce([x]).wait(), iters[label]),
            }
            for name, (fn, count) in cases.items():
                fn()  # warm-up
                us = timed(fn, count)
                # the slowest rank's time is the collective's time
                t = torch.tensor([us], dtype=torch.float64)
                dist.all_reduce(t, op=dist.ReduceOp.MAX, group=groups["gloo"])
                res.setdefault(f"allreduce {label} {name}", []).append(t.item())

    torch.manual_seed(0)
    for name in ("local (no communication)", "gloo", "tutti"):
        model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 1024), nn.ReLU(),
                              nn.Linear(1024, 10))
        ddp = model if name.startswith("local") else DDP(model, process_group=groups[name])
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
        x, y = torch.randn(4, 1024), torch.randint(0, 10, (4,))

        def step():
            opt.zero_grad()
            nn.functional.cross_entropy(ddp(x), y).backward()
            opt.step()

        for _ in range(3):
            step()
        for _ in range(reps):
            t = torch.tensor([timed(step, 10)], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=groups["gloo"])
            res.setdefault(f"ddp step {name}", []).append(t.item())
        params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        out = {k: statistics.median(v) for k, v in res.items()}
        out["ddp gradient MB"] = params * 4 / 1e6
        print("RESULT " + json.dumps(out), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="")
    ap.add_argument("--plot", default="", help="bar chart of the speed-ups (gnuplot)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.reps)
        return
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"), OMP_NUM_THREADS="1")
    lines, plot_rows = [], []
    for n in map(int, args.ranks.split(",")):
        cmd = [os.path.join(args.build, "tools", "tuttirun", "tuttirun"), "-np", str(n),
               sys.executable, os.path.abspath(__file__), "--worker", "--reps", str(args.reps)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        found = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
        if out.returncode != 0 or not found:
            sys.exit(f"{n} ranks failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        r = json.loads(found[0][7:])
        lines.append(f"\n### {n} ranks (one host, medians of {args.reps})\n")
        lines.append("| all_reduce float32 | gloo (us) | tutti (us) | tutti speed-up | "
                     "raw C call (us) | pg.allreduce().wait() (us) | backend overhead |")
        lines.append("|---|---|---|---|---|---|---|")
        for label in ("8 B", "1 KiB", "1 MiB", "25 MiB"):
            g, t = r[f"allreduce {label} gloo"], r[f"allreduce {label} tutti"]
            raw, pg = r[f"allreduce {label} tutti raw C"], r[f"allreduce {label} tutti pg.allreduce"]
            lines.append(f"| {label} | {g:.1f} | {t:.1f} | {g / t:.1f}x | {raw:.1f} | {pg:.1f} | "
                         f"{pg - raw:+.1f} us ({(pg - raw) / raw * 100:+.0f}%) |")
            plot_rows.append((f"{label} np{n}", g / t))
        g, t = r["ddp step gloo"], r["ddp step tutti"]
        plot_rows.append((f"DDP np{n}", g / t))
        loc = r["ddp step local (no communication)"]
        ar = r["allreduce 25 MiB tutti"] * r["ddp gradient MB"] / (25 * 1.048576)
        lines.append(f"\nDDP step, MLP 1024-2048-1024-10 ({r['ddp gradient MB']:.1f} MB of "
                     f"gradients), batch 4: gloo {g / 1000:.2f} ms, tutti {t / 1000:.2f} ms "
                     f"({g / t:.2f}x); the same step without DDP {loc / 1000:.2f} ms, and tutti's "
                     f"all-reduce of that many bytes ~{ar / 1000:.2f} ms (scaled from 25 MiB)")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.plot:
        plot(plot_rows, args.plot)


def plot(rows, path):
    """Speed-up of tutti over gloo per case, one bar each (log scale)."""
    dat = path + ".dat"
    with open(dat, "w") as f:
        for label, ratio in rows:
            f.write(f'"{label}" {ratio:.3f}\n')
    script = (f"set terminal pngcairo size 900,420; set output '{path}';"
              "set title 'torch.distributed: tutti backend vs gloo (speed-up, higher is better)';"
              "set style fill solid 0.6; set boxwidth 0.7; set logscale y; set grid ytics;"
              "set ylabel 'gloo time / tutti time'; set xtics rotate by -30;"
              f"plot '{dat}' using 0:2:xtic(1) with boxes notitle,"
              f" '' using 0:2:(sprintf('%.1fx', $2)) with labels offset 0,1 notitle")
    subprocess.run(["gnuplot", "-e", script], check=True)


if __name__ == "__main__":
    main()
