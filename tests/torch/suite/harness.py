"""The suite's test class for "tutti" (or SUITE_BACKEND): imported by torch_suite.py, and once
by the fork server its ranks are forked from (see torch_suite.py)."""
import collections.abc
import os
import sys
import unittest

BACKEND_UNDER_TEST = os.environ.get("SUITE_BACKEND", "tutti")
# torch's test runner writes XML reports (and needs xmlrunner) when CI is set; the baseline in
# gloo_passing.py was recorded without it.
os.environ.pop("CI", None)
os.environ.setdefault("WORLD_SIZE", "2")
os.environ["BACKEND"] = BACKEND_UNDER_TEST
os.environ.setdefault("TEMP_DIR", "/tmp")  # replaced per test by the suite's setUp

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

if BACKEND_UNDER_TEST == "tutti":
    import tutti.torch  # noqa: E402,F401  (registers the backend)


class GlooGatedName(str):
    """"tutti", equal to "gloo" too (and hashed as it), so the suite's name gates open as for gloo."""

    def __eq__(self, other):
        return str.__eq__(self, other) or str.__eq__("gloo", other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash("gloo")


class _EnvView(collections.abc.MutableMapping):
    """os.environ, except that BACKEND reads as a GlooGatedName (only while the suite imports)."""

    def __init__(self, real):
        self._real = real

    def __getitem__(self, key):
        value = self._real[key]
        return GlooGatedName(value) if key == "BACKEND" else value

    def __setitem__(self, key, value):
        self._real[key] = value

    def __delitem__(self, key):
        del self._real[key]

    def __iter__(self):
        return iter(self._real)

    def __len__(self):
        return len(self._real)


def _import_suite():
    if BACKEND_UNDER_TEST != "tutti":
        from torch.testing._internal.distributed import distributed_test
        return distributed_test
    # A plugin backend is "available" to the suite's require_backend_is_available.
    from torch.testing._internal.common_distributed import DistTestCases
    DistTestCases.backend_feature["plugin"].add("tutti")
    real = os.environ
    os.environ = _EnvView(real)
    try:
        from torch.testing._internal.distributed import distributed_test
    finally:
        os.environ = real
    return distributed_test


distributed_test = _import_suite()
if BACKEND_UNDER_TEST == "tutti":
    # The suite checks the profiler events of the backends it lists: tutti's too.
    for _listed in ("PROFILING_SUPPORTED_BACKENDS", "SEND_RECV_PROFILING_SUPPORTED_BACKENDS"):
        getattr(distributed_test, _listed).append("tutti")

from expected_failures import expected_failures  # noqa: E402


def _run_in_env(env, target, args, kwargs):
    """A rank's process: the test's environment as the parent had it when it started the rank."""
    os.environ.clear()
    os.environ.update(env)
    target(*args, **kwargs)


def _forked_from_server(target, name, args, kwargs):
    """A rank forked from a server that has imported torch and the suite once (the suite spawns,
    so each rank of each test imported them again: about 10 of the 11 s a test took at 4 ranks).
    The parent's environment goes with it: the suite sets a temporary directory per test."""
    context = torch.multiprocessing.get_context("forkserver")
    return context.Process(target=_run_in_env, name=name,
                           args=(dict(os.environ), target, args, kwargs))


class TestTuttiSuite(distributed_test.TestDistBackend,
                     distributed_test.DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if os.environ.get("SUITE_SPAWN") == "1":
            self._spawn_processes()
        else:
            self._start_processes(_forked_from_server)


if BACKEND_UNDER_TEST == "tutti":
    for _name, _reason in expected_failures(int(os.environ["WORLD_SIZE"])).items():
        _fn = getattr(TestTuttiSuite, _name, None)
        if _fn is None:
            raise SystemExit(f"expected_failures.py names {_name}, which the suite lacks")
        setattr(TestTuttiSuite, _name, unittest.expectedFailure(_fn))
