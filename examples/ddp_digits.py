"""DDP on the tutti backend: softmax regression on the UCI digits (tests/data/digits.csv.gz),
the gradient averaged five ways -- dense (DDP's own all-reduce on tutti), top-k 1% with and
without error feedback and QSGD s=4 (no error feedback) through tutti.torch.hooks, and
PyTorch's PowerSGD hook (rank 1) -- with the set-up of examples/digits_training.cc: 64
features / 16 + bias (650 parameters), W0 = 0, cross-entropy + (1e-4/2)||W||^2, the
interleaved 1440/357 split, batch 32 per rank drawn with replacement, lr 0.5, 3000 steps.

    build/tools/tuttirun/tuttirun -np 4 python3 examples/ddp_digits.py [--steps N]

(PYTHONPATH must reach build/python.) Rank 0 prints one table: final regularised training
loss, test accuracy and the seconds each method took.
"""
import argparse
import gzip
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti.torch
import tutti.torch.hooks as hooks

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    rows = [list(map(int, line.split(","))) for line in gzip.open(path, "rt") if line.strip()]
    data = torch.tensor(rows, dtype=torch.float32)
    x, y = data[:, :64] / 16.0, data[:, 64].long()
    n = len(rows)
    # interleaved split (as digits_training.cc): row i is a test row iff
    # floor((i+1)*357/n) > floor(i*357/n)
    test = torch.tensor([((i + 1) * 357) // n > (i * 357) // n for i in range(n)])
    return x[~test], y[~test], x[test], y[test]


def train(method, xs, ys, steps, rank, size, seed=0):
    torch.manual_seed(0)
    model = nn.Linear(64, 10)
    nn.init.zeros_(model.weight)
    nn.init.zeros_(model.bias)
    ddp = DDP(model)
    if method == "top-k 1% + EF":
        ddp.register_comm_hook(hooks.topk(0.01, key_base=100), hooks.compressed_hook)
    elif method == "top-k 1%, no EF":
        ddp.register_comm_hook(hooks.topk(0.01, error_feedback=False, key_base=200),
                               hooks.compressed_hook)
    elif method == "QSGD s=4":
        ddp.register_comm_hook(hooks.qsgd(4, 512, key_base=300), hooks.compressed_hook)
    elif method == "PowerSGD rank 1":
        state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=1,
                                       start_powerSGD_iter=2, use_error_feedback=True,
                                       warm_start=True)
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5, weight_decay=1e-4)
    per = len(ys) // size
    mine_x, mine_y = xs[rank * per:(rank + 1) * per], ys[rank * per:(rank + 1) * per]
    gen = torch.Generator().manual_seed(0x5EED + 7919 * seed + 104729 * rank)
    start = time.monotonic()
    for _ in range(steps):
        idx = torch.randint(0, per, (32,), generator=gen)
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(mine_x[idx]), mine_y[idx]).backward()
        opt.step()
    return model, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless dense, top-k + EF and QSGD reach loss <= 0.112 and test "
                         "accuracy >= 0.97 and top-k without EF stays at loss >= 0.20")
    ap.add_argument("--methods", default="", help="comma-separated substrings, e.g. QSGD,dense")
    ap.add_argument("--data", default=os.path.join(HERE, "..", "tests", "data", "digits.csv.gz"))
    args = ap.parse_args()
    dist.init_process_group("tutti")
    rank, size = dist.get_rank(), dist.get_world_size()
    xtr, ytr, xte, yte = load(args.data)
    methods = ["dense (tutti all-reduce)", "top-k 1% + EF", "top-k 1%, no EF", "QSGD s=4",
               "PowerSGD rank 1"]
    if args.methods:
        methods = [m for m in methods if any(w in m for w in args.methods.split(","))]
    rows = []
    for m in methods:
        model, secs = train(m, xtr, ytr, args.steps, rank, size)
        with torch.no_grad():
            w2 = model.weight.pow(2).sum() + model.bias.pow(2).sum()
            loss = nn.functional.cross_entropy(model(xtr), ytr).item() + 0.5e-4 * w2.item()
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        rows.append((m, loss, acc, secs))
    if rank == 0:
        print(f"{size} ranks, {args.steps} steps, batch 32 per rank, lr 0.5")
        print("| gradient averaging | training loss | test accuracy | seconds |")
        print("|---|---|---|---|")
        for m, loss, acc, secs in rows:
            print(f"| {m} | {loss:.4f} | {acc:.4f} | {secs:.1f} |")
    dist.destroy_process_group()
    if args.check:
        bad = [m for m, loss, acc, _ in rows
               if ("no EF" in m and loss < 0.20) or
               ("no EF" not in m and "PowerSGD" not in m and (loss > 0.112 or acc < 0.97))]
        if bad:
            print(f"rank {rank}: CHECK FAILED for {bad}")
            raise SystemExit(1)


if __name__ == "__main__":
    main()
