"""DDP communication hooks: an exact averaging hook and hooks over tutti's compressed
all-reduce (docs/compression.md).

    ddp.register_comm_hook(None, tutti.torch.hooks.allreduce_avg_hook)

averages each bucket with one all-reduce of op AVG: the division by the group size happens
inside the reduction, where DDP's default path divides the gradients in a pass of its own
(a pass over every gradient byte; gloo cannot offer AVG). With
`gradient_as_bucket_view=True` no bucket copies remain either.

    state = tutti.torch.hooks.CompressionState(compressor="topk:ratio=0.01")
    ddp.register_comm_hook(state, tutti.torch.hooks.compressed_hook)

Each bucket is all-reduced with tuttiAllReduceCompressed under its own key (bucket index +
state.key_base), so error feedback keeps one residual per bucket; the sum is divided by the
group size as DDP's default hook does. float32, float16 and bfloat16 buckets only.

The same two hooks in C++ (no Python per bucket, the work's own future):

    tutti.torch.hooks.register_avg_hook(ddp)
    tutti.torch.hooks.register_compressed_hook(ddp, state)

A DDP model takes one communication hook, Python or C++.
"""
import torch.distributed as dist

from . import _C, _group


class CompressionState:
    """compressor: "topk:ratio=0.01", "topk:k=6", "qsgd:s=4,b=512", "none", ...
    error_feedback: keep each bucket's compression error and add it to the next gradient.
    key_base: offsets the buckets' keys (two DDP models on one group need distinct bases)."""

    def __init__(self, compressor="topk:ratio=0.01", error_feedback=True, process_group=None,
                 key_base=0):
        self.compressor = compressor
        self.error_feedback = bool(error_feedback)
        self.process_group = process_group
        self.key_base = int(key_base)


def compressed_hook(state, bucket):
    """DDP comm hook: the bucket's gradients averaged through tutti's compressed all-reduce."""
    pg = _group(state.process_group)
    tensor = bucket.buffer()
    work = _C.allreduce_compressed(pg, tensor, state.compressor, state.key_base + bucket.index(),
                                   state.error_feedback)
    size = pg.size()

    def average(fut):
        return fut.value()[0].div_(size)

    return work.get_future().then(average)


def allreduce_avg_hook(process_group, bucket):
    """DDP comm hook: the bucket all-reduced with ReduceOp.AVG on the tutti group
    process_group (None: the default group). Same result as DDP's default hook."""
    pg = _group(process_group)
    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.AVG
    work = pg.allreduce([bucket.buffer()], opts)
    return work.get_future().then(lambda fut: fut.value()[0])


def topk(ratio=0.01, **kwargs):
    """A CompressionState for top-k with the given ratio (error feedback on by default)."""
    return CompressionState(f"topk:ratio={ratio}", **kwargs)


def qsgd(s=4, b=512, error_feedback=False, **kwargs):
    """A CompressionState for QSGD with s levels and blocks of b elements. QSGD is unbiased,
    so error feedback is off by default (with it, the digits example diverges at lr 0.5)."""
    return CompressionState(f"qsgd:s={s},b={b}", error_feedback=error_feedback, **kwargs)


def register_avg_hook(ddp, process_group=None):
    """Registers the AVG all-reduce hook in C++ on ddp (as allreduce_avg_hook; process_group
    None: ddp's own group)."""
    pg = _group(process_group if process_group is not None else ddp.process_group)
    ddp.logger._set_comm_hook_name("tutti.torch.hooks.register_avg_hook")
    _C.register_avg_hook(ddp.reducer, pg)


def register_compressed_hook(ddp, state):
    """Registers the compressed all-reduce hook in C++ on ddp (as compressed_hook with state;
    state.process_group None: ddp's own group)."""
    pg = _group(state.process_group if state.process_group is not None else ddp.process_group)
    ddp.logger._set_comm_hook_name("tutti.torch.hooks.register_compressed_hook")
    _C.register_compressed_hook(ddp.reducer, pg, state.compressor, state.key_base,
                                state.error_feedback)


__all__ = ["CompressionState", "allreduce_avg_hook", "compressed_hook", "register_avg_hook",
           "register_compressed_hook", "topk", "qsgd"]
