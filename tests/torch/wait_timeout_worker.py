"""Work.wait(timeout) on an operation in flight on the group's stream: the group's timeout is
60 s; rank 0 all-reduces 1 MiB asynchronously (through the stream: above the 64 KiB run at
submit) while rank 1 is 3 s late; is_completed() stays False, wait(300 ms) raises within
1.5 s saying so and aborts the communicator, and the work then completes with an error. A
first call, with rank 1 on time, completes through the same path with the right values."""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import tutti.torch

dist.init_process_group("tutti", timeout=timedelta(seconds=60))
rank = dist.get_rank()
t = torch.arange(1 << 18, dtype=torch.float32) + rank
w = dist.all_reduce(t, async_op=True)
w.wait(timeout=timedelta(seconds=30))
assert torch.equal(t, 2 * torch.arange(1 << 18, dtype=torch.float32) + 1), "first call"
if rank == 1:
    time.sleep(3)
    dist.group.WORLD._get_backend(torch.device("cpu")).abort()  # rank 0 has given up
    sys.exit(0)
w = dist.all_reduce(t, async_op=True)
time.sleep(0.1)
if w.is_completed():
    print("rank 0: completed without its peer", file=sys.stderr)
    sys.exit(3)
start = time.monotonic()
try:
    w.wait(timeout=timedelta(milliseconds=300))
    print("rank 0: no error", file=sys.stderr)
    sys.exit(4)
except RuntimeError as e:
    took = time.monotonic() - start
    print(f"rank 0: error after {took:.2f} s: {e}")
    if not ("300 ms" in str(e) and "aborted" in str(e) and 0.25 <= took < 1.5):
        sys.exit(5)
deadline = time.monotonic() + 10
while not w.is_completed() and time.monotonic() < deadline:
    time.sleep(0.01)
if not w.is_completed():
    print("rank 0: the aborted work never completed", file=sys.stderr)
    sys.exit(6)
try:
    w.wait()
    sys.exit(7)
except RuntimeError as e:
    print(f"rank 0: the work failed: {e}")
sys.exit(0)
