"""monitored_barrier through the backend (torch itself refuses it for every backend but gloo):
on time it passes; with rank 1 absent (3 s late, then gone), a timeout of 0 expires at once on
rank 0 -- an error within 0.5 s naming rank 1 -- instead of waiting for the group's 60 s or for
rank 1's exit."""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import tutti.torch

dist.init_process_group("tutti", timeout=timedelta(seconds=60))
rank = dist.get_rank()
backend = dist.group.WORLD._get_backend(torch.device("cpu"))
backend.monitored_barrier(timedelta(seconds=30), False)
backend.monitored_barrier(timedelta(seconds=30), True)
if rank == 1:
    time.sleep(3)
    backend.abort()
    sys.exit(0)
start = time.monotonic()
try:
    backend.monitored_barrier(timedelta(0), False)
    print("rank 0: no error", file=sys.stderr)
    sys.exit(3)
except RuntimeError as e:
    took = time.monotonic() - start
    print(f"rank 0: error after {took:.3f} s: {e}")
    if took >= 0.5:
        sys.exit(4)
    if "rank 1" not in str(e):
        sys.exit(5)
