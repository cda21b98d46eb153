"""A rank killed mid-job: the survivors' next collective raises a RuntimeError naming it
within 2 s (no hang), and the group's flight recorder (tutti.torch.dump_trace) still answers,
showing the failed all-reduce. argv[1]: the rank to kill."""
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import tutti.torch

victim = int(sys.argv[1])
dist.init_process_group("tutti", timeout=timedelta(seconds=30))
rank, n = dist.get_rank(), dist.get_world_size()
t = torch.ones(1 << 16)
dist.all_reduce(t)
assert t[0].item() == n
dist.barrier()
if rank == victim:
    os.kill(os.getpid(), signal.SIGKILL)
start = time.monotonic()
try:
    for _ in range(100):
        dist.all_reduce(torch.ones(1 << 16))
    print(f"rank {rank}: no error after the kill", file=sys.stderr)
    sys.exit(3)
except RuntimeError as e:
    took = time.monotonic() - start
    print(f"rank {rank}: error after {took:.1f} s: {e}")
    trace = tutti.torch.dump_trace()
    if "llreduce" not in trace:
        print(f"rank {rank}: the trace shows no all-reduce:\n{trace}", file=sys.stderr)
        sys.exit(5)
    if took >= 2.0:
        print(f"rank {rank}: the error took {took:.1f} s (>= 2 s)", file=sys.stderr)
        sys.exit(6)
    sys.exit(0 if f"rank {victim}" in str(e) else 4)
