"""One rank of test_neighbor.py: tutti.torch.neighbor_allreduce over the one-peer
exponential graph (by name and as a Graph), the static exponential graph, float32 and float64,
against W built here from the graphs' definitions; the exact average after log2(n) calls;
refusals. Prints OK at the end."""
import os
import sys

import torch
import torch.distributed as dist

import tutti.torch as tt


def value(rank, call, count, dtype):
    e = torch.arange(count, dtype=torch.int64)
    h = (e * 7919 + rank * 104729 + call * 1299709) % 2001 - 1000
    return (h.to(torch.float64) / 64).to(dtype)


def one_peer_w(n, step):
    w = torch.zeros(n, n, dtype=torch.float64)
    if n == 1:
        w[0, 0] = 1
        return w
    k = step % ((n - 1).bit_length())
    for i in range(n):
        w[i, i] = 0.5
        w[i, (i - 2 ** k) % n] += 0.5
    return w


def exponential_w(n):
    K = (n - 1).bit_length()
    w = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        w[i, i] = 1.0 / (K + 1)
        for k in range(K):
            w[i, (i - 2 ** k) % n] = 1.0 / (K + 1)
    return w


def check(w, rank, n, call, count, dtype, got):
    xs = torch.stack([value(j, call, count, dtype).to(torch.float64) for j in range(n)])
    want = (w @ xs)[rank]
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    err = (got.to(torch.float64) - want).abs().max().item() if count else 0.0
    if err > tol:
        print(f"rank {rank}: call {call} differs by {err}", flush=True)
        sys.exit(1)


def main():
    dist.init_process_group("tutti")
    rank, n = dist.get_rank(), dist.get_world_size()
    call = 0
    # By name: the group's one-peer graph, kept across calls (its step advances).
    for step in range((n - 1).bit_length() + 1):
        t = value(rank, call, 1000, torch.float32)
        tt.neighbor_allreduce(t, graph="one_peer_exponential")
        check(one_peer_w(n, step), rank, n, call, 1000, torch.float32, t)
        call += 1
    # A Graph object, float64, a non-contiguous tensor.
    g = tt.Graph("exponential")
    col = torch.zeros(300, 2, dtype=torch.float64)
    col[:, 0] = value(rank, call, 300, torch.float64)
    view = col[:, 0]  # stride 2
    tt.neighbor_allreduce(view, graph=g)
    check(exponential_w(n), rank, n, call, 300, torch.float64, view)
    if col[:, 1].abs().max().item() != 0:
        print("neighbour bytes written outside the view", flush=True)
        sys.exit(1)
    if tt.last_algorithm() != "neighbor":
        print("last algorithm", tt.last_algorithm(), flush=True)
        sys.exit(1)
    call += 1
    # Exact average after log2(n) calls (n a power of two), asynchronously.
    if n & (n - 1) == 0:
        g1 = tt.Graph("one_peer_exponential")
        x = value(rank, call, 500, torch.float64)
        for _ in range((n - 1).bit_length()):
            tt.neighbor_allreduce(x, graph=g1, async_op=True).wait()
        mean = torch.stack([value(j, call, 500, torch.float64) for j in range(n)]).mean(0)
        if not torch.equal(x, mean):
            print(f"rank {rank}: not the exact average", flush=True)
            sys.exit(1)
    # Refusals.
    try:
        tt.neighbor_allreduce(torch.zeros(4, dtype=torch.int32), graph=g)
        print("int32 accepted", flush=True)
        sys.exit(1)
    except (ValueError, RuntimeError) as e:
        assert "float" in str(e), e
    try:
        tt.Graph("moebius")
        sys.exit(1)
    except ValueError as e:
        assert "unknown kind" in str(e), e
    dist.destroy_process_group()
    print("OK", flush=True)


if __name__ == "__main__":
    main()
