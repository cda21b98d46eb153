"""Every torch.distributed operation on the tutti backend at 1-4 ranks, sync and async. Both
modes run in one launch (the checks once per mode in one process group) at 4 ranks; at 1-3
ranks the mode rotates (sync at 1 and 3, async at 2), so that each mode meets an odd and an
even rank count without running every check twice at every size."""
import pytest

from launch import describe, run_ranks

MODES = {1: "sync", 2: "async", 3: "sync", 4: "sync,async"}


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_every_operation(n):
    modes = MODES[n]
    results = run_ranks(n, "ops_worker.py", [modes], timeout=600)
    assert all(rc == 0 for rc, _, _ in results), describe(results)
    for _, out, _ in results:
        assert "all checks passed" in out and f" calls, {modes})" in out
