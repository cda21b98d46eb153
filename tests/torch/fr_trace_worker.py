"""tutti.torch.dump_fr_trace: torch's flight-recorder format. Three ranks run a few operations
(all-reduce, all-gather, send/recv), then ranks 0 and 1 start one more all-reduce that rank 2
never joins; each rank dumps while that is in flight. The dump lists the operations with
sequence numbers, shapes, dtypes and states (the last one "started", not completed, on ranks 0
and 1), and torch's own analyser (fr_trace) reads the three dumps. argv[1]: the dump directory."""
import os
import pickle
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch

out_dir = sys.argv[1]
dist.init_process_group("tutti")
rank, n = dist.get_rank(), dist.get_world_size()
fail = []
dist.all_reduce(torch.ones(5, 3) * rank)
outs = [torch.zeros(7) for _ in range(n)]
dist.all_gather(outs, torch.full((7,), float(rank)))
if rank == 0:
    dist.send(torch.ones(2, 2), dst=1)
elif rank == 1:
    dist.recv(torch.zeros(2, 2), src=0)
dist.barrier()
pending = None
if rank != 2:
    pending = dist.all_reduce(torch.ones(1 << 17, dtype=torch.float64), async_op=True)
    time.sleep(0.5)
data = tutti.torch.dump_fr_trace()
tutti.torch.dump_fr_trace(os.path.join(out_dir, f"tutti_fr_{rank}"), for_fr_trace=True)
dump = pickle.loads(data)
entries = [e for e in dump["entries"] if e["process_group"][0] == "0"]
names = [e["profiling_name"] for e in entries]
want = ["tutti:all_reduce", "tutti:all_gather"] + (["tutti:send 0->1"] if rank == 0 else []) + \
       (["tutti:recv 1<-0"] if rank == 1 else []) + ["tutti:barrier"] + \
       (["tutti:all_reduce"] if rank != 2 else [])
if names != want:
    fail.append(f"names {names} want {want}")
else:
    if entries[0]["input_sizes"] != [[5, 3]] or entries[0]["input_dtypes"] != ["Float"]:
        fail.append(f"first entry shapes {entries[0]['input_sizes']} {entries[0]['input_dtypes']}")
    colls = [e["collective_seq_id"] for e in entries if not e["is_p2p"]]
    if colls != list(range(1, len(colls) + 1)):
        fail.append(f"collective sequence {colls}")
    done = [e["state"] for e in entries[:-1]] if rank != 2 else [e["state"] for e in entries]
    if any(s != "completed" for s in done):
        fail.append(f"states {done}")
    if rank != 2 and entries[-1]["state"] == "completed":
        fail.append("the all-reduce rank 2 never joined is completed")
    if dump["pg_config"]["0"]["ranks"] != str(list(range(n))):
        fail.append(f"pg_config {dump['pg_config']}")
    status = dump["pg_status"][str(entries[0]["pg_id"])]
    if status["last_enqueued_collective"] != colls[-1]:
        fail.append(f"pg_status {status}")
print(f"rank {rank}: {'; '.join(fail) or 'ok'}", flush=True)
# Rank 2 now joins so that every rank leaves cleanly.
if rank == 2:
    time.sleep(1)
    dist.all_reduce(torch.ones(1 << 17, dtype=torch.float64))
else:
    pending.wait()
dist.destroy_process_group()
sys.exit(1 if fail else 0)
