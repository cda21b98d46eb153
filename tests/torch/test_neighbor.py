"""tutti.torch.neighbor_allreduce over real ranks (neighbor_worker.py) at 1, 3 and 4 ranks."""
import pytest

from launch import describe, run_ranks


@pytest.mark.parametrize("n", [1, 3, 4])
def test_neighbor_allreduce(n):
    results = run_ranks(n, "neighbor_worker.py", timeout=240)
    assert all(rc == 0 and "OK" in out for rc, out, _ in results), describe(results)
