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
           "compression_stats", "dump_trace", "dump_fr_trace", "agree_failed_ranks", "ProcessGroupTutti", "Graph", "neighbor_allreduce"]

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


# tutti's operation names as torch 2.13's fr_trace knows them (its COLLECTIVES and P2P sets).
_FR_TRACE_NAMES = {"all_gather_base": "_all_gather_base",
                   "reduce_scatter_base": "_reduce_scatter_base",
                   "all_reduce_coalesced": "allreduce_coalesced",
                   "all_gather_coalesced": "all_gather", "all_to_all_list": "all_to_all",
                   "all_reduce_compressed": "all_reduce", "neighbor_allreduce": "all_reduce"}


def dump_fr_trace(path=None, for_fr_trace=False):
    """The process's tutti operations in torch's flight-recorder dump format (the pickle
    torch._C._distributed_c10d._dump_fr_trace writes for gloo and nccl: version, pg_config,
    pg_status, entries with sequence numbers, shapes, dtypes, state and times). Written to
    ``path`` when given, else returned as bytes. Keeps the last TORCH_FR_BUFFER_SIZE operations
    (torch's variable; default 2000, 0: none recorded).

    for_fr_trace: name the operations as torch's analyser
    (``python -m torch.distributed.flight_recorder.fr_trace DIR``) requires: torch 2.13's
    accepts only the backends it lists (nccl, gloo, ...), so the names become "gloo:<op>" with
    its operation names; ``comm_lib_version`` still says "tutti"."""
    import pickle
    import torch.distributed.distributed_c10d as c10d
    dump = pickle.loads(torch._C._distributed_c10d._dump_fr_trace(True, False, False))
    dump["comm_lib_version"] = "tutti"
    entries = _C.flight_recorder_entries()
    if for_fr_trace:
        for e in entries:
            op = e["profiling_name"].split(":", 1)[-1]
            e["profiling_name"] = "gloo:" + _FR_TRACE_NAMES.get(op, op)
    pg_config, pg_status = {}, {}
    for pg in list(c10d._world.pg_names):
        if not _C.is_tutti_group(pg):
            continue
        name = c10d._world.pg_names[pg]
        pg_config[name] = {"name": name, "desc": pg.group_desc,
                           "ranks": str(dist.get_process_group_ranks(pg))}
        pg_id = _C.recorder_pg_id(pg)
        mine = [e for e in entries if e["pg_id"] == pg_id and not e["is_p2p"]]

        def last(state):
            return max((e["collective_seq_id"] for e in mine if state(e)), default=-1)
        pg_status[str(pg_id)] = {
            "last_enqueued_collective": last(lambda e: True),
            "last_started_collective": last(lambda e: e["state"] != "scheduled"),
            "last_completed_collective": last(lambda e: e["state"] == "completed"),
        }
    dump.update(pg_config=pg_config, pg_status=pg_status, entries=entries)
    data = pickle.dumps(dump)
    if path is None:
        return data
    with open(path, "wb") as f:
        f.write(data)
    return None


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
