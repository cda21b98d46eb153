"""torch.distributed._time_estimator on "tutti": operations inside it run nothing (tensors keep
their values, the next real operations of every rank still match), its estimate grows with the
bytes and adds up, sends and receives are priced, and an operation that cannot be recorded ends
the estimate with a clear error. With TIME_ESTIMATE_REPORT=1, rank 0 prints the estimate
against the measured time of all_reduce at several sizes (docs/pytorch.md)."""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

dist.init_process_group("tutti")
rank, n = dist.get_rank(), dist.get_world_size()
cpu = torch.device("cpu")
backend = dist.group.WORLD._get_backend(cpu)
fail = []


def check(cond, what):
    if not cond:
        fail.append(what)


def inputs(numel, call):
    """Distinct per rank, element and call; exact in float64."""
    i = torch.arange(numel, dtype=torch.float64)
    return (rank + 1) * 1000003.0 + i * 7919.0 + call * 131.0


def expected_sum(numel, call):
    i = torch.arange(numel, dtype=torch.float64)
    return sum((r + 1) * 1000003.0 + i * 7919.0 + call * 131.0 for r in range(n))


def estimate(ops):
    with dist._time_estimator(device=cpu) as cm:
        ops()
    return cm.estimated_time


check(backend.supports_time_estimate, "supports_time_estimate is False")

small, large = 2, 1 << 20  # float64 elements: 16 B and 8 MiB
a, b = inputs(small, 0), inputs(large, 0)
a0, b0 = a.clone(), b.clone()
e_small = estimate(lambda: dist.all_reduce(a))
e_large = estimate(lambda: dist.all_reduce(b))
e_both = estimate(lambda: (dist.all_reduce(a), dist.all_reduce(b)))
check(e_small > 0, f"estimate of a 16 B all_reduce: {e_small}")
check(e_large > e_small, f"8 MiB {e_large} not above 16 B {e_small}")
check(abs(e_both - (e_small + e_large)) <= 1e-3 * e_both,
      f"estimates do not add up: {e_both} against {e_small} + {e_large}")
check(torch.equal(a, a0) and torch.equal(b, b0), "an estimated all_reduce changed its tensor")

# Other collectives and async works: complete at once, outputs untouched.
out = torch.full((n * 4,), -1.0, dtype=torch.float64)
bc = inputs(8, 1)
bc0 = bc.clone()
with dist._time_estimator(device=cpu) as cm:
    w = dist.all_gather_into_tensor(out, inputs(4, 2), async_op=True)
    dist.broadcast(bc, src=0)
    dist.reduce_scatter_tensor(torch.zeros(4, dtype=torch.float64), inputs(4 * n, 3))
    check(w.is_completed(), "an estimated async all_gather is not complete")
    w.wait()
check(cm.estimated_time > 0, f"estimate of three collectives: {cm.estimated_time}")
check(bool((out == -1.0).all()), "an estimated all_gather wrote its output")
check(torch.equal(bc, bc0), "an estimated broadcast changed the tensor")

# Sends and receives: priced, nothing received.
got = torch.full((1000,), -1.0, dtype=torch.float64)
with dist._time_estimator(device=cpu) as cm:
    dist.send(inputs(1000, 4), (rank + 1) % n)
    dist.recv(got, (rank + n - 1) % n)
check(cm.estimated_time > 0, f"estimate of a send and a receive: {cm.estimated_time}")
check(bool((got == -1.0).all()), "an estimated recv received")

# The next real operation: exact, on every rank.
t = inputs(5000, 5)
dist.all_reduce(t)
check(torch.equal(t, expected_sum(5000, 5)), "the all_reduce after the estimates is wrong")

# An operation the estimate cannot record ends it, with a clear error.
backend._start_time_estimate()
sparse = torch.sparse_coo_tensor([[rank]], [1.0], (n,))
try:
    dist.all_reduce(sparse)
    check(False, "a sparse all_reduce was estimated")
except (ValueError, RuntimeError) as e:
    check("cannot be estimated" in str(e), f"sparse estimate error text: {e}")
try:
    backend._end_time_estimate()
    check(False, "the estimate stayed open after the refused operation")
except (ValueError, RuntimeError) as e:
    check("no time estimate is open" in str(e), f"end after refusal: {e}")
t = inputs(33, 6)
dist.all_reduce(t)
check(torch.equal(t, expected_sum(33, 6)), "the all_reduce after a refused estimate is wrong")

if os.environ.get("TIME_ESTIMATE_REPORT") == "1":
    rows = []
    for numel in (2, 256, 16384, 262144, 4194304):  # float32: 8 B .. 16 MiB
        x = torch.ones(numel, dtype=torch.float32)
        est = estimate(lambda: dist.all_reduce(x))
        reps = 200 if numel <= 16384 else 30
        for _ in range(5):
            dist.all_reduce(x)
        times = []
        for _ in range(5):  # 5 timed loops of reps calls each, back to back
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(x)
            times.append((time.perf_counter() - t0) * 1e6 / reps)
        med = statistics.median(times)
        rows.append((numel * 4, est, med))
    if rank == 0:
        print(f"world size {n}: all_reduce float32, estimate vs measured (median of 5 loops, us a call)")
        for size, est, med in rows:
            print(f"{size:>10} B  estimate {est:10.1f}  measured {med:10.1f}  ratio {est / med:5.2f}")

dist.destroy_process_group()
if fail:
    print(f"rank {rank}: " + "; ".join(fail), file=sys.stderr)
    sys.exit(1)
