// Every environment variable tutti reads, declared exactly once. Keep sorted by subsystem.
// docs/env.md is generated from this table (tutti-info --env-markdown).
#include "common/env.h"

namespace tutti::env {

namespace {
constexpr Var kVars[] = {
    // ---- logging ----
    {"TUTTI_DEBUG", Type::kString, "WARN", "INIT",
     "Log level: NONE, ERROR, WARN, INFO, TRACE. Any other value is reported by a warning "
     "and logging stays at WARN."},
    {"TUTTI_DEBUG_SUBSYS", Type::kString, "ALL", "INIT",
     "Comma-separated subsystems to log (INIT, BOOTSTRAP, TOPO, TRANSPORT, ALGO, TUNING, "
     "COLL, P2P, COMPRESS, EXEC, PERF, ALL); a leading ^ excludes the listed ones. Unknown "
     "names are reported by a warning and ignored. COLL and P2P print every collective and "
     "send/recv call with its arguments, ALGO the algorithm a call runs and why, EXEC (at "
     "TRACE) each executed schedule, PERF calls, bytes and time per call at "
     "tuttiCommDestroy; docs/logging.md says what every subsystem prints."},
    {"TUTTI_DEBUG_FILE", Type::kString, "", "INIT",
     "Write log lines to this file instead of stderr; %h expands to the host name, %p to "
     "the pid."},
    // ---- bootstrap / launch ----
    {"TUTTI_TIMEOUT", Type::kDouble, "60", "BOOTSTRAP",
     "Seconds any wait (rendezvous, connection, transfer without progress) may last before "
     "it fails with tuttiTimeout naming the peer(s). Must be > 0: 0, negative values and nan "
     "are tuttiInvalidArgument at init; inf waits without limit."},
    {"TUTTI_RANK", Type::kInt, "", "BOOTSTRAP", "This process's rank (set by tuttirun)."},
    {"TUTTI_WORLD_SIZE", Type::kInt, "", "BOOTSTRAP", "Number of ranks (set by tuttirun)."},
    {"TUTTI_LOCAL_RANK", Type::kInt, "", "BOOTSTRAP", "Rank among the ranks of this host."},
    {"TUTTI_ADDR", Type::kString, "", "BOOTSTRAP",
     "Rendezvous address host:port of the TCP store (rank 0 listens there)."},
    {"TUTTI_PORT", Type::kString, "", "BOOTSTRAP",
     "Port of tutti's rendezvous under torchrun-style variables (default MASTER_PORT + 1: "
     "torch's store holds MASTER_PORT) and under Slurm without PMIx (default: the step's "
     "first reserved port, else one derived from the job and step ids)."},
    {"TUTTI_SECRET", Type::kString, "", "BOOTSTRAP",
     "Hex secret (32 digits) clients must present to the TCP store; set by tuttirun."},
    {"TUTTI_STORE_FILE", Type::kString, "", "BOOTSTRAP",
     "Directory of a file store to rendezvous through instead of TCP."},
    {"TUTTI_BOOTSTRAP_RING", Type::kBool, "1", "BOOTSTRAP",
     "All-gathers of the bootstrap go around a TCP ring of the ranks (one store request per "
     "rank); 0: through the store (nranks - 1 GETs per rank at rank 0's store). A caller's "
     "store (tuttiCommInitRankStore, the torch backend) or a file store always goes through "
     "the store: no port is opened."},
    {"TUTTI_BOOTSTRAP_IFNAME", Type::kString, "", "BOOTSTRAP",
     "Interface whose address tuttiGetUniqueId and a PMIx launch advertise (default: first "
     "non-loopback, else loopback)."},
    {"TUTTI_HOSTID", Type::kString, "", "BOOTSTRAP",
     "Override of the host identity; ranks with equal ids are on one host. Default: boot "
     "id + network namespace."},
    // ---- transports ----
    {"TUTTI_TRANSPORT", Type::kString, "", "TRANSPORT",
     "Force one transport for every peer: shm, tcp, ibverbs, cuda_ipc."},
    {"TUTTI_SHM_DISABLE", Type::kBool, "0", "TRANSPORT", "Never use the shm transport."},
    {"TUTTI_TCP_DISABLE", Type::kBool, "0", "TRANSPORT",
     "Never use the tcp transport (jobs across hosts then need ibverbs)."},
    {"TUTTI_IB_DISABLE", Type::kBool, "0", "TRANSPORT", "Never use the ibverbs transport."},
    {"TUTTI_CUDA_IPC_DISABLE", Type::kBool, "0", "TRANSPORT", "Never use the cuda_ipc transport."},
    {"TUTTI_CUDA_IPC_ENABLE", Type::kBool, "0", "TRANSPORT",
     "Use cuda_ipc between same-host ranks that both have a GPU. Off by default: the executor "
     "still hands transports host buffers (device buffers are staged), for which shm is faster."},
    {"TUTTI_CUDA_IPC_P2P", Type::kBool, "1", "TRANSPORT",
     "0: skip cuda_ipc's device-memory FIFO (IPC handles + P2P self-test) and stage every pair "
     "through shared host memory."},
    {"TUTTI_CUDA_IPC_CHUNK_BYTES", Type::kInt, "1048576", "TRANSPORT",
     "Bytes per cuda_ipc FIFO slot (4 slots per peer and direction)."},
    {"TUTTI_CUDA_DIRECT", Type::kBool, "0", "COLL",
     "1: all-reduce on CUDA device buffers of ranks on one host runs on the device (one- or "
     "two-shot through IPC-mapped scratch, ordered by stream signals, no host "
     "synchronisation). Off by default until a peer killed mid-call is shown to release the "
     "survivors' streams (docs/cuda.md); 0 stages it like the other collectives."},
    {"TUTTI_CUDA_DIRECT_BYTES", Type::kInt, "33554432", "COLL",
     "Device scratch per rank of the direct device all-reduce; larger calls run in pieces of "
     "this size."},
    {"TUTTI_CUDA_DIRECT_MIN_BYTES", Type::kInt, "-1", "COLL",
     "Device all-reduce calls smaller than this are staged through host memory instead of "
     "taking the direct path. -1: n x 512 KiB when every rank drives the same GPU (its "
     "processes time-slice it, so each cross-rank step costs a context switch), else 0."},
    {"TUTTI_CUDA_TWO_SHOT_BYTES", Type::kInt, "-1", "COLL",
     "Direct device all-reduce pieces of at least this many bytes go two-shot (each rank "
     "reduces 1/n, then all gather), smaller ones one-shot (every rank reduces all). -1: never "
     "when every rank drives the same GPU (two-shot's extra step costs a context switch), "
     "else 262144."},
    {"TUTTI_CUDA_STREAM_MEMOPS", Type::kBool, "1", "COLL",
     "0: order the direct device all-reduce with one-thread kernels instead of the driver's "
     "stream memory operations (cuStreamWaitValue32)."},
    {"TUTTI_SHM_DIR", Type::kString, "/dev/shm", "TRANSPORT",
     "Directory (a tmpfs) where shm segments are created and unlinked at once."},
    {"TUTTI_SHM_FIFO_BYTES", Type::kInt, "4194304", "TRANSPORT",
     "Bytes of each shm FIFO (one per direction per peer); at most 1 GiB. A segment larger than "
     "the memory left (MemAvailable, the cgroup's memory limit) is refused."},
    {"TUTTI_SHM_CMA", Type::kBool, "0", "TRANSPORT",
     "Opt-in: single-copy process_vm_readv for large shm transfers when permitted (off by "
     "default: the pipelined two-copy FIFO was 2-4x faster on the machines we measured)."},
    {"TUTTI_SHM_CMA_THRESHOLD", Type::kInt, "1048576", "TRANSPORT",
     "Messages of at least this many bytes go single-copy (CMA) over shm."},
    {"TUTTI_SHM_SEGMENT", Type::kString, "auto", "TRANSPORT",
     "How shm segments are shared: auto (memfd opened by the peer through /proc/<pid>/fd, "
     "else a named file in TUTTI_SHM_DIR), memfd, or file."},
    {"TUTTI_SHM_WINDOW_BYTES", Type::kInt, "4194304", "TRANSPORT",
     "Bytes of each rank's shared window (direct algorithms, every rank on one host over shm); "
     "0 disables the window and the direct algorithms; at most 1 GiB. A window larger than the "
     "memory left is not made (the other algorithms run)."},
    {"TUTTI_SOCKET_IFNAME", Type::kString, "", "TRANSPORT",
     "Interfaces the tcp transport may use: a comma list of name prefixes, ^ to exclude, = "
     "for exact names."},
    {"TUTTI_NSOCKS", Type::kInt, "2", "TRANSPORT",
     "Sockets per peer connection used to stripe large tcp messages."},
    {"TUTTI_TCP_CHUNK_BYTES", Type::kInt, "524288", "TRANSPORT",
     "Bytes per stripe unit on a multi-socket tcp connection."},
    {"TUTTI_IB_HCA", Type::kString, "", "TRANSPORT",
     "RDMA ports the ibverbs transport may use: comma list of device[:port] name prefixes; "
     "a leading = for exact names, a leading ^ to exclude the listed ones."},
    {"TUTTI_IB_GID_INDEX", Type::kInt, "-1", "TRANSPORT",
     "GID index for RoCE; -1: the first RoCE v2 IPv4-mapped GID (else the first RoCE v2 GID)."},
    {"TUTTI_IB_TIMEOUT", Type::kInt, "14", "TRANSPORT",
     "ibverbs local ACK timeout exponent: 4.096 us * 2^value per try (1..31)."},
    {"TUTTI_IB_RETRY_CNT", Type::kInt, "7", "TRANSPORT",
     "ibverbs transport retries before a send fails with 'retry exceeded' (0..7)."},
    {"TUTTI_IB_QPS_PER_PEER", Type::kInt, "2", "TRANSPORT",
     "RC queue pairs per peer; chunks and zero-copy writes are striped across them."},
    {"TUTTI_IB_CHUNK_BYTES", Type::kInt, "131072", "TRANSPORT",
     "Bytes per staging slot (eager chunk) of the ibverbs transport (4096..524288)."},
    {"TUTTI_IB_SLOTS", Type::kInt, "16", "TRANSPORT",
     "Staging slots per direction per peer = credits of the ibverbs flow control (2..512)."},
    {"TUTTI_IB_RNDV_BYTES", Type::kInt, "262144", "TRANSPORT",
     "Messages of at least this size into a direct buffer go zero-copy (RDMA write from the "
     "registered user buffer); 0 disables zero-copy."},
    {"TUTTI_IB_REG_CACHE", Type::kBool, "0", "TRANSPORT",
     "Keep user-buffer registrations cached; only safe if buffers are not freed and "
     "reallocated at the same address while the communicator lives."},
    {"TUTTI_IB_REG_CACHE_ENTRIES", Type::kInt, "64", "TRANSPORT",
     "Most registrations the ibverbs registration cache keeps (LRU)."},
    {"TUTTI_SPIN_US", Type::kInt, "50", "EXEC",
     "Microseconds to poll for progress before sleeping on the transports' wait fds (a host "
     "stream's worker polls a network peer only while a thread waits for the stream)."},
    {"TUTTI_STREAM_LANES", Type::kInt, "1", "EXEC",
     "Lanes per communicator (1..16): lanes 1..n-1 are duplicates of it with their own "
     "connections, made at init; its k-th collective runs on lane k mod n (lane 0 inside a "
     "group), so collectives on different host streams run at the same time. 1: one after another, "
     "as NCCL's do. The "
     "same on every rank."},
    {"TUTTI_SPIN_YIELD", Type::kString, "auto", "EXEC",
     "While polling, 1: sched_yield between polls, 0: pause-spin; auto: yield only when this "
     "host runs more ranks of the communicator than it has cores, or while this process runs "
     "more calls at once (lanes, communicators) than each of its host's ranks has cores."},
    // ---- algorithms / tuning ----
    {"TUTTI_ALGO", Type::kString, "", "TUNING",
     "Force algorithms: 'ring' for every collective, or per collective "
     "'allreduce:ring;broadcast:binomial'. Read when a communicator is created; "
     "tuttiCommSetAlgorithm changes it later. A name no algorithm has is tuttiInvalidArgument "
     "at init (as is one in the config's algo)."},
    {"TUTTI_TUNING_FILE", Type::kString, "", "TUNING",
     "Cost model file written by tutti-tune (alpha/beta of shm and tcp, gamma); the tuner "
     "uses its values instead of the built-in ones."},
    {"TUTTI_TUNE", Type::kBool, "1", "TUNING",
     "Self-tuning of the automatic choice: a host's first communicator calibrates the cost "
     "model (kept in the tuning cache), and call shapes seen often (from their 64th call) try "
     "the model's best candidates in a bounded share of their calls and keep the fastest. 0: "
     "the cost model alone. Calls with a forced algorithm and calls under TUTTI_DETERMINISTIC "
     "are not explored (the calibrated model still plans them)."},
    {"TUTTI_TUNING_CACHE", Type::kString, "", "TUNING",
     "Directory of the tuning cache (one file per host hardware digest: calibration and "
     "learned choices); empty: $XDG_CACHE_HOME/tutti, else ~/.cache/tutti; off, 0 or none: "
     "no cache (no calibration, choices learned only for the job)."},
    {"TUTTI_TUNE_CANDIDATES", Type::kInt, "8", "TUNING",
     "Online refinement: the most candidates tried per call shape (the model's best, within "
     "3x of its best prediction)."},
    {"TUTTI_TUNE_EXPLORE_AFTER", Type::kInt, "64", "TUNING",
     "Online refinement: calls of a shape that use the model's choice before its candidates "
     "are tried (64: more than a perf test makes of a size with nccl-tests' defaults)."},
    {"TUTTI_TUNE_EXPLORE_SHARE", Type::kDouble, "0.125", "TUNING",
     "Online refinement: the most a shape's explored calls may be of its calls so far (0 to 1). "
     "A short job explores nothing and runs the model's choice; a long one settles after about "
     "its explored calls divided by this. 1: explore in consecutive calls (settles soonest)."},
    {"TUTTI_TUNE_CONFIRM_JOBS", Type::kInt, "1", "TUNING",
     "Online refinement: 1, a cached choice is final; more (e.g. 3): a choice that a run-off "
     "made is run off again by the next job, and by later ones while the jobs disagree or its "
     "runner-up is within 15%, up to this many jobs' evidence (from the third job, the lowest "
     "median time ratio decides)."},
    {"TUTTI_CHUNK_BYTES", Type::kInt, "262144", "EXEC",
     "Chunk of the direct (shared-window) algorithms when every rank of the host has a core: "
     "small chunks keep the windows in cache; with more ranks than cores the whole window is "
     "used (fewer phases, each a barrier of all ranks)."},
    {"TUTTI_DETERMINISTIC", Type::kBool, "0", "TUNING",
     "Bitwise reproducible reductions: a fixed reduction order per element, whatever the "
     "algorithm and message size."},
    {"TUTTI_TRACE_FILE", Type::kString, "", "COLL",
     "When a call fails, append the communicator's last calls (the flight recorder: number, "
     "call, algorithm, state, times) to this file; %r becomes the rank, %p the pid (without "
     "%r, \".<rank>\" is appended). tuttiCommDumpTrace writes the same on demand."},
    {"TUTTI_DUMP_SIGNAL", Type::kString, "off", "COLL",
     "A signal that makes every communicator of the process write its flight recorder (as "
     "TUTTI_TRACE_FILE describes; stderr without it) while the job goes on: USR1, USR2 or a "
     "real-time signal's number; off by default (the process's own handler stays)."},
    {"TUTTI_INSPECT", Type::kBool, "1", "COLL",
     "Let tutti-inspect ask this process what its communicators are doing: one listening "
     "socket and one idle thread per process while a communicator lives, and on rank 0 a job "
     "file naming every rank's address. 0 turns it off."},
    {"TUTTI_INSPECT_DIR", Type::kString, "", "COLL",
     "Where rank 0 writes the job file for tutti-inspect (a directory only its user can read); "
     "default $TMPDIR/tutti-inspect-<uid> (/tmp without TMPDIR)."},
    {"TUTTI_TRACE_CALLS", Type::kInt, "64", "COLL",
     "How many recent calls each communicator's flight recorder keeps (0 to 65536; 0 turns "
     "recording off, and timeouts then report no calls)."},
    {"TUTTI_CHECK_CALLS", Type::kBool, "0", "COLL",
     "Debug mode: all-gather every call's tag before the call, so any mismatch fails at the "
     "call itself (without it, message and window tags catch mismatches when a rank receives "
     "from another call)."},
    // ---- topology ----
    {"TUTTI_TOPO_FILE", Type::kString, "", "TOPO",
     "Load the topology from this hwloc (v1/v2) or NCCL topology XML file instead of "
     "probing with hwloc; communicators order their rings and trees by it (with "
     "TUTTI_TOPO_DEVICE). A file that does not load is tuttiInvalidArgument at init."},
    {"TUTTI_TOPO_CACHE", Type::kString, "auto", "TOPO",
     "Where the first process of a host keeps its live hwloc probe (hwloc XML, file "
     "topology-<host>.xml) for the next ones, which import it instead of reading every PCI "
     "device again: auto ($XDG_CACHE_HOME/tutti, else $HOME/.cache/tutti), a directory, or 0 "
     "(no cache). A kept probe is used only on the same boot, cgroup and hwloc version; one "
     "that does not load is probed again with a warning."},
    {"TUTTI_TOPO_DUMP_FILE", Type::kString, "", "TOPO",
     "Write the detected topology to this file: hwloc XML when probed with hwloc, tutti "
     "JSON when loaded from a file or when the name ends in .json. %h expands to the host "
     "name, %p to the pid (one file per process); without them the ranks of a host write the "
     "same path, each replacing it whole (written aside, then renamed)."},
    {"TUTTI_TOPO_DEVICE", Type::kString, "", "TOPO",
     "The device of the topology this rank stands for: gpu:N, numa:N, N (a GPU when the "
     "topology has GPUs, else a NUMA node), a GPU's PCI bus id, or local (the launcher's "
     "LOCAL_RANK modulo the device count). Empty: the GPU the process drives (its current "
     "CUDA context's device, found by PCI bus id), else the NUMA node of its CPU affinity. "
     "With TUTTI_TOPO_FILE, host-memory ranks follow a GPU machine's graph."},
    {"TUTTI_TOPO_REORDER", Type::kBool, "1", "TOPO",
     "Order ranks around rings (and trees) by host and by their devices' places in the "
     "topology; 0 keeps rank order (for comparison)."},
    {"TUTTI_BIND", Type::kString, "none", "TOPO",
     "Bind each rank's threads when its first communicator is created: none, numa (block "
     "distribution of a host's ranks over its NUMA nodes) or core (that node, then a share of "
     "its cores). tutti-topo --bind N prints the plan."},
    // ---- compression ----
    {"TUTTI_COMPRESS", Type::kString, "", "COMPRESS",
     "Default compressor for tuttiAllReduceCompressed: none, topk:RATIO, qsgd:S."},
    // ---- the torch backend (python/csrc, read when a process group is created) ----
    {"TUTTI_TORCH_INLINE_BYTES", Type::kInt, "65536", "TORCH",
     "The torch backend runs an asynchronous operation of at most this many bytes on the "
     "caller's thread, with blocking calls, when none of the group's operations is in flight "
     "(docs/pytorch.md); 0: only synchronous ones run there, the others go through the group's "
     "host stream. Not a non-negative integer: the process group is refused."},
    // ---- test only: for tutti's own tests, not for users ----
    {"TUTTI_TEST_DIE_AT", Type::kString, "", "TEST ONLY (not for users)",
     "Test only: PHASE:RANK makes that rank kill itself (SIGKILL) when it reaches the phase: "
     "setup (init, before its setup barrier), window (shared window setup), connect "
     "(connection setup), split (a split child's setup), shrink (a shrink's new "
     "communicator; RANK in the parent's numbering) or agree (agreeing on the failed ranks, "
     "recovery)."},
    {"TUTTI_TEST_CORRUPT", Type::kBool, "0", "TEST ONLY (not for users)",
     "Test only: perf tests corrupt one result element on purpose (checks #wrong)."},
};
}  // namespace

std::span<const Var> all() { return kVars; }

}  // namespace tutti::env
