"""torch's own backend suite (DistributedTest._DistTestBase from the torch wheel) against "tutti".

    python3 torch_suite.py [unittest args]        # WORLD_SIZE=2 by default
    SUITE_BACKEND=gloo python3 torch_suite.py     # the same suite on gloo, as the baseline
    python3 torch_suite.py --gloo-passing         # only the tests that pass on gloo at this
                                                  # world size (gloo_passing.py), as ctest runs it

The suite gates many tests by backend name (BACKEND == "gloo", BACKEND in {...}). For tutti the
gates open as they do for gloo: the module sees BACKEND as a name equal to both "tutti" and
"gloo", while init_process_group gets "tutti". Tests still expected to fail are listed in
expected_failures.py with the reason; an unexpected pass fails the run, so the list stays true.
"""
import collections.abc
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

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


class TestTuttiSuite(distributed_test.TestDistBackend,
                     distributed_test.DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


if BACKEND_UNDER_TEST == "tutti":
    for _name, _reason in expected_failures(int(os.environ["WORLD_SIZE"])).items():
        _fn = getattr(TestTuttiSuite, _name, None)
        if _fn is None:
            raise SystemExit(f"expected_failures.py names {_name}, which the suite lacks")
        setattr(TestTuttiSuite, _name, unittest.expectedFailure(_fn))

if __name__ == "__main__":
    from torch.testing._internal.common_utils import run_tests
    if "--gloo-passing" in sys.argv:
        from gloo_passing import gloo_passing
        sys.argv.remove("--gloo-passing")
        names = gloo_passing(int(os.environ["WORLD_SIZE"]))
        missing = [n for n in names if not hasattr(TestTuttiSuite, n)]
        if missing:
            raise SystemExit(f"gloo_passing.py names tests this torch lacks: {missing}")
        sys.argv += [f"TestTuttiSuite.{n}" for n in names]
    run_tests()
