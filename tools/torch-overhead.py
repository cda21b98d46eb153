#!/usr/bin/env python3
"""The torch backend's cost per call over the raw C call (issue 69: <= 2 us at 2 ranks, <= 5 us
at 4): an 8 B all-reduce as tuttiAllReduce on the group's communicator (raw), as
pg.allreduce([t]).wait() and as dist.all_reduce(t), 7 interleaved rounds of OVH_N calls, the
slowest rank's time, medians. Run under tuttirun:

    PYTHONPATH=build/python OMP_NUM_THREADS=1 build/tools/tuttirun/tuttirun -np 2 \
        python3 tools/torch-overhead.py          # TORCH_FR_BUFFER_SIZE=0: flight recorder off
    OVH_FLOOR=1 python3 tools/torch-overhead.py  # torch's own floor (FakeProcessGroup), no launcher
"""
import os, sys, time, statistics, torch, torch.distributed as dist
import tutti.torch
from tutti.torch import _C
FLOOR = os.environ.get("OVH_FLOOR") == "1"  # torch's own cost: its FakeProcessGroup, 1 process
if FLOOR:
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
else:
    dist.init_process_group("tutti")
rank, n = dist.get_rank(), dist.get_world_size()
pg = dist.group.WORLD
x = torch.ones(2)
N = int(os.environ.get("OVH_N", "20000"))
def timed(fn):
    if not FLOOR:
        dist.barrier()
    t = time.perf_counter()
    for _ in range(N): fn()
    return (time.perf_counter() - t) / N * 1e6
cases = {"raw": lambda: _C.raw_allreduce(pg, x), "pg": lambda: pg.allreduce([x]).wait(),
         "dist": lambda: dist.all_reduce(x)}
if FLOOR:
    del cases["raw"]
res = {k: [] for k in cases}
for rep in range(7):
    for k in (list(cases) if rep % 2 == 0 else list(cases)[::-1]):
        cases[k]()
        t = torch.tensor([timed(cases[k])], dtype=torch.float64)
        if not FLOOR:
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
        res[k].append(t.item())
if rank == 0:
    med = {k: statistics.median(v) for k, v in res.items()}
    line = f"ranks {n}: " + ", ".join(f"{k} {v:.2f} us" for k, v in med.items())
    if FLOOR:
        print("torch's FakeProcessGroup (no backend work): " + line.split(": ", 1)[1])
    else:
        print(line + f"; pg - raw {med['pg'] - med['raw']:.2f} us, "
              f"dist - raw {med['dist'] - med['raw']:.2f} us")
dist.destroy_process_group()
