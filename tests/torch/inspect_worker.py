"""tutti-inspect on a torch job (issue 71). Three ranks all-reduce in a loop; at call 30 rank
1 is late (3 s in Python, outside any call) while ranks 0 and 2 wait in call 30. Rank 0 starts
tutti-inspect in the background just before that call; afterwards it checks that the verdict
names rank 1 as behind (between calls, after call 29) and ranks 0 and 2 as waiting for it in
an all-reduce, and that --latency lists the all-reduces. Every result is checked.
argv[1]: the job file directory (TUTTI_INSPECT_DIR), argv[2]: the tutti-inspect binary."""
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401

job_dir, inspect_bin = sys.argv[1], sys.argv[2]
dist.init_process_group("tutti")
rank, n = dist.get_rank(), dist.get_world_size()
probe = None
for k in range(1, 41):
    if k == 30 and rank == 1:
        time.sleep(3.0)
    if k == 30 and rank == 0:
        probe = subprocess.Popen(
            ["sh", "-c", f"sleep 1.8; exec {inspect_bin} --dir {job_dir} --latency"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    x = torch.arange(1000, dtype=torch.float32) + 1000 * rank + k
    dist.all_reduce(x)
    want = torch.arange(1000, dtype=torch.float32) * n + 1000 * (n * (n - 1) // 2) + n * k
    if not torch.equal(x, want):
        sys.exit(f"rank {rank}: call {k} summed wrong")
if rank == 0:
    out, _ = probe.communicate(timeout=30)
    want = ["rank 1 is behind: between calls",
            "allreduce(count 1000, float, sum) #29",
            "ranks 0, 2 wait in allreduce(count 1000, float, sum) #30 for rank 1",
            "allreduce 2 KiB-4 KiB"]
    missing = [w for w in want if w not in out]
    if probe.returncode != 1 or missing:
        sys.exit(f"tutti-inspect exited {probe.returncode}, missing {missing}:\n{out}")
dist.destroy_process_group()
