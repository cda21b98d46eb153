"""DDP (and ZeroRedundancyOptimizer) on a float64 MLP for a few steps with the backend of
argv[1]; rank 0 saves the final parameters of each kind to argv[2] + "." + kind. With float64
and small integer-ish data the result does not depend on the order of the gradient sums beyond
~1e-12. argv[3]: kinds separated by commas, run one after the other in one process group:
"ddp", "zero", "avg_hook" (DDP with gradient_as_bucket_view and, on tutti,
tutti.torch.hooks.allreduce_avg_hook; gloo runs plain DDP for the reference)."""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti.torch
import tutti.torch.hooks

backend, out_path, kinds = sys.argv[1], sys.argv[2], sys.argv[3]
dist.init_process_group(backend, timeout=timedelta(seconds=120))
rank, n = dist.get_rank(), dist.get_world_size()


def train(kind):
    torch.manual_seed(1234)  # the same initial model on every rank (DDP broadcasts it anyway)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 10)).double()
    ddp = DDP(model, bucket_cap_mb=0.01,  # several buckets
              gradient_as_bucket_view=(kind == "avg_hook"))
    if kind == "avg_hook" and backend == "tutti":
        ddp.register_comm_hook(None, tutti.torch.hooks.allreduce_avg_hook)
    if kind == "zero":
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(99 + rank)  # each rank its own batches
    for step in range(8):
        x = torch.randn(16, 32, generator=gen, dtype=torch.float64)
        y = torch.randint(0, 10, (16,), generator=gen)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
    if kind == "zero":
        opt.consolidate_state_dict(to=0)
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    if rank == 0:
        torch.save(params, out_path + "." + kind)
    return loss


for kind in kinds.split(","):
    loss = train(kind)
    print(f"rank {rank}: {kind} done, loss {loss.item():.6f}")
dist.barrier()
dist.destroy_process_group()
