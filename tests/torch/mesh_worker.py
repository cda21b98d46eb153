"""One rank of the torch 2.x tests on DeviceMesh: FSDP2 and DTensor over a backend.
argv: backend ("tutti" or "gloo"), modes ("fsdp", "dtensor" or both as "fsdp,dtensor": run one
after the other in one process group), output path prefix (rank 0 saves what the test
compares to <prefix>.<mode>: the parameters after training, or the DTensor results).
Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT."""
import sys
import warnings

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

import tutti.torch  # noqa: F401  registers the backend

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

backend, modes, prefix = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
dist.init_process_group(backend)
rank, n = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)


def mlp():
    torch.manual_seed(1234)  # the same initial parameters on every rank and backend
    return torch.nn.Sequential(torch.nn.Linear(24, 64), torch.nn.Tanh(),
                               torch.nn.Linear(64, 48), torch.nn.Tanh(),
                               torch.nn.Linear(48, 5)).double()


def batch(step):
    g = torch.Generator().manual_seed(1000 * step + rank)  # distinct per rank and step
    x = torch.randn(16, 24, generator=g, dtype=torch.float64)
    y = torch.randint(0, 5, (16,), generator=g)
    return x, y


def run_fsdp(path):
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("cpu", (n,))
    model = mlp()
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(20):
        x, y = batch(step)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    full = torch.cat([p.full_tensor().reshape(-1) for p in model.parameters()])
    if rank == 0:
        torch.save(full, path)


def run_dtensor(path):
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    mesh = init_device_mesh("cpu", (2, n // 2), mesh_dim_names=("dp", "tp"))
    # Tensor-parallel two-layer MLP over "tp" (column- then row-wise), the same input on the
    # ranks of one tp group, a different one per dp group.
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 6)).double()
    reference = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 6)).double()
    reference.load_state_dict(model.state_dict())
    parallelize_module(model, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    dp = mesh["dp"].get_local_rank()
    x = torch.randn(5, 12, generator=torch.Generator().manual_seed(50 + dp), dtype=torch.float64)
    out = model(x)
    want = reference(x)
    ok_tp = torch.allclose(out, want, rtol=0, atol=1e-12)
    # Redistribute: a 2-D tensor sharded on dim 0 over dp and dim 1 over tp, then replicated.
    full = torch.arange(8 * 6, dtype=torch.float64).reshape(8, 6) * 1.5 - 7
    d = distribute_tensor(full, mesh, [Shard(0), Shard(1)])
    local_ok = torch.equal(d.to_local(), full.chunk(2, 0)[dp].chunk(n // 2, 1)[
        mesh["tp"].get_local_rank()])
    r = d.redistribute(mesh, [Replicate(), Replicate()])
    ok_rep = torch.equal(r.to_local(), full)
    s = r.redistribute(mesh, [Replicate(), Shard(0)])
    ok_back = torch.equal(s.to_local(), full.chunk(n // 2, 0)[mesh["tp"].get_local_rank()])
    flags = torch.tensor([ok_tp, local_ok, ok_rep, ok_back], dtype=torch.int64)
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    if rank == 0:
        torch.save(flags, path)
    if not bool(flags.all()):
        print(f"rank {rank}: tp {ok_tp} local {local_ok} replicate {ok_rep} back {ok_back}",
              file=sys.stderr)
        sys.exit(1)


for mode in modes:
    {"fsdp": run_fsdp, "dtensor": run_dtensor}[mode](prefix + "." + mode)
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank}: {','.join(modes)} done on {backend}")
