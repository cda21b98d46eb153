"""The "tutti" backend of torch.distributed.

``import tutti.torch`` registers it; then ``dist.init_process_group("tutti")`` and
``dist.new_group(ranks, backend="tutti")`` work. The communicator meets through the store
torch hands to the backend, so tutti opens no port of its own for the rendezvous.
See docs/pytorch.md.
"""
from datetime import timedelta

import torch
import torch.distributed as dist

from . import _C  # noqa: E402  (needs torch.distributed loaded)

__all__ = ["allreduce_compressed", "set_algorithm", "last_algorithm", "transports",
           "compression_stats", "ProcessGroupTutti"]

ProcessGroupTutti = _C.ProcessGroupTutti


def _create(store, rank, size, timeout):
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    return _C.ProcessGroupTutti(store, rank, size, seconds)


if "TUTTI" not in dist.Backend._plugins:
    dist.Backend.register_backend("tutti", _create)


def _group(group):
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not _C.is_tutti_group(pg):
        raise ValueError("tutti.torch: the group does not use the tutti backend")
    return pg


def allreduce_compressed(tensor, compressor="topk:ratio=0.01", key=0, error_feedback=True,
                         group=None, async_op=False):
    """Sum of decode(encode(tensor)) over the group's ranks, in place (tuttiAllReduceCompressed).

    compressor: "none", "topk:ratio=0.01", "qsgd:s=4,b=512", ... (docs/compression.md);
    key names the tensor (error-feedback residual and QSGD stream are kept per key)."""
    work = _C.allreduce_compressed(_group(group), tensor, compressor, int(key),
                                   bool(error_feedback))
    if async_op:
        return work
    work.wait()
    return None


def set_algorithm(spec, group=None):
    """Forces algorithms (TUTTI_ALGO syntax, e.g. "allreduce:ring"); "" restores automatic."""
    _C.set_algorithm(_group(group), spec or "")


def last_algorithm(group=None):
    return _C.last_algorithm(_group(group))


def transports(group=None):
    return _C.transports(_group(group))


def compression_stats(group=None):
    return _C.compression_stats(_group(group))
