"""ProcessGroup.split_group on tutti groups (tuttiCommSplit, no rendezvous): halves, a split
that leaves one rank out, a split of a split, and the world still usable after them; every
result against values computed here (verifiable.py). torch.distributed.split_group itself
refuses a CPU-only job before it asks the backend (it needs an accelerator bound to the
default group), so the test calls the ProcessGroup method that split_group and DeviceMesh use.
Prints the time of a split and of a new_group of the same ranks."""
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import tutti.torch
from verifiable import exact_equal, values

failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)


def check_group(pg, members, call, what):
    """pg's rank i is members[i]: an all-reduce and an all-gather of distinct values."""
    me = dist.get_rank()
    expect(pg.size() == len(members) and pg.rank() == members.index(me),
           f"{what}: size {pg.size()} rank {pg.rank()}, want {len(members)} and "
           f"{members.index(me)}")
    t = values(me, call, 1000 + call, torch.float64)
    pg.allreduce([t]).wait()
    want = sum(values(r, call, 1000 + call, torch.float64) for r in members)
    expect(exact_equal(t, want), f"{what}: all_reduce")
    mine = values(me, call + 1, 7, torch.int32)
    out = [torch.zeros(7, dtype=torch.int32) for _ in members]
    pg.allgather([out], [mine]).wait()
    for i, r in enumerate(members):
        expect(torch.equal(out[i], values(r, call + 1, 7, torch.int32)), f"{what}: all_gather {i}")


def main():
    dist.init_process_group("tutti", timeout=timedelta(seconds=60))
    rank, n = dist.get_rank(), dist.get_world_size()
    world = dist.group.WORLD
    half = n // 2
    mine = list(range(half)) if rank < half else list(range(half, n))
    start = time.monotonic()
    sub = world.split_group(mine, timeout=timedelta(seconds=30), group_name="halves")
    split_s = time.monotonic() - start
    check_group(sub, mine, 10, "halves")

    # The last rank takes part in no group: it gets None, the others a group without it.
    rest = list(range(n - 1))
    part = world.split_group(rest, timeout=timedelta(seconds=30), group_name="rest")
    if rank == n - 1:
        expect(part is None, "the rank left out got a group")
    else:
        check_group(part, rest, 20, "rest")

    # A split of a split: the group without the last rank splits by the parity of its ranks.
    if rank != n - 1 and len(rest) >= 2:
        inner = [r for r in rest if r % 2 == rank % 2]  # group ranks = world ranks here
        subsub = part.split_group(inner, timeout=timedelta(seconds=30), group_name="inner")
        t = values(rank, 30, 5, torch.int64)
        subsub.allreduce([t]).wait()
        expect(subsub.size() == len(inner), "split of a split: size")
        expect(exact_equal(t, sum(values(r, 30, 5, torch.int64) for r in inner)),
               "split of a split")
        del subsub

    # The world is still usable, and agrees with new_group's result.
    check_group(world, list(range(n)), 40, "world after splits")
    # new_group: every rank calls it for each half (torch's contract), members meet afresh.
    start = time.monotonic()
    halves = [dist.new_group(list(range(half)), backend="tutti"),
              dist.new_group(list(range(half, n)), backend="tutti")]
    new_group_s = time.monotonic() - start
    g = halves[0 if rank < half else 1]
    for pg in (g, sub):
        t = values(rank, 50, 3, torch.float32)
        dist.all_reduce(t, group=g) if pg is g else pg.allreduce([t]).wait()
        expect(exact_equal(t, sum(values(r, 50, 3, torch.float32).double() for r in mine)),
               "new_group and split agree")
    print(f"rank {rank}: split {split_s * 1e3:.1f} ms, new_group {new_group_s * 1e3:.1f} ms")
    del sub, part
    dist.destroy_process_group()
    if failures:
        print(f"rank {rank}: FAILED: {failures}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
