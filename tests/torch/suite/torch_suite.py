"""torch's own backend suite (DistributedTest._DistTestBase from the torch wheel) against "tutti".

    python3 torch_suite.py [unittest args]        # WORLD_SIZE=2 by default
    SUITE_BACKEND=gloo python3 torch_suite.py     # the same suite on gloo, as the baseline
    python3 torch_suite.py --gloo-passing         # only the tests that pass on gloo at this
                                                  # world size (gloo_passing.py), as ctest runs it
    SUITE_SPAWN=1 python3 torch_suite.py          # ranks spawned as torch's own runner does
                                                  # (default: forked from a server that imported
                                                  # torch and the suite once)

The suite gates many tests by backend name (BACKEND == "gloo", BACKEND in {...}). For tutti the
gates open as they do for gloo: the module sees BACKEND as a name equal to both "tutti" and
"gloo", while init_process_group gets "tutti". Tests still expected to fail are listed in
expected_failures.py with the reason; an unexpected pass fails the run, so the list stays true.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import TestTuttiSuite  # noqa: E402,F401  (run_tests finds it here)

if __name__ == "__main__":
    import multiprocessing

    from torch.testing._internal.common_utils import run_tests
    # The fork server imports torch and the suite once, through the harness module. Python
    # 3.11's fork server can preload neither "__main__" (it asks spawn for a key spawn does not
    # give) nor a module outside its PYTHONPATH (it ignores the parent's sys.path), silently.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")]))
    multiprocessing.get_context("forkserver").set_forkserver_preload(["harness"])
    if "--gloo-passing" in sys.argv:
        from gloo_passing import gloo_passing
        sys.argv.remove("--gloo-passing")
        names = gloo_passing(int(os.environ["WORLD_SIZE"]))
        missing = [n for n in names if not hasattr(TestTuttiSuite, n)]
        if missing:
            raise SystemExit(f"gloo_passing.py names tests this torch lacks: {missing}")
        sys.argv += [f"TestTuttiSuite.{n}" for n in names]
    run_tests()
