"""Tests of torch's backend suite that pass on gloo and still fail on tutti, with the reason
(torch_suite.py marks them expected failures: one that starts to pass fails the run)."""

# torch's own code: dist.monitored_barrier raises "monitored_barrier is only implemented for
# GLOO backend" for every other backend before reaching it. The backend's monitored_barrier is
# gloo's (tests/torch/monitored_barrier_worker.py checks gloo's verdict texts).
_TORCH_GATES_MONITORED_BARRIER = "torch's dist.monitored_barrier refuses every backend but gloo"

# torch names a plugin backend's ProcessGroup "custom" in C++ (ProcessGroup::getBackendName,
# from its BackendType); DDP's logger records that name (docs/pytorch.md, "Refused, and why").
_TORCH_NAMES_PLUGINS_CUSTOM = "torch's ProcessGroup names every plugin backend 'custom'"

_COMMON = {
    "test_monitored_barrier_gloo": _TORCH_GATES_MONITORED_BARRIER,
    "test_monitored_barrier_gloo_subgroup": _TORCH_GATES_MONITORED_BARRIER,
    "test_ddp_logging_data_cpu": _TORCH_NAMES_PLUGINS_CUSTOM,
}

_BY_WORLD_SIZE = {2: {}, 4: {}}


def expected_failures(world_size):
    return {**_COMMON, **_BY_WORLD_SIZE.get(world_size, {})}
