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
           "compression_stats", "dump_trace", "agree_failed_ranks", "ProcessGroupTutti", "Graph", "neighbor_allreduce"]

ProcessGroupTutti = _C.ProcessGroupTutti


def _create(dist_opts, backend_opts=None):
    """The creator torch calls (extended API): a tutti communicator over the group's store."""
    timeout = dist_opts.timeout
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    return _C.ProcessGroupTutti(dist_opts.store, dist_opts.group_rank, dist_opts.group_size,
                                seconds)


if "TUTTI" not in dist.Backend._plugins:
    dist.Backend.register_backend("tutti", _create, extended_api=True, devices=["cpu"])


def _register_shrunk_as_custom():
    """torch 2.13's shrink_group registers the new backend as GLOO on CPU (NCCL on CUDA),
    whatever it is; DDP's logger then treats tutti's backend as ProcessGroupGloo and crashes
    reading gloo's fields. The shrunk group's tutti backend is registered as a CUSTOM backend
    instead, as init_process_group and new_group register it."""
    c10d = dist.distributed_c10d
    make = getattr(c10d, "_create_shrunk_process_group", None)
    if make is None or getattr(make, "_tutti", False):
        return

    def create(new_backend, *args, **kwargs):
        pg = make(new_backend, *args, **kwargs)
        if isinstance(new_backend, _C.ProcessGroupTutti):
            custom = dist.ProcessGroup.BackendType.CUSTOM
            pg._register_backend(torch.device("cpu"), custom, new_backend)
            pg._set_default_backend(custom)
        return pg

    create._tutti = True
    c10d._create_shrunk_process_group = create


_register_shrunk_as_custom()


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


def dump_trace(path=None, group=None):
    """The group's flight recorder (tuttiCommDumpTrace): its last 64 calls with number, call,
    algorithm, state and times, oldest first. Appended to the file at path, or returned as a
    string when path is None. Works on a failed group too."""
    pg = _group(group)
    if path is not None:
        _C.dump_trace(pg, str(path))
        return None
    import tempfile
    with tempfile.NamedTemporaryFile("r", prefix="tutti-trace-", suffix=".txt") as f:
        _C.dump_trace(pg, f.name)
        return f.read()


def agree_failed_ranks(group=None):
    """The group's failed ranks, the same sorted list on every live rank
    (tuttiCommAgreeFailedRanks): collective over the live ranks of the group, on a healthy or a
    failed group. Pass the list to ``torch.distributed.shrink_group``."""
    return _C.agree_failed_ranks(_group(group))


def compression_stats(group=None):
    return _C.compression_stats(_group(group))


_GRAPH_KINDS = {"ring": 0, "torus": 1, "grid": 2, "hypercube": 3, "exponential": 4,
                "one_peer_exponential": 5}


class Graph:
    """A neighbour-averaging graph over a group's ranks (tuttiGraphCreate; collective).

    kind: "ring", "torus", "grid", "hypercube", "exponential" (static exponential-2) or
    "one_peer_exponential" (dynamic: one peer per call, the exact average after log2(n)
    calls); rows: rows of the torus / grid (0: the squarest); hierarchical: exact average
    inside each host, the graph between hosts. docs/decentralized.md."""

    def __init__(self, kind="one_peer_exponential", group=None, rows=0, hierarchical=False):
        if kind not in _GRAPH_KINDS:
            raise ValueError("tutti.torch.Graph: unknown kind %r (one of %s)"
                             % (kind, ", ".join(sorted(_GRAPH_KINDS))))
        self.kind = kind
        self._pg = _group(group)
        self._handle = _C.make_graph(self._pg, _GRAPH_KINDS[kind], int(rows), bool(hierarchical))


_graphs = {}  # (group, kind) -> Graph made from a name


def neighbor_allreduce(tensor, graph="one_peer_exponential", group=None, async_op=False):
    """tensor <- W_ii tensor + sum over in-neighbours j of W_ij tensor_j, in place
    (tuttiNeighborAllReduce). graph: a Graph, or a kind name (the group's graph of that kind,
    made at the first call and kept, so the dynamic graph advances from call to call)."""
    pg = _group(group)
    if isinstance(graph, str):
        key = (id(pg), graph)
        if key not in _graphs:
            _graphs[key] = Graph(graph, group=pg)
        graph = _graphs[key]
    if not isinstance(graph, Graph):
        raise TypeError("tutti.torch.neighbor_allreduce: graph must be a Graph or a kind name")
    if graph._pg is not pg:
        raise ValueError("tutti.torch.neighbor_allreduce: the graph belongs to another group")
    work = _C.neighbor_allreduce(pg, tensor, graph._handle)
    if async_op:
        return work
    work.wait()
    return None
