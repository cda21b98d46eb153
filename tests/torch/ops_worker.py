"""One rank of the torch backend's operation tests: every torch.distributed operation on the
"tutti" backend, checked against values computed independently (verifiable.py).
Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; argv[1]: "sync", "async" or both
("sync,async": the checks run once per mode in one process group, one launch for both)."""
import random
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401  registers the backend
from verifiable import bit_values, bits_reduced, exact_equal, reduced, values

warnings.filterwarnings("ignore", message=".*will be deprecated")
warnings.filterwarnings("ignore", message=".*is deprecated. Please use", category=FutureWarning)

MODES = (sys.argv[1] if len(sys.argv) > 1 else "sync").split(",")
ASYNC = False  # the mode of the pass running now (checks(), run())
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8,
          torch.int32, torch.int64, torch.bool]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
       "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG}
SIZES = [1, 7, 1003, 70001]  # 70001 x 4 B goes through the worker thread (not inline)

dist.init_process_group("tutti", timeout=timedelta(seconds=60))
rank, n = dist.get_rank(), dist.get_world_size()
call = 0  # distinct data per call
failures = []


def next_call():
    global call
    call += 1
    return call


def expect(cond, what):
    if not cond:
        failures.append(what)
        print(f"rank {rank}: FAIL {what}", file=sys.stderr, flush=True)


def run(fn, *args, **kwargs):
    """Calls a collective sync or async (then waits, also through the future)."""
    if not ASYNC:
        return fn(*args, **kwargs)
    work = fn(*args, async_op=True, **kwargs)
    if isinstance(work, torch._C.Future):  # the coalesced calls return a future
        work.wait()
    elif work is not None:
        fut = work.get_future()
        work.wait()
        expect(work.is_completed(), f"{fn.__name__}: work completed after wait")
        fut.wait()
    return None



def checks():
    # ---- all_reduce: every dtype x op x size ----
    for dtype in DTYPES:
        for opname, op in OPS.items():
            if opname == "avg" and dtype not in FLOATS:
                continue
            for size in SIZES:
                if dtype in (torch.float16, torch.bfloat16) and size > 2000:
                    continue
                c = next_call()
                t = values(rank, c, size, dtype, opname)
                run(dist.all_reduce, t, op=op)
                expect(exact_equal(t, reduced(n, c, size, dtype, opname)),
                       f"all_reduce {dtype} {opname} {size}")

    # Several in flight at once, then waited in reverse order.
    if ASYNC:
        works, tensors, calls = [], [], []
        for k in range(6):
            c = next_call()
            t = values(rank, c, 5000 + k, torch.float32)
            works.append(dist.all_reduce(t, async_op=True))
            tensors.append(t)
            calls.append(c)
        for w in reversed(works):
            w.wait()
        for k, (t, c) in enumerate(zip(tensors, calls)):
            expect(exact_equal(t, reduced(n, c, 5000 + k, torch.float32, "sum")), f"in flight {k}")
        fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
        expect(torch.equal(fut.wait()[0], torch.full((3,), float(n))), "future value")

    # PREMUL_SUM
    c = next_call()
    t = values(rank, c, 100, torch.float64)
    run(dist.all_reduce, t, op=dist._make_nccl_premul_sum(0.5))
    expect(exact_equal(t, reduced(n, c, 100, torch.float64, "sum") * 0.5), "premul_sum")

    # int16 and the unsigned dtypes; bitwise ops (BAND, BOR, BXOR) on every integer dtype and
    # bool, every bit in play; sizes rotated.
    bit_ops = {"band": dist.ReduceOp.BAND, "bor": dist.ReduceOp.BOR, "bxor": dist.ReduceOp.BXOR,
               "max": dist.ReduceOp.MAX}
    int_dtypes = (torch.int16, torch.uint16, torch.uint32, torch.uint64, torch.int8,
                  torch.uint8, torch.int32, torch.int64, torch.bool)
    for k, dtype in enumerate(int_dtypes):
        for j, (opname, op) in enumerate(bit_ops.items()):
            size = SIZES[(k + j) % len(SIZES)]
            c = next_call()
            t = bit_values(rank, c, size, dtype).to(dtype)
            run(dist.all_reduce, t, op=op)
            want = bits_reduced(n, c, size, dtype, opname)
            expect(torch.equal(t.to(torch.int64), want.to(dtype).to(torch.int64)),
                   f"all_reduce {dtype} {opname} {size}")
    for dtype in (torch.int16, torch.uint16, torch.uint32, torch.uint64):
        c = next_call()
        t = values(rank, c, 1003, torch.int64).abs().to(dtype)
        run(dist.all_reduce, t)
        want = sum(values(r, c, 1003, torch.int64).abs() for r in range(n))
        expect(torch.equal(t.to(torch.int64), want), f"all_reduce {dtype} sum")

    # Refusals with a clear message.
    try:
        dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BXOR)
        expect(False, "BXOR on float refused")
    except ValueError as e:
        expect("bitwise" in str(e) and "Float" in str(e), f"BXOR on float message: {e}")
    try:
        dist.all_reduce(torch.ones(4, dtype=torch.float8_e4m3fn))
        expect(False, "float8 refused")
    except (ValueError, RuntimeError) as e:
        expect("not supported" in str(e), f"float8 message: {e}")
    # complex SUM: torch views it as float pairs
    c = next_call()
    z = torch.complex(values(rank, c, 50, torch.float32), values(rank, c + 1, 50, torch.float32))
    run(dist.all_reduce, z)
    expect(exact_equal(z.real, reduced(n, c, 50, torch.float32, "sum")) and
           exact_equal(z.imag, reduced(n, c + 1, 50, torch.float32, "sum")), "complex64 sum")
    # recv from any source: rank 0 takes every other rank's two messages (one by recv, one by
    # irecv) in the order they come; each sender waits a random while first.
    c = next_call()
    if n > 1:
        if rank == 0:
            seen = {}
            for k in range(2 * (n - 1)):
                t = torch.full((37,), -1.0, dtype=torch.float64)
                if k % 2 == 0:
                    sender = dist.recv(t)
                else:
                    w = dist.irecv(t)
                    w.wait()
                    sender = w._source_rank()
                m = seen.get(sender, 0)
                seen[sender] = m + 1
                expect(exact_equal(t, values(sender, c + m, 37, torch.float64)),
                       f"recv from any source: message {m} of rank {sender}")
            expect(sorted(seen.items()) == [(r, 2) for r in range(1, n)],
                   f"recv from any source: senders {seen}")
        else:
            random.seed(1000 * rank + c)
            for m in range(2):
                time.sleep(random.random() * 0.02)
                dist.send(values(rank, c + m, 37, torch.float64), 0)
    next_call()

    # Non-contiguous tensors.
    c = next_call()
    base = values(rank, c, 6 * 8, torch.float32).reshape(6, 8)
    view = base.t()[:, ::2]  # 8 x 3, strided
    expected = reduced(n, c, 48, torch.float32, "sum").reshape(6, 8).t()[:, ::2]
    run(dist.all_reduce, view)
    expect(torch.equal(view, expected.float()), "non-contiguous all_reduce")
    expect(torch.equal(base.t()[:, 1::2],
                       values(rank, c, 48, torch.float32).reshape(6, 8).t()[:, 1::2]),
           "non-contiguous: elements outside the view untouched")

    # all_reduce_coalesced
    c1, c2 = next_call(), next_call()
    a, b = values(rank, c1, 33, torch.float32), values(rank, c2, 17, torch.float32).reshape(17, 1)
    run(dist.all_reduce_coalesced, [a, b])
    expect(exact_equal(a, reduced(n, c1, 33, torch.float32, "sum")) and
           exact_equal(b, reduced(n, c2, 17, torch.float32, "sum")), "all_reduce_coalesced")

    # ---- broadcast and reduce from every root, every dtype ----
    for root in range(n):
        for dtype in DTYPES:
            c = next_call()
            t = values(rank, c, 1001, dtype)
            run(dist.broadcast, t, src=root)
            expect(torch.equal(t, values(root, c, 1001, dtype)), f"broadcast {dtype} root {root}")
        for opname in ("sum", "max"):
            c = next_call()
            t = values(rank, c, 999, torch.int64, opname)
            run(dist.reduce, t, dst=root, op=OPS[opname])
            if rank == root:
                expect(exact_equal(t, reduced(n, c, 999, torch.int64, opname)), f"reduce root {root}")
            else:
                expect(torch.equal(t, values(rank, c, 999, torch.int64, opname)),
                       f"reduce: non-root {rank} tensor unchanged")

    # ---- all_gather: equal, uneven, into one tensor, coalesced ----
    for dtype in DTYPES:
        c = next_call()
        outs = [torch.empty(257, dtype=dtype) for _ in range(n)]
        run(dist.all_gather, outs, values(rank, c, 257, dtype))
        expect(all(torch.equal(outs[r], values(r, c, 257, dtype)) for r in range(n)),
               f"all_gather {dtype}")
    c = next_call()
    outs = [torch.empty(r * 3 + (r % 2) * 100) for r in range(n)]  # rank 0 sends nothing
    run(dist.all_gather, outs, values(rank, c, rank * 3 + (rank % 2) * 100, torch.float32))
    expect(all(torch.equal(outs[r], values(r, c, r * 3 + (r % 2) * 100, torch.float32))
               for r in range(n)), "all_gather uneven")
    c = next_call()
    out = torch.empty(n * 129, dtype=torch.int32)
    run(dist.all_gather_into_tensor, out, values(rank, c, 129, torch.int32))
    expect(torch.equal(out, torch.cat([values(r, c, 129, torch.int32) for r in range(n)])),
           "all_gather_into_tensor")
    c1, c2 = next_call(), next_call()
    lists = [[torch.empty(5), torch.empty(2, 3)] for _ in range(n)]
    run(dist.all_gather_coalesced, lists,
        [values(rank, c1, 5, torch.float32), values(rank, c2, 6, torch.float32).reshape(2, 3)])
    expect(all(torch.equal(lists[r][0], values(r, c1, 5, torch.float32)) and
               torch.equal(lists[r][1].reshape(-1), values(r, c2, 6, torch.float32))
               for r in range(n)), "all_gather_coalesced")

    # ---- gather and scatter from every root ----
    for root in range(n):
        c = next_call()
        outs = [torch.empty(300, dtype=torch.float64) for _ in range(n)] if rank == root else None
        run(dist.gather, values(rank, c, 300, torch.float64), gather_list=outs, dst=root)
        if rank == root:
            expect(all(torch.equal(outs[r], values(r, c, 300, torch.float64)) for r in range(n)),
                   f"gather root {root}")
        c = next_call()
        ins = [values(root * 100 + r, c, 77, torch.int16 if False else torch.int32) for r in range(n)]
        out = torch.empty(77, dtype=torch.int32)
        run(dist.scatter, out, scatter_list=ins if rank == root else None, src=root)
        expect(torch.equal(out, values(root * 100 + rank, c, 77, torch.int32)), f"scatter root {root}")

    # ---- reduce_scatter: list and tensor, every op ----
    for opname, op in OPS.items():
        dtype = torch.float64 if opname == "avg" else torch.int64
        c = next_call()
        full = values(rank, c, n * 64, dtype, opname)
        out = torch.empty(64, dtype=dtype)
        run(dist.reduce_scatter, out, list(full.chunk(n)), op=op)
        want = reduced(n, c, n * 64, dtype, opname)[rank * 64:(rank + 1) * 64]
        expect(exact_equal(out, want), f"reduce_scatter {opname}")
        c = next_call()
        full = values(rank, c, n * 65, dtype, opname)
        out = torch.empty(65, dtype=dtype)
        run(dist.reduce_scatter_tensor, out, full, op=op)
        want = reduced(n, c, n * 65, dtype, opname)[rank * 65:(rank + 1) * 65]
        expect(exact_equal(out, want), f"reduce_scatter_tensor {opname}")

    # ---- all_to_all: single (equal, uneven) and list ----
    c = next_call()
    rows = 3
    inp = values(rank, c, n * rows * 4, torch.float32).reshape(n * rows, 4)
    out = torch.empty_like(inp)
    run(dist.all_to_all_single, out, inp)
    want = torch.cat([values(r, c, n * rows * 4, torch.float32).reshape(n * rows, 4)
                      [rank * rows:(rank + 1) * rows] for r in range(n)])
    expect(torch.equal(out, want), "all_to_all_single equal")


    def split(src, dst):  # rows src sends to dst (zero for some pairs)
        return (src * 3 + dst * 5) % 4


    c = next_call()
    in_splits = [split(rank, d) for d in range(n)]
    out_splits = [split(s, rank) for s in range(n)]
    inp = values(rank, c, sum(in_splits) * 2, torch.int64).reshape(-1, 2)
    out = torch.empty(sum(out_splits), 2, dtype=torch.int64)
    run(dist.all_to_all_single, out, inp, out_splits, in_splits)
    parts = []
    for s in range(n):
        src_splits = [split(s, d) for d in range(n)]
        src = values(s, c, sum(src_splits) * 2, torch.int64).reshape(-1, 2)
        start = sum(src_splits[:rank])
        parts.append(src[start:start + src_splits[rank]])
    expect(torch.equal(out, torch.cat(parts)), "all_to_all_single uneven")

    c = next_call()
    ins = [values(rank * 50 + d, c, split(rank, d) + 1, torch.float32) for d in range(n)]
    outs = [torch.empty(split(s, rank) + 1) for s in range(n)]
    run(dist.all_to_all, outs, ins)
    expect(all(torch.equal(outs[s], values(s * 50 + rank, c, split(s, rank) + 1, torch.float32))
               for s in range(n)), "all_to_all list")

    # ---- point to point ----
    if n > 1:
        nxt, prv = (rank + 1) % n, (rank - 1) % n
        c = next_call()
        got = torch.empty(4099, dtype=torch.float64)
        if rank % 2 == 0:
            dist.send(values(rank, c, 4099, torch.float64), nxt)
            dist.recv(got, prv)
        else:
            dist.recv(got, prv)
            dist.send(values(rank, c, 4099, torch.float64), nxt)
        expect(torch.equal(got, values(prv, c, 4099, torch.float64)), "send/recv ring")
        c = next_call()
        big = 1 << 20  # large enough that unbatched exchanges could block
        got_p, got_n = torch.empty(big), torch.empty(big)
        ops = [dist.P2POp(dist.isend, values(rank, c, 100, torch.float32).repeat(big // 100 + 1)[:big], nxt),
               dist.P2POp(dist.isend, values(rank, c + 1, 100, torch.float32).repeat(big // 100 + 1)[:big], prv),
               dist.P2POp(dist.irecv, got_p, prv), dist.P2POp(dist.irecv, got_n, nxt)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        expect(torch.equal(got_p, values(prv, c, 100, torch.float32).repeat(big // 100 + 1)[:big]) and
               torch.equal(got_n, values(nxt, c + 1, 100, torch.float32).repeat(big // 100 + 1)[:big]),
               "batch_isend_irecv both neighbours")
        next_call()
        c = next_call()
        got = torch.empty(10, dtype=torch.int64)
        reqs = [dist.isend(values(rank, c, 10, torch.int64), nxt), dist.irecv(got, prv)]
        for r in reqs:
            r.wait()
        expect(torch.equal(got, values(prv, c, 10, torch.int64)), "isend/irecv small")
        # irecv before isend, each posted on its own (no batch), on every rank, large enough to
        # block a transfer that waits for its receiver: grouped when first waited for.
        c = next_call()
        want_p = values(prv, c, 100, torch.float32).repeat(big // 100 + 1)[:big]
        want_n = values(nxt, c + 1, 100, torch.float32).repeat(big // 100 + 1)[:big]
        got_p, got_n = torch.empty(big), torch.empty(big)
        reqs = [dist.irecv(got_p, prv), dist.irecv(got_n, nxt),
                dist.isend(values(rank, c, 100, torch.float32).repeat(big // 100 + 1)[:big], nxt),
                dist.isend(values(rank, c + 1, 100, torch.float32).repeat(big // 100 + 1)[:big], prv)]
        for r in reqs:
            r.wait()
        expect(torch.equal(got_p, want_p) and torch.equal(got_n, want_n),
               "irecv before isend, unbatched")
        next_call()
        # irecv before isend on every rank: as one batch (run one after the other, as with
        # NCCL, they would wait for each other)
        c = next_call()
        got = torch.empty(10, dtype=torch.int64)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, got, prv),
                                       dist.P2POp(dist.isend, values(rank, c, 10, torch.int64), nxt)])
        for r in reqs:
            r.wait()
        expect(torch.equal(got, values(prv, c, 10, torch.int64)), "batched irecv then isend")
        # With a peer reached before, an isend starts when posted: rank 0's isend to rank 1
        # completes rank 1's irecv while rank 0 sleeps before waiting for it (held until waited
        # for, rank 1 would wait the whole sleep).
        c = next_call()
        dist.barrier()
        if rank == 0:
            req = dist.isend(values(0, c, 4099, torch.float64), 1)
            time.sleep(1.5)
            req.wait()
        elif rank == 1:
            got = torch.empty(4099, dtype=torch.float64)
            t0 = time.monotonic()
            dist.irecv(got, 0).wait()
            took = time.monotonic() - t0
            expect(took < 1.0, f"isend to a reached peer started when posted (irecv took {took:.2f} s)")
            expect(torch.equal(got, values(0, c, 4099, torch.float64)), "isend to a reached peer")
        # First contacts on a new group: irecv before isend, each on its own, with both
        # neighbours on every rank (a cycle of first contacts: held and run as one group).
        fresh = dist.new_group(list(range(n)), backend="tutti")
        c = next_call()
        got_p, got_n = torch.empty(big), torch.empty(big)
        reqs = [dist.irecv(got_p, prv, group=fresh), dist.irecv(got_n, nxt, group=fresh),
                dist.isend(values(rank, c, 100, torch.float32).repeat(big // 100 + 1)[:big], nxt,
                           group=fresh),
                dist.isend(values(rank, c + 1, 100, torch.float32).repeat(big // 100 + 1)[:big], prv,
                           group=fresh)]
        for r in reqs:
            r.wait()
        expect(torch.equal(got_p, values(prv, c, 100, torch.float32).repeat(big // 100 + 1)[:big]) and
               torch.equal(got_n, values(nxt, c + 1, 100, torch.float32).repeat(big // 100 + 1)[:big]),
               "irecv before isend, unbatched, first contacts")
        next_call()
        dist.destroy_process_group(fresh)

    run(dist.barrier)

    # ---- sub-groups (every rank calls new_group, members use it) ----
    evens = list(range(0, n, 2))
    g = dist.new_group(evens, backend="tutti")
    c = next_call()  # on every rank: the call counter stays the same everywhere
    if rank in evens:
        t = values(rank, c, 500, torch.float32)
        run(dist.all_reduce, t, group=g)
        want = torch.stack([values(r, c, 500, torch.float32).double() for r in evens]).sum(0)
        expect(exact_equal(t, want), "new_group all_reduce")
        t = values(rank, c, 10, torch.int32)
        run(dist.broadcast, t, src=evens[-1], group=g)
        expect(torch.equal(t, values(evens[-1], c, 10, torch.int32)), "new_group broadcast")
    rev = list(reversed(range(n)))
    g2 = dist.new_group(rev, backend="tutti")  # torch sorts the ranks: group rank i is rank i
    c = next_call()
    outs = [torch.empty(3, dtype=torch.int64) for _ in range(n)]
    run(dist.all_gather, outs, values(rank, c, 3, torch.int64), group=g2)
    expect(all(torch.equal(outs[i], values(i, c, 3, torch.int64)) for i in range(n)),
           "new_group all_gather")

    # ---- torch 2.x: coalesced tensor collectives, monitored_barrier, functional collectives ----
    from torch.distributed.distributed_c10d import _coalescing_manager  # noqa: E402

    c1, c2 = next_call(), next_call()
    ins = [values(rank, c1, 33, torch.float32), values(rank, c2, 8, torch.int64)]
    outs = [torch.empty(33 * n, dtype=torch.float32), torch.empty(8 * n, dtype=torch.int64)]
    with _coalescing_manager(async_ops=ASYNC) as cm:  # allgather_into_tensor_coalesced
        for o, i in zip(outs, ins):
            dist.all_gather_into_tensor(o, i)
    if ASYNC:
        cm.wait()
    expect(torch.equal(outs[0], torch.cat([values(r, c1, 33, torch.float32) for r in range(n)])) and
           torch.equal(outs[1], torch.cat([values(r, c2, 8, torch.int64) for r in range(n)])),
           "all_gather_into_tensor coalesced")
    c1, c2 = next_call(), next_call()
    ins = [values(rank, c1, 5 * n, torch.float64), values(rank, c2, 7 * n, torch.int32)]
    outs = [torch.empty(5, dtype=torch.float64), torch.empty(7, dtype=torch.int32)]
    with _coalescing_manager(async_ops=ASYNC) as cm:  # reduce_scatter_tensor_coalesced
        for o, i in zip(outs, ins):
            dist.reduce_scatter_tensor(o, i)
    if ASYNC:
        cm.wait()
    expect(exact_equal(outs[0], reduced(n, c1, 5 * n, torch.float64, "sum")[rank * 5:rank * 5 + 5]) and
           exact_equal(outs[1], reduced(n, c2, 7 * n, torch.int32, "sum")[rank * 7:rank * 7 + 7]),
           "reduce_scatter_tensor coalesced")
    c = next_call()
    ts = [values(rank, c, 11, torch.float32), values(rank, c + 1000, 3, torch.float32)]
    with _coalescing_manager(async_ops=ASYNC) as cm:  # allreduce_coalesced
        for t in ts:
            dist.all_reduce(t)
    if ASYNC:
        cm.wait()
    expect(exact_equal(ts[0], reduced(n, c, 11, torch.float32, "sum")) and
           exact_equal(ts[1], reduced(n, c + 1000, 3, torch.float32, "sum")), "all_reduce coalesced")
    # torch's dist.monitored_barrier refuses every backend but gloo; the backend's own method runs.
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=30))
        expect(False, "dist.monitored_barrier was expected to refuse a non-gloo backend")
    except ValueError as e:
        expect("GLOO" in str(e), f"monitored_barrier refusal: {e}")
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    backend.monitored_barrier(timedelta(seconds=30), True)

    import torch.distributed._functional_collectives as funcol  # noqa: E402

    c = next_call()
    t = values(rank, c, 40, torch.float32)
    got = funcol.all_reduce(t, "sum", dist.group.WORLD)
    expect(exact_equal(got, reduced(n, c, 40, torch.float32, "sum")), "funcol all_reduce")
    c = next_call()
    got = funcol.all_gather_tensor(values(rank, c, 6, torch.float32), 0, dist.group.WORLD)
    expect(torch.equal(got, torch.cat([values(r, c, 6, torch.float32) for r in range(n)])),
           "funcol all_gather_tensor")
    c = next_call()
    got = funcol.reduce_scatter_tensor(values(rank, c, 4 * n, torch.float32), "sum", 0,
                                       dist.group.WORLD)
    expect(exact_equal(got, reduced(n, c, 4 * n, torch.float32, "sum")[rank * 4:rank * 4 + 4]),
           "funcol reduce_scatter_tensor")


    @torch.compile(backend="eager", fullgraph=True)
    def compiled_step(x):
        y = funcol.all_reduce(x * 2, "sum", dist.group.WORLD)
        return funcol.all_gather_tensor(y + 1, 0, dist.group.WORLD)


    c = next_call()
    got = compiled_step(values(rank, c, 5, torch.float32))
    want = (reduced(n, c, 5, torch.float64, "sum") * 2 + 1).float()
    expect(torch.equal(got, want.repeat(n)), "funcol inside torch.compile")

    # ---- objects ----
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": rank, "data": list(range(rank * 5))})
    expect(objs == [{"rank": r, "data": list(range(r * 5))} for r in range(n)], "all_gather_object")
    lst = [("hello", rank), {"k": [1, 2, 3]}] if rank == n - 1 else [None, None]
    dist.broadcast_object_list(lst, src=n - 1)
    expect(lst == [("hello", n - 1), {"k": [1, 2, 3]}], "broadcast_object_list")


def stream_order():
    """Asynchronous operations left in flight read what the ones before them wrote: copies in
    and out of non-contiguous tensors, a PREMUL_SUM scaling, a send of an all-reduce's result,
    all issued before any wait (the group's stream keeps them in order). Above the 64 KiB that
    run at submit when nothing is in flight."""
    c = next_call()
    base = values(rank, c, 96 * 160, torch.float64).reshape(96, 160)
    view = base.t()  # 160 x 96 (120 KiB), non-contiguous
    total = reduced(n, c, 96 * 160, torch.float64, "sum").reshape(96, 160).t()
    w1 = dist.all_reduce(view, op=dist._make_nccl_premul_sum(0.5), async_op=True)
    w2 = dist.all_reduce(view, async_op=True)  # n x (0.5 x total)
    gathered = torch.full((n * 160, 96), -1.0, dtype=torch.float64)
    w3 = dist.all_gather_into_tensor(gathered, view, async_op=True)
    w4 = dist.all_reduce(view, op=dist.ReduceOp.MAX, async_op=True)  # unchanged (all equal)
    w4.wait()
    for w in (w1, w2, w3):
        expect(w.is_completed(), "stream order: earlier works completed with the last")
    want = total * 0.5 * n
    expect(exact_equal(view, want), "stream order: chained all-reduces on a strided view")
    expect(exact_equal(gathered, want.repeat(n, 1)), "stream order: all-gather of the result")
    if n > 1:
        c = next_call()
        t = values(rank, c, 30000, torch.float32)
        got = torch.full((30000,), -1.0)
        works = [dist.all_reduce(t, async_op=True),
                 dist.isend(t, (rank + 1) % n), dist.irecv(got, (rank - 1) % n)]
        for w in reversed(works):
            w.wait()
        expect(exact_equal(got, reduced(n, c, 30000, torch.float32, "sum")),
               "stream order: a send issued after an all-reduce sends its result")


for mode in MODES:
    ASYNC = mode == "async"
    checks()
    if ASYNC:
        stream_order()
dist.barrier()
dist.destroy_process_group()
if failures:
    print(f"rank {rank}: {len(failures)} failure(s)", file=sys.stderr)
    sys.exit(1)
print(f"rank {rank}: all checks passed ({call} calls, {','.join(MODES)})")
