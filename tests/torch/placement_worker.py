"""Where the backend runs operations (python/csrc/work_stream.h, sync_use.h), checked through
tutti.torch._C.stream_stats: synchronous all-reduces (torch 2.x passes async_op=False) run on
the caller's thread; asynchronous use -- work left in flight while the caller sleeps,
DDP-style futures -- runs on the worker and progresses without a wait. Every result is checked
against the verifiable data of verifiable.py.
Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT."""
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch
from tutti.torch import _C
from verifiable import exact_equal, reduced, values

dist.init_process_group("tutti")
rank, n = dist.get_rank(), dist.get_world_size()
pg = dist.group.WORLD
ELEMS = 1 << 18  # 1 MiB of float32: above the 64 KiB run-at-submit size
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)


def data(call):
    return values(rank, call, ELEMS, torch.float32)


def want(call):
    return reduced(n, call, ELEMS, torch.float32, "sum")


def delta(before):
    after = _C.stream_stats(pg)
    return {k: after[k] - before[k] for k in after}


call = 0
# Synchronous: every call runs at submit.
before = _C.stream_stats(pg)
for _ in range(12):
    call += 1
    t = data(call)
    dist.all_reduce(t)
    expect(exact_equal(t, want(call)), f"sync call {call}")
d = delta(before)
# torch 2.x tells the backend (opts.asyncOp = False): every one runs at submit, none waits for
# the heuristic of sync_use.h to learn it.
expect(d["at_submit"] == 12 and d["on_worker"] == 0,
       f"sync all-reduces did not run on the caller's thread: {d}")

# Asynchronous calls waited for at once (pg.allreduce([t]).wait()): learnt as synchronous
# after two (sync_use.h), the rest run at submit. A rank descheduled between a submit and its
# wait for more than sync_use.h's 20 ms (3 ranks on 2 cores under the suite's load: seen once,
# 6 of 10 at submit) ends the streak like a late wait, and two calls learn it again: of 30
# calls, at least two thirds run at submit.
before = _C.stream_stats(pg)
for _ in range(30):
    call += 1
    t = data(call)
    pg.allreduce([t]).wait()
    expect(exact_equal(t, want(call)), f"waited-at-once call {call}")
d = delta(before)
expect(d["at_submit"] >= 20, f"async calls waited at once were not learnt as synchronous: {d}")

# Asynchronous with work in between: the worker runs them while the caller sleeps.
before = _C.stream_stats(pg)
for k in range(6):
    call += 1
    t = data(call)
    w = dist.all_reduce(t, async_op=True)
    deadline = time.time() + 10
    while not w.is_completed() and time.time() < deadline:
        time.sleep(0.002)
    expect(w.is_completed(), f"async call {call} made no progress without a wait")
    w.wait()
    expect(exact_equal(t, want(call)), f"async call {call}")
d = delta(before)
# At most the first one, right after the synchronous phase, may run at submit.
expect(d["on_worker"] >= 5, f"async all-reduces did not run on the worker: {d}")

# Futures (DDP's hooks ask for one at once): never learnt as synchronous.
for _ in range(4):  # synchronous first, so that there is something to unlearn
    call += 1
    t = data(call)
    dist.all_reduce(t)
before = _C.stream_stats(pg)
futs, calls, tensors = [], [], []
for k in range(6):
    call += 1
    t = data(call)
    futs.append(dist.all_reduce(t, async_op=True).get_future())
    calls.append(call)
    tensors.append(t)
    time.sleep(0.001)
for f, c, t in zip(futs, calls, tensors):
    f.wait()
    expect(exact_equal(t, want(c)), f"future call {c}")
d = delta(before)
expect(d["on_worker"] + d["by_waiter"] >= 5, f"future all-reduces ran at submit: {d}")

dist.destroy_process_group()
if failures:
    print(f"rank {rank} FAILED: " + "; ".join(failures))
    sys.exit(1)
print(f"rank {rank} OK")
