"""torch 2.x on DeviceMesh over the tutti backend: FSDP2 (fully_shard) matches gloo after 20
steps, and a 2x2 DeviceMesh with DTensor (tensor-parallel Linear layers against a
single-process reference, redistribute between Shard and Replicate) is right."""
import os
import tempfile

import torch

from launch import describe, run_ranks


def test_fsdp2_matches_gloo():
    with tempfile.TemporaryDirectory() as d:
        params = {}
        for backend in ("gloo", "tutti"):
            path = os.path.join(d, backend + ".pt")
            results = run_ranks(4, "mesh_worker.py", [backend, "fsdp", path], timeout=300)
            assert all(rc == 0 for rc, _, _ in results), describe(results)
            params[backend] = torch.load(path)
        assert params["tutti"].numel() == params["gloo"].numel() > 0
        diff = (params["gloo"] - params["tutti"]).abs().max().item()
        assert diff < 1e-10, f"FSDP2 on tutti and on gloo differ by {diff}"


def test_dtensor_on_a_2x2_mesh():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "flags.pt")
        results = run_ranks(4, "mesh_worker.py", ["tutti", "dtensor", path], timeout=300)
        assert all(rc == 0 for rc, _, _ in results), describe(results)
        assert torch.load(path).tolist() == [1, 1, 1, 1]
