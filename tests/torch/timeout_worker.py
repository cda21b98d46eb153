"""A per-call timeout (opts.timeout of the backend's operation; torch's own Python functions
pass none): the group's timeout is 60 s; rank 0 all-reduces with a 400 ms timeout while rank 1
is 3 s late: rank 0 gets a RuntimeError naming rank 1 within 1.5 s, and its first call with
the same timeout, with rank 1 on time, returned the right values."""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import tutti.torch

dist.init_process_group("tutti", timeout=timedelta(seconds=60))
rank = dist.get_rank()
pg = dist.group.WORLD._get_backend(torch.device("cpu"))
opts = dist.AllreduceOptions()
opts.timeout = timedelta(milliseconds=400)
t = torch.arange(1000, dtype=torch.float64) + 1000 * rank
pg.allreduce([t], opts).wait()
assert torch.equal(t, 2 * torch.arange(1000, dtype=torch.float64) + 1000), "first call"
if rank == 1:
    time.sleep(3)
    pg.abort()  # rank 0 has given up: leave without waiting for it
    sys.exit(0)
start = time.monotonic()
try:
    pg.allreduce([t], opts).wait()
    print("rank 0: no error", file=sys.stderr)
    sys.exit(3)
except RuntimeError as e:
    took = time.monotonic() - start
    print(f"rank 0: error after {took:.2f} s: {e}")
    sys.exit(0 if "rank 1" in str(e) and "timeout" in str(e) and 0.35 <= took < 1.5 else 4)
