"""monitored_barrier through the backend (torch itself refuses it for every backend but gloo),
3 ranks, gloo's verdicts: on time it passes (also with wait_all_ranks); rank 2 late: rank 0
names it, rank 1 fails with rank 0's verdict instead of waiting out its timeout; ranks 1 and 2
late with wait_all_ranks: rank 0 names both; a timeout of 0 expires at once on rank 0 (an error
within 0.5 s naming rank 1) instead of waiting for the group's 60 s."""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

dist.init_process_group("tutti", timeout=timedelta(seconds=60))
rank = dist.get_rank()
backend = dist.group.WORLD._get_backend(torch.device("cpu"))
fail = []


def expect_error(fn, *texts, within=None):
    start = time.monotonic()
    try:
        fn()
        fail.append(f"no error (expected {texts})")
        return
    except RuntimeError as e:
        took = time.monotonic() - start
        for t in texts:
            if t not in str(e):
                fail.append(f"{t!r} not in {e}")
        if within is not None and took >= within:
            fail.append(f"the error took {took:.3f} s: {e}")


backend.monitored_barrier(timedelta(seconds=30), False)
backend.monitored_barrier(timedelta(seconds=30), True)
t = torch.ones(4) * rank
dist.all_reduce(t)

# Rank 2 is late (arrives after rank 0's 0.5 s): rank 0 names it, rank 1 hears so.
if rank == 0:
    expect_error(lambda: backend.monitored_barrier(timedelta(seconds=0.5), False),
                 "Rank 2 failed to pass monitoredBarrier in 500 ms", within=5)
elif rank == 1:
    expect_error(lambda: backend.monitored_barrier(timedelta(seconds=20), False),
                 "Rank 1 successfully reached monitoredBarrier",
                 "Rank 2 failed to pass monitoredBarrier", within=5)
else:
    time.sleep(1.5)
    expect_error(lambda: backend.monitored_barrier(timedelta(seconds=20), False),
                 "Rank 2 successfully reached monitoredBarrier", "Rank 2 failed", within=5)
dist.barrier()

# Ranks 1 and 2 late, wait_all_ranks: both named.
if rank == 0:
    expect_error(lambda: backend.monitored_barrier(timedelta(seconds=0.3), True),
                 "Ranks 1, 2 failed to pass monitoredBarrier in 300 ms", within=5)
else:
    time.sleep(1)
    expect_error(lambda: backend.monitored_barrier(timedelta(seconds=20), True),
                 "Ranks 1, 2 failed", within=5)
dist.barrier()
backend.monitored_barrier(timedelta(seconds=30), True)  # in step again

# A timeout of 0 with the others absent (3 s late, then gone).
if rank != 0:
    time.sleep(3)
    backend.abort()
else:
    expect_error(lambda: backend.monitored_barrier(timedelta(0), False),
                 "Rank 0 timed out in monitoredBarrier", "rank 1", within=0.5)
if fail:
    print(f"rank {rank}: " + "; ".join(fail), file=sys.stderr)
    sys.exit(1)
print(f"rank {rank}: ok")
