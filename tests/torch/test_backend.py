"""The tutti backend beyond single operations: a killed rank, recovery by shrink_group,
split_group, DDP and ZeRO against gloo, the backend's registration and refusals."""
import os
import subprocess
import sys
import tempfile

import pytest
import torch

from launch import describe, reference_env, run_ranks


@pytest.mark.parametrize("n,victim", [(2, 1), (3, 1), (4, 2)])
def test_killed_rank_raises_naming_it(n, victim):
    results = run_ranks(n, "kill_worker.py", [str(victim)], timeout=120)
    for r, (rc, out, err) in enumerate(results):
        if r == victim:
            assert rc == -9, describe(results)
        else:
            assert rc == 0, describe(results)
            assert f"rank {victim}" in out


def test_per_call_timeout_names_the_late_rank():
    results = run_ranks(2, "timeout_worker.py", timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


def test_exit_with_work_in_flight_and_a_python_callback():
    """Under tuttirun (plain interpreters, which destroy the group while they shut down; the
    zygote launcher's ranks do not): rank 0 exits with an all-reduce in flight whose future has
    a Python callback and must not abort (it did: the callback's Python code ran during
    shutdown)."""
    build = os.environ.get("TUTTI_BUILD_DIR", "")
    tuttirun = os.path.join(build, "tools", "tuttirun", "tuttirun")
    if not os.path.exists(tuttirun):
        pytest.skip(f"no tuttirun at {tuttirun} (set TUTTI_BUILD_DIR)")
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exit_in_flight_worker.py")
    for _ in range(2):
        out = subprocess.run([tuttirun, "-np", "2", "--tag-output", "--timeout", "120",
                              sys.executable, worker],
                             capture_output=True, text=True, env=dict(os.environ), timeout=180)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "rank 0 exits with the work in flight" in out.stdout, out.stdout
        assert "rank 1 done" in out.stdout, out.stdout


def test_wait_timeout_on_work_in_flight_aborts():
    results = run_ranks(2, "wait_timeout_worker.py", timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


def test_monitored_barrier_names_late_ranks_as_gloo_does():
    results = run_ranks(3, "monitored_barrier_worker.py", timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


def test_completion_hooks_timing_and_profiler_events():
    """_register_on_completion_hook, _enable_collectives_timing + Work._get_duration,
    _wait_for_pending_works, one profiler event per operation with input shapes."""
    results = run_ranks(3, "work_info_worker.py", timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


def test_time_estimator_runs_nothing_and_prices_the_operations():
    """torch.distributed._time_estimator: nothing runs, the estimate grows and adds up, sends
    and receives are priced, an operation it cannot record ends it (time_estimate_worker.py)."""
    results = run_ranks(3, "time_estimate_worker.py", timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


def test_flight_recorder_dump_read_by_torchs_fr_trace(tmp_path):
    """Rank 2 never joins the fourth collective: tutti's dumps in torch's format name it through
    torch's own analyser."""
    results = run_ranks(3, "fr_trace_worker.py", [str(tmp_path)], timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)
    out = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace",
                          str(tmp_path)], capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "Not all ranks joining collective, sequence number: 4" in text, text
    assert "missing ranks: {2}" in text, text


def test_tutti_inspect_names_a_late_rank_of_a_torch_job(tmp_path):
    """tutti-inspect reads the job file of a torch job's group and names the late rank."""
    binary = os.path.join(os.environ["TUTTI_BUILD_DIR"], "tools", "tutti-inspect", "tutti-inspect")
    results = run_ranks(3, "inspect_worker.py", [str(tmp_path), binary],
                        env={"TUTTI_INSPECT_DIR": str(tmp_path)}, timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


def test_sparse_all_reduce_and_ddp_with_sparse_gradients():
    results = run_ranks(3, "sparse_worker.py", timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


@pytest.mark.parametrize("n,victim,transport", [(4, 1, "shm"), (3, 2, "tcp")])
def test_survivors_shrink_and_finish_training(n, victim, transport):
    """A rank killed in DDP training: the survivors name it, agree, shrink_group and finish
    the digits training with identical parameters (shrink_worker.py)."""
    results = run_ranks(n, "shrink_worker.py", [str(victim)],
                        env={"TUTTI_TRANSPORT": transport}, timeout=300)
    for r, (rc, out, err) in enumerate(results):
        if r == victim:
            assert rc == -9, describe(results)
        else:
            assert rc == 0, describe(results)
            assert f"shrunk to {n - 1} ranks" in out, describe(results)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_split_group(n):
    """ProcessGroup.split_group over tuttiCommSplit: halves, a rank left out, a split of a
    split, against independent values (split_worker.py)."""
    results = run_ranks(n, "split_worker.py", timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


@pytest.mark.parametrize("n", [3])
def test_ddp_matches_gloo(n):
    """DDP, ZeroRedundancyOptimizer and DDP with tutti's average hook (one launch per backend
    runs the three one after the other) end with gloo's parameters. 3 ranks: not a power of
    two (the 2-rank paths run in torch_ops_test and torch_ddp_digits_test)."""
    kinds = ["ddp", "zero", "avg_hook", "cpp_avg_hook"]
    with tempfile.TemporaryDirectory() as d:
        params = {}
        for backend in ("gloo", "tutti"):
            path = os.path.join(d, backend + ".pt")
            results = run_ranks(n, "ddp_worker.py", [backend, path, ",".join(kinds)],
                                env=reference_env(backend), timeout=300)
            assert all(rc == 0 for rc, _, _ in results), describe(results)
            for kind in kinds:
                params[backend, kind] = torch.load(path + "." + kind)
        for kind in kinds:
            diff = (params["gloo", kind] - params["tutti", kind]).abs().max().item()
            assert diff < 1e-10, f"{kind}: tutti and gloo parameters differ by {diff}"


def test_cpp_compressed_hooks_match_python():
    """The C++ top-k and QSGD DDP hooks (register_compressed_hook) end with the parameters of
    the Python hooks, bit for bit, and they differ from the uncompressed run's."""
    kinds = ["topk_py", "topk_cpp", "qsgd_py", "qsgd_cpp"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tutti.pt")
        results = run_ranks(2, "ddp_worker.py", ["tutti", path, ",".join(kinds)], timeout=300)
        assert all(rc == 0 for rc, _, _ in results), describe(results)
        p = {kind: torch.load(path + "." + kind) for kind in kinds}
    assert torch.equal(p["topk_py"], p["topk_cpp"]), "top-k: C++ and Python hooks differ"
    assert torch.equal(p["qsgd_py"], p["qsgd_cpp"]), "QSGD: C++ and Python hooks differ"
    assert not torch.equal(p["topk_py"], p["qsgd_py"]), "top-k and QSGD gave the same result"


def test_import_registers_backend():
    code = ("import torch.distributed as dist, tutti.torch; "
            "assert 'TUTTI' in dist.Backend._plugins; print(dist.Backend('tutti'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ))
    assert out.returncode == 0 and out.stdout.strip() == "tutti", out.stderr


def test_bad_inline_bytes_refused_naming_the_value():
    """TUTTI_TORCH_INLINE_BYTES that is not a byte count: the process group is refused with a
    message naming the variable and the value (docs/env.md), not read as 0."""
    from launch import free_port_pair
    code = ("import torch.distributed as dist, tutti.torch\n"
            "try:\n"
            "    dist.init_process_group('tutti')\n"
            "    print('accepted')\n"
            "except Exception as e:\n"
            "    print('refused:', e)\n")
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port_pair()), TUTTI_TORCH_INLINE_BYTES="64k")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert "refused:" in out.stdout, out.stdout + out.stderr
    assert "TUTTI_TORCH_INLINE_BYTES='64k'" in out.stdout, out.stdout


@pytest.mark.parametrize("n", [1, 3])
def test_tuttirun_sets_torch_variables(n):
    """tuttirun -np N python3 script: init_process_group("tutti") needs nothing else."""
    build = os.environ.get("TUTTI_BUILD_DIR", "")
    tuttirun = os.path.join(build, "tools", "tuttirun", "tuttirun")
    if not os.path.exists(tuttirun):
        pytest.skip(f"no tuttirun at {tuttirun} (set TUTTI_BUILD_DIR)")
    code = ("import os, torch, torch.distributed as dist, tutti.torch\n"
            "dist.init_process_group('tutti')\n"
            "r, n = dist.get_rank(), dist.get_world_size()\n"
            "assert int(os.environ['LOCAL_WORLD_SIZE']) == n\n"
            "t = torch.tensor([float(r + 1)])\n"
            "dist.all_reduce(t)\n"
            "assert t.item() == n * (n + 1) / 2, t\n"
            "print('ok', r, n, os.environ['MASTER_PORT'], flush=True)\n"
            "dist.destroy_process_group()\n")
    out = subprocess.run([tuttirun, "-np", str(n), "--tag-output", "--timeout", "120", sys.executable, "-c", code],
                         capture_output=True, text=True, env=dict(os.environ), timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    ranks = sorted(l.split("ok ")[1].split()[0] for l in out.stdout.splitlines() if "ok " in l)
    assert ranks == [str(r) for r in range(n)], out.stdout


@pytest.mark.parametrize("n", [2, 3])
def test_sync_runs_on_caller_async_on_worker(n):
    results = run_ranks(n, "placement_worker.py", timeout=120)
    assert all(rc == 0 for rc, _, _ in results), describe(results)


def test_torchrun_launches_tutti_ranks(tmp_path):
    """torchrun from the torch 2.x wheel (python3 -m torch.distributed.run) starts the ranks;
    init_process_group("tutti") needs nothing else."""
    script = tmp_path / "job.py"
    script.write_text(
        "import sys, torch, torch.distributed as dist, tutti.torch\n"
        "dist.init_process_group('tutti')\n"
        "r, n = dist.get_rank(), dist.get_world_size()\n"
        "t = torch.arange(5, dtype=torch.float64) * (r + 1)\n"
        "dist.all_reduce(t)\n"
        "assert torch.equal(t, torch.arange(5, dtype=torch.float64) * n * (n + 1) / 2), t\n"
        "open(f'{sys.argv[1]}/rank{r}', 'w').write(f'{r} {n}')\n"
        "dist.destroy_process_group()\n")
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc-per-node", "3", str(script), str(tmp_path)],
                         capture_output=True, text=True, env=dict(os.environ), timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    assert [(tmp_path / f"rank{r}").read_text() for r in range(3)] == ["0 3", "1 3", "2 3"]
