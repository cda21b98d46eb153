"""Recovery in a training job: DDP trains the digits model (examples/ddp_digits.py's set-up)
on n ranks; the victim is killed (SIGKILL) at step KILL_AT; the survivors' step fails with a
RuntimeError naming it, they agree on the failed ranks (tutti.torch.agree_failed_ranks),
shrink the default group (torch.distributed.shrink_group over tuttiCommShrink), wrap the model
in DDP again on the smaller group and finish the training: the same parameters on every
survivor (compared bitwise), a training loss well below the one at the failure and the test
accuracy of a finished run. argv: victim [steps]."""
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti.torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
from ddp_digits import load  # noqa: E402

KILL_AT = 50


def regularised_loss(model, xs, ys):
    with torch.no_grad():
        w2 = model.weight.pow(2).sum() + model.bias.pow(2).sum()
        return nn.functional.cross_entropy(model(xs), ys).item() + 0.5e-4 * w2.item()


def recover(rank, victim, error):
    """After the failed step: agree, shrink the default group. Returns the new group."""
    if f"rank {victim}" not in str(error):
        print(f"rank {rank}: the error does not name rank {victim}: {error}", file=sys.stderr)
        sys.exit(4)
    failed = tutti.torch.agree_failed_ranks()
    if failed != [victim]:
        print(f"rank {rank}: agreed on {failed}, not [{victim}]", file=sys.stderr)
        sys.exit(5)
    return dist.shrink_group(failed)  # becomes the default group


def main():
    victim = int(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    dist.init_process_group("tutti", timeout=timedelta(seconds=30))
    rank, n = dist.get_rank(), dist.get_world_size()
    xs, ys, xte, yte = load(os.path.join(HERE, "..", "data", "digits.csv.gz"))
    torch.manual_seed(0)
    model = nn.Linear(64, 10)
    nn.init.zeros_(model.weight)
    nn.init.zeros_(model.bias)
    per = len(ys) // n
    mine_x, mine_y = xs[rank * per:(rank + 1) * per], ys[rank * per:(rank + 1) * per]
    gen = torch.Generator().manual_seed(0x5EED + 104729 * rank)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5, weight_decay=1e-4)
    step, survivors, loss_at_failure = 0, n, None
    while step < steps:
        if rank == victim and step == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)
        idx = torch.randint(0, per, (32,), generator=gen)
        opt.zero_grad()
        try:
            nn.functional.cross_entropy(ddp(mine_x[idx]), mine_y[idx]).backward()
        except RuntimeError as e:
            if survivors != n:
                raise  # one failure is planned, not two
            start = time.monotonic()
            survivors = recover(rank, victim, e).size()
            loss_at_failure = regularised_loss(model, xs, ys)
            ddp = DDP(model)  # the failed step's gradient is dropped: the step is redone
            opt = torch.optim.SGD(ddp.parameters(), lr=0.5, weight_decay=1e-4)
            print(f"rank {rank}: step {step} failed, shrunk to {survivors} ranks (now rank "
                  f"{dist.get_rank()}) in {time.monotonic() - start:.2f} s")
            continue
        opt.step()
        step += 1
    if survivors != n - 1 or dist.get_world_size() != n - 1:
        print(f"rank {rank}: finished with {survivors} ranks, not {n - 1}", file=sys.stderr)
        sys.exit(6)
    # Every survivor holds the same parameters (DDP averaged the same gradients).
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).double()
    gathered = [torch.zeros_like(flat) for _ in range(n - 1)]
    dist.all_gather(gathered, flat)
    if not all(torch.equal(g, flat) for g in gathered):
        print(f"rank {rank}: the survivors' parameters differ", file=sys.stderr)
        sys.exit(7)
    loss = regularised_loss(model, xs, ys)
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    print(f"rank {rank}: loss {loss_at_failure:.4f} at the failure, {loss:.4f} at the end; "
          f"test accuracy {acc:.4f}")
    dist.destroy_process_group()
    # Trained on after the shrink: the loss fell by half and more; the accuracy of a finished
    # run (ddp_digits.py reaches 0.97 with this set-up at 4 ranks and no failure).
    sys.exit(0 if loss <= 0.5 * loss_at_failure and acc >= 0.95 else 8)


if __name__ == "__main__":
    main()
