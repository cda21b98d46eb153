"""What torch learns of each operation: the on-completion hook (once per operation, in order,
with its type, sequence number and times), Work._get_duration after
_enable_collectives_timing, _wait_for_pending_works, and one profiler event per operation with
the inputs' shapes (a first-contact send and receive included)."""
import sys
import threading
import time

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

dist.init_process_group("tutti")
rank, n = dist.get_rank(), dist.get_world_size()
pg = dist.group.WORLD
fail = []


def check(cond, what):
    if not cond:
        fail.append(what)


# Before timing is enabled, a duration is refused with a clear error.
w = dist.all_reduce(torch.ones(4), async_op=True)
w.wait()
try:
    w._get_duration()
    check(False, "getDuration without timing did not raise")
except RuntimeError as e:
    check("timing" in str(e), f"getDuration error text: {e}")

infos = []
hook_threads = set()


def hook(info):
    hook_threads.add(threading.get_ident())
    infos.append((info.op_type, info.seq, info.time_started, info.time_finished,
                  info.active_duration))


pg._register_on_completion_hook(hook)
pg._enable_collectives_timing()
try:
    pg._register_on_completion_hook(hook)
    check(False, "a second hook was accepted")
except RuntimeError as e:
    check("already" in str(e), f"second hook error text: {e}")

works = []
for i in range(5):  # distinct sizes: operations of different lengths
    t = torch.arange(1000 * (i + 1), dtype=torch.float32) + rank
    works.append(dist.all_reduce(t, async_op=True))
    if i == 2:
        works.append(dist.broadcast(torch.zeros(16) + rank, src=0, async_op=True))
for w in works:
    w.wait()
    d = w._get_duration()
    check(isinstance(d, float) and 0 <= d < 60_000, f"duration {d}")
seqs = [w._get_op_type() for w in works]
pg._wait_for_pending_works()
check(len(infos) == len(works), f"{len(infos)} hook calls for {len(works)} operations")
check(threading.get_ident() not in hook_threads, "the hook ran on the caller's thread")
got_seqs = [s for _, s, *_ in infos]
check(got_seqs == sorted(got_seqs) and len(set(got_seqs)) == len(got_seqs),
      f"hook sequence numbers {got_seqs}")
for op, seq, started, finished, active in infos:
    check(finished >= started, f"finished before started: {started} {finished}")
    check(active.total_seconds() >= 0, "negative active duration")
kinds = [str(op) for op, *_ in infos]
check(sum("ALLREDUCE" in k for k in kinds) == 5 and sum("BROADCAST" in k for k in kinds) == 1,
      f"hook op types {kinds}")

# Profiler: one event per operation, with the inputs' shapes; the first send/recv between the
# ranks (a first contact) included.
with torch.autograd.profiler.profile(record_shapes=True) as prof:
    for k in range(2):  # the first contact, then a reached peer
        if rank == 0:
            dist.send(torch.ones(3, 5) + k, dst=1)
        elif rank == 1:
            t = torch.zeros(3, 5)
            dist.recv(t, src=0)
            check(bool((t == 1 + k).all()), "recv data")
    out = [torch.zeros(2, 7) for _ in range(n)]
    dist.all_gather(out, torch.full((2, 7), float(rank)))
    dist.all_reduce(torch.ones(6, 2))
expected = {"tutti:all_gather": [[2, 7]], "tutti:all_reduce": [[6, 2]]}
if rank in (0, 1):
    expected["tutti:send" if rank == 0 else "tutti:recv"] = [[3, 5]]
events = [e for e in prof.function_events if e.name.startswith("tutti:")]
for name, shape in expected.items():
    mine = [e for e in events if e.name == name]
    want = 2 if name in ("tutti:send", "tutti:recv") else 1
    check(len(mine) == want, f"{name}: {len(mine)} events")
    for e in mine:
        check(e.input_shapes == shape, f"{name} shapes {e.input_shapes}")
check(len(events) == sum(2 if k in ("tutti:send", "tutti:recv") else 1 for k in expected),
      f"events {[e.name for e in events]}")
pg._wait_for_pending_works()
dist.destroy_process_group()
if fail:
    print(f"rank {rank}: " + "; ".join(fail), file=sys.stderr)
    sys.exit(1)
print(f"rank {rank}: ok, {len(infos)} hook calls")
