"""tutti: a collective communication library. ``import tutti.torch`` registers the
``"tutti"`` backend of ``torch.distributed`` (docs/pytorch.md)."""
