"""tools/autotune-bench.py's bookkeeping fed with synthetic TUNE logs: which sweeps of the cold
job count as "after exploring" for each size (first_clean_sweep), and the tuning bucket of a
size per collective (bucket_of)."""
import importlib.util
import os
import unittest

_TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                     "autotune-bench.py")
_spec = importlib.util.spec_from_file_location("autotune_bench", _TOOL)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


class BucketOf(unittest.TestCase):
    def test_all_reduce_by_size_others_by_bytes_per_rank(self):
        self.assertEqual(bench.bucket_of("all_reduce", 4, 1 << 20), 20)
        self.assertEqual(bench.bucket_of("all_gather", 4, 1 << 20), 18)
        self.assertEqual(bench.bucket_of("reduce_scatter", 2, 3 << 20), 20)  # 1.5 MiB a rank
        self.assertEqual(bench.bucket_of("all_gather", 4, 8), 1)


class FirstCleanSweep(unittest.TestCase):
    LOG = "\n".join([
        # 256 KiB (b18): a first round, then three run-off rounds: 2 + 242 calls, 122 a sweep.
        "tutti INFO TUNE exploring on: allreduce n4 h1 b18 w1: run-off of direct and ring after",
        "tutti INFO TUNE learned allreduce n4 h1 b18 w1: direct after 242 explored calls (run-off,"
        " 3 rounds summed; direct ...)",
        # 1 MiB (b20): done inside the first sweep (2 + 120 = 122 calls: the sweep's last).
        "tutti INFO TUNE learned allreduce n4 h1 b20 w1: rabenseifner after 120 explored calls "
        "(model chose rabenseifner; ...)",
        # 4 MiB (b22): still exploring when the job ended.
        "tutti INFO TUNE exploring on: allreduce n4 h1 b22 w1: run-off of tree and dbtree after",
        # Another collective and rank count with the same buckets: not all-reduce on 4 ranks.
        "tutti INFO TUNE learned allgather n4 h1 b18 w1: ring after 900 explored calls (",
        "tutti INFO TUNE learned allreduce n2 h1 b22 w1: ring after 900 explored calls (",
        "tutti INFO TUNE exploring on: allreduce n2 h1 b24 w1: run-off of ring and tree after",
    ])

    def test_sweeps_after_the_last_explored_call(self):
        iters = {1 << 18: 120, 1 << 20: 120, 1 << 22: 80, 1 << 24: 80}
        got = bench.first_clean_sweep(self.LOG, "all_reduce", 4, iters)
        self.assertEqual(got, {1 << 18: 2, 1 << 20: 1, 1 << 22: None, 1 << 24: 1})

    def test_more_calls_per_sweep_settle_in_the_first(self):
        got = bench.first_clean_sweep(self.LOG, "all_reduce", 4, {1 << 18: 300})
        self.assertEqual(got, {1 << 18: 1})

    def test_keys_of_other_collectives_count_for_theirs(self):
        got = bench.first_clean_sweep(self.LOG, "all_gather", 4, {1 << 20: 120})
        self.assertEqual(got, {1 << 20: 8})  # b18 at 4 ranks: -(-902 // 122)


if __name__ == "__main__":
    unittest.main()
