"""DDP (and ZeroRedundancyOptimizer) on a float64 MLP for a few steps with the backend of
argv[1]; rank 0 saves the final parameters of each kind to argv[2] + "." + kind. With float64
and small integer-ish data the result does not depend on the order of the gradient sums beyond
~1e-12. argv[3]: kinds separated by commas, run one after the other in one process group:
"ddp", "zero", "avg_hook" (DDP with gradient_as_bucket_view and, on tutti,
tutti.torch.hooks.allreduce_avg_hook; gloo runs plain DDP for the reference), "cpp_avg_hook"
(the same through the C++ hook, register_avg_hook); on tutti only, in float32, the compressed
hooks in Python and in C++: "topk_py", "topk_cpp", "qsgd_py", "qsgd_cpp" (each pair must end
with the same parameters, bit for bit)."""
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
    compressed = kind.startswith(("topk", "qsgd"))
    dtype = torch.float32 if compressed else torch.float64
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 10)).to(dtype)
    # The compressed hooks on a fresh group each: the same keys, residuals and random
    # streams for the Python and the C++ hook of a pair.
    group = dist.new_group(list(range(n)), backend="tutti") if compressed else None
    ddp = DDP(model, bucket_cap_mb=0.01,  # several buckets
              gradient_as_bucket_view=kind in ("avg_hook", "cpp_avg_hook"), process_group=group)
    if kind == "avg_hook" and backend == "tutti":
        ddp.register_comm_hook(None, tutti.torch.hooks.allreduce_avg_hook)
    if kind == "cpp_avg_hook" and backend == "tutti":
        tutti.torch.hooks.register_avg_hook(ddp)
    if compressed:
        state = (tutti.torch.hooks.topk(0.05, process_group=group)
                 if kind.startswith("topk") else
                 tutti.torch.hooks.qsgd(4, 64, process_group=group))
        if kind.endswith("_cpp"):
            tutti.torch.hooks.register_compressed_hook(ddp, state)
        else:
            ddp.register_comm_hook(state, tutti.torch.hooks.compressed_hook)
    if kind == "zero":
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(99 + rank)  # each rank its own batches
    for step in range(8):
        x = torch.randn(16, 32, generator=gen, dtype=torch.float64).to(dtype)
        y = torch.randint(0, 10, (16,), generator=gen)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
    if kind == "cpp_avg_hook" and backend == "tutti":
        # The C++ hook ran: the buckets' all-reduces were AVG (DDP's own path sums).
        last = tutti.torch.dump_trace().strip().splitlines()[-1]
        assert "allreduce(" in last and ", avg)" in last, last
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
