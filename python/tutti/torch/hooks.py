"""DDP communication hooks over tutti's compressed all-reduce (docs/compression.md).

    state = tutti.torch.hooks.CompressionState(compressor="topk:ratio=0.01")
    ddp.register_comm_hook(state, tutti.torch.hooks.compressed_hook)

Each bucket is all-reduced with tuttiAllReduceCompressed under its own key (bucket index +
state.key_base), so error feedback keeps one residual per bucket; the sum is divided by the
group size as DDP's default hook does. float32, float16 and bfloat16 buckets only.
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


def topk(ratio=0.01, **kwargs):
    """A CompressionState for top-k with the given ratio (error feedback on by default)."""
    return CompressionState(f"topk:ratio={ratio}", **kwargs)


def qsgd(s=4, b=512, error_feedback=False, **kwargs):
    """A CompressionState for QSGD with s levels and blocks of b elements. QSGD is unbiased,
    so error feedback is off by default (with it, the digits example diverges at lr 0.5)."""
    return CompressionState(f"qsgd:s={s},b={b}", error_feedback=error_feedback, **kwargs)


__all__ = ["CompressionState", "compressed_hook", "topk", "qsgd"]
