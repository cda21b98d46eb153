#!/usr/bin/env python3
"""torch.distributed on tutti vs gloo, measured side by side in one job (docs/pytorch.md):
all_reduce float32 at 8 B, 1 KiB, 1 MiB and 25 MiB; the backend's overhead over the raw C
call (tuttiAllReduce on the same communicator, same tensor); and the DDP and FSDP2 step times
of two MLPs with 16.8 MB of gradients (one compute-bound, one communication-bound). Every figure is the median of --reps interleaved repetitions.

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

    # Each repetition times every case in BLOCKS blocks, the cases' blocks interleaved and their
    # order rotated from one repetition to the next, so that a slow spell of the machine falls
    # on all cases alike (the overhead columns compare two of them).
    BLOCKS = 4
    for rep in range(reps):
        for label, elems in sizes.items():
            x = torch.ones(elems)
            cases = {
                "gloo": (lambda: dist.all_reduce(x, group=groups["gloo"]), gloo_iters[label]),
                "tutti": (lambda: dist.all_reduce(x, group=groups["tutti"]), iters[label]),
                "tutti raw C": (lambda: _C.raw_allreduce(groups["tutti"], x), iters[label]),
                "tutti pg.allreduce": (lambda: groups["tutti"].allreduce([x]).wait(), iters[label]),
            }
            names = list(cases)
            names = names[rep % len(names):] + names[:rep % len(names)]
            total = dict.fromkeys(names, 0.0)
            for name in names:
                cases[name][0]()  # warm-up
            for _ in range(BLOCKS):
                for name in names:
                    fn, count = cases[name]
                    total[name] += timed(fn, max(1, count // BLOCKS)) / BLOCKS
            for name in names:
                # the slowest rank's time is the collective's time
                t = torch.tensor([total[name]], dtype=torch.float64)
                dist.all_reduce(t, op=dist.ReduceOp.MAX, group=groups["gloo"])
                res.setdefault(f"allreduce {label} {name}", []).append(t.item())
                if os.environ.get("TORCH_BENCH_DEBUG") and rank == 0:
                    print(label, name, _C.stream_stats(groups["tutti"]), total[name],
                          file=sys.stderr)

    # Two MLPs with 16.8 MB of float32 gradients each: "dense" spends most of its step in
    # matrix products (this torch's generic BLAS makes it compute-bound here), "bag" is a
    # bag-of-words MLP (EmbeddingBag -> Linear -> Linear, dense embedding gradients) whose
    # step is mostly the gradient all-reduce.
    def make(kind):
        if kind == "dense":
            return (nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 1024),
                                  nn.ReLU(), nn.Linear(1024, 10)),
                    (torch.randn(4, 1024),), torch.randint(0, 10, (4,)))

        class Bag(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.EmbeddingBag(1 << 20, 4, mode="mean")
                self.mlp = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 10))

            def forward(self, words, offsets):
                return self.mlp(self.emb(words, offsets))

        words = torch.randint(0, 1 << 20, (4 * 32,))
        return Bag(), (words, torch.arange(0, 4 * 32, 32)), torch.randint(0, 10, (4,))

    def time_training(model, inputs, y, key):
        """SGD steps of model: 3 to warm up, then reps samples of 10 (the slowest rank's)."""
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad()
            nn.functional.cross_entropy(model(*inputs), y).backward()
            opt.step()

        for _ in range(3):
            step()
        for _ in range(reps):
            t = torch.tensor([timed(step, 10)], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=groups["gloo"])
            res.setdefault(key, []).append(t.item())

    import tutti.torch.hooks
    # (backend, gradient_as_bucket_view, comm hook)
    variants = {"local (no communication)": (None, False, None),
                "gloo": ("gloo", False, None), "tutti": ("tutti", False, None),
                "gloo view": ("gloo", True, None), "tutti view": ("tutti", True, None),
                "tutti view+avg hook": ("tutti", True, tutti.torch.hooks.allreduce_avg_hook),
                "tutti C++ avg hook": ("tutti", False, "cpp")}
    for kind in ("dense", "bag"):
        for name, (backend, view, hook) in variants.items():
            torch.manual_seed(0)
            model, inputs, y = make(kind)
            ddp = model
            if backend:
                ddp = DDP(model, process_group=groups[backend], gradient_as_bucket_view=view)
                if hook == "cpp":
                    tutti.torch.hooks.register_avg_hook(ddp)
                elif hook:
                    ddp.register_comm_hook(groups[backend], hook)
            time_training(ddp, inputs, y, f"ddp {kind} step {name}")
            res[f"ddp {kind} gradient MB"] = [sum(p.numel() for p in model.parameters()) * 4 / 1e6]
    # FSDP2 (fully_shard on every Linear and the root, on a 1-D DeviceMesh of the backend's
    # group): the same two models, parameters all-gathered and gradients reduce-scattered.
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard
    for kind in ("dense", "bag"):
        for backend in ("gloo", "tutti"):
            torch.manual_seed(0)
            model, inputs, y = make(kind)
            mesh = DeviceMesh.from_group(groups[backend], "cpu")
            for m in model.modules():
                if isinstance(m, (nn.Linear, nn.EmbeddingBag)):
                    fully_shard(m, mesh=mesh)
            fully_shard(model, mesh=mesh)
            time_training(model, inputs, y, f"fsdp {kind} step {backend}")
    if rank == 0:
        out = {k: statistics.median(v) for k, v in res.items()}
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
        descr = {"dense": "MLP 1024-2048-1024-10, batch 4",
                 "bag": "bag-of-words MLP (EmbeddingBag 2^20 x 4, mean of 32 words) -> 64 -> 10, "
                        "batch 4"}
        lines.append(f"\nDDP step time (ms) at {n} ranks; view = gradient_as_bucket_view=True, "
                     "avg hook = tutti.torch.hooks.allreduce_avg_hook\n")
        lines.append("| model | no DDP | gloo | tutti | gloo view | tutti view | "
                     "tutti view + avg hook | tutti C++ avg hook | speed-up default | "
                     "speed-up best |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for kind in ("dense", "bag"):
            v = {name: r[f"ddp {kind} step {name}"] / 1000 for name in
                 ("local (no communication)", "gloo", "tutti", "gloo view", "tutti view",
                  "tutti view+avg hook", "tutti C++ avg hook")}
            best_gloo = min(v["gloo"], v["gloo view"])
            best_tutti = min(v["tutti"], v["tutti view"], v["tutti view+avg hook"],
                             v["tutti C++ avg hook"])
            plot_rows.append((f"DDP {kind} np{n}", best_gloo / best_tutti))
            lines.append(f"| {descr[kind]} ({r[f'ddp {kind} gradient MB']:.1f} MB of gradients) | "
                         + " | ".join(f"{x:.2f}" for x in v.values())
                         + f" | {v['gloo'] / v['tutti']:.2f}x | {best_gloo / best_tutti:.2f}x |")
        lines.append(f"\nFSDP2 step time (ms) at {n} ranks (fully_shard on every layer and the "
                     "root)\n")
        lines.append("| model | gloo | tutti | speed-up |")
        lines.append("|---|---|---|---|")
        for kind in ("dense", "bag"):
            g, t = r[f"fsdp {kind} step gloo"] / 1000, r[f"fsdp {kind} step tutti"] / 1000
            plot_rows.append((f"FSDP2 {kind} np{n}", g / t))
            lines.append(f"| {descr[kind]} | {g:.2f} | {t:.2f} | {g / t:.2f}x |")
        ar = r["allreduce 25 MiB tutti"] * r["ddp bag gradient MB"] / (25 * 1.048576)
        lines.append(f"\ntutti's all-reduce of 16.8 MB: ~{ar / 1000:.2f} ms (scaled from 25 MiB); "
                     "speed-up best: each backend's fastest DDP setting")
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
