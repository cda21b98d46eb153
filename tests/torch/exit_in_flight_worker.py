"""A process that exits with an operation in flight whose future has a Python callback: rank 0
all-reduces 4 MiB asynchronously, chains a Python function on its future and exits at once;
rank 1 joins the all-reduce 0.5 s later. The group is destroyed while the interpreter shuts
down and the operation completes then (or rank 0 leaves first and rank 1's call fails naming
it): both ranks must exit with status 0 (the completion used to run the callback's Python code
during shutdown, which aborted rank 0). Run under tuttirun (test_backend.py).
Environment: what tuttirun sets."""
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

dist.init_process_group("tutti")
rank = dist.get_rank()
t = torch.ones(1 << 20)
dist.all_reduce(t)
if rank == 1:
    time.sleep(0.5)
    try:  # completes, or fails naming rank 0 if rank 0 left first: either is right
        dist.all_reduce(t)
    except RuntimeError as e:
        assert "rank 0" in str(e), e
    print("rank 1 done", flush=True)
    sys.exit(0)
w = dist.all_reduce(t, async_op=True)
fut = w.get_future().then(lambda f: f.value()[0].sum().item())
print("rank 0 exits with the work in flight", flush=True)
sys.exit(0)
