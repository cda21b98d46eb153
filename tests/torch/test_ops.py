"""Every torch.distributed operation on the tutti backend at 1-4 ranks, sync and async (both
modes in one launch per rank count: the checks run once per mode in one process group)."""
import pytest

from launch import describe, run_ranks


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_every_operation_sync_and_async(n):
    results = run_ranks(n, "ops_worker.py", ["sync,async"], timeout=600)
    assert all(rc == 0 for rc, _, _ in results), describe(results)
    for _, out, _ in results:
        assert "all checks passed" in out and "sync,async" in out
