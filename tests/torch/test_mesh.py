"""torch 2.x on DeviceMesh over the tutti backend: FSDP2 (fully_shard) matches gloo after 20
steps, and a 2x2 DeviceMesh with DTensor (tensor-parallel Linear layers against a
single-process reference, redistribute between Shard and Replicate) is right."""
import os
import tempfile

import torch

from launch import describe, reference_env, run_ranks


def test_fsdp2_matches_gloo_and_dtensor_on_a_2x2_mesh():
    """One launch on gloo (FSDP2), one on tutti (FSDP2, then DTensor in the same group)."""
    with tempfile.TemporaryDirectory() as d:
        prefix = {b: os.path.join(d, b) for b in ("gloo", "tutti")}
        for backend, modes in (("gloo", "fsdp"), ("tutti", "fsdp,dtensor")):
            results = run_ranks(4, "mesh_worker.py", [backend, modes, prefix[backend]],
                                env=reference_env(backend), timeout=300)
            assert all(rc == 0 for rc, _, _ in results), describe(results)
        gloo, tutti = (torch.load(prefix[b] + ".fsdp") for b in ("gloo", "tutti"))
        assert tutti.numel() == gloo.numel() > 0
        diff = (gloo - tutti).abs().max().item()
        assert diff < 1e-10, f"FSDP2 on tutti and on gloo differ by {diff}"
        assert torch.load(prefix["tutti"] + ".dtensor").tolist() == [1, 1, 1, 1]
