"""Sparse all-reduce (sum) as gloo does it: inputs distinct per rank and call, one rank with no
entries, duplicate (uncoalesced) indices, a dense part per entry; the result checked against a
dense sum computed here; an embedding with sparse gradients under DDP matches the same model
trained alone on the whole batch; tensors of different sizes are refused on every rank."""
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn

import tutti.torch  # noqa: F401

warnings.filterwarnings("ignore", message="Sparse invariant")
dist.init_process_group("tutti")
rank, n = dist.get_rank(), dist.get_world_size()
fail = []


def entries(r, call):
    """Rank r's entries in call `call`: (indices [2, nnz], values [nnz, 3]); rank 1 has none
    in call 1; indices repeat within a rank (uncoalesced)."""
    if r == 1 and call == 1:
        return torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 3)
    g = torch.Generator().manual_seed(1000 * call + r)
    nnz = 3 + r + call
    idx = torch.stack([torch.randint(0, 6, (nnz,), generator=g),
                       torch.randint(0, 4, (nnz,), generator=g)])
    idx[:, -1] = idx[:, 0]  # a duplicate
    return idx, torch.randn(nnz, 3, generator=g, dtype=torch.float64).float()


for call in range(3):
    idx, val = entries(rank, call)
    t = torch.sparse_coo_tensor(idx, val, (6, 4, 3))
    want = torch.zeros(6, 4, 3, dtype=torch.float64)
    for r in range(n):
        i, v = entries(r, call)
        for k in range(i.shape[1]):
            want[i[0, k], i[1, k]] += v[k].double()
    work = dist.all_reduce(t, async_op=(call == 2))
    if work is not None:
        work.wait()
    if not t.is_sparse:
        fail.append(f"call {call}: the result is not sparse")
    elif not torch.allclose(t.to_dense().double(), want, rtol=1e-6, atol=1e-6):
        fail.append(f"call {call}: wrong sum, max error "
                    f"{(t.to_dense().double() - want).abs().max().item()}")

# DDP with sparse gradients against one process training on every rank's batch.
torch.manual_seed(7)
model = nn.Sequential(nn.EmbeddingBag(50, 8, mode="sum", sparse=True))
alone = nn.Sequential(nn.EmbeddingBag(50, 8, mode="sum", sparse=True))
alone.load_state_dict(model.state_dict())
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
opt_alone = torch.optim.SGD(alone.parameters(), lr=0.1)
for step in range(3):
    batches = [torch.randint(0, 50, (4, 5), generator=torch.Generator().manual_seed(step * 10 + r))
               for r in range(n)]
    opt.zero_grad()
    ddp(batches[rank]).sum().backward()
    opt.step()
    opt_alone.zero_grad()
    (sum(alone(b).sum() for b in batches) / n).backward()
    opt_alone.step()
if not torch.allclose(model[0].weight, alone[0].weight, atol=1e-5):
    fail.append("DDP with sparse gradients differs from training alone")

bad = torch.sparse_coo_tensor(torch.zeros(2, 1, dtype=torch.long), torch.ones(1, 3),
                              (6, 4 + (rank == 0), 3))
try:
    dist.all_reduce(bad)
    fail.append("tensors of different sizes were not refused")
except (RuntimeError, ValueError) as e:
    if "differs" not in str(e):
        fail.append(f"refusal text: {e}")
try:
    dist.all_reduce(torch.sparse_coo_tensor(torch.zeros(1, 1, dtype=torch.long), torch.ones(1),
                                            (3,)), op=dist.ReduceOp.MAX)
    fail.append("MAX on a sparse tensor was not refused")
except (RuntimeError, ValueError) as e:
    if "SUM" not in str(e):
        fail.append(f"MAX refusal text: {e}")
x = torch.arange(4.0) + rank
dist.all_reduce(x)  # the group still works
if not torch.equal(x, torch.arange(4.0) * n + n * (n - 1) / 2):
    fail.append(f"dense all-reduce after the refusals: {x}")
dist.destroy_process_group()
if fail:
    print(f"rank {rank}: " + "; ".join(fail), file=sys.stderr)
    sys.exit(1)
print(f"rank {rank}: ok")
