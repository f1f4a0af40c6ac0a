"""Benchmarks of bytegraph against torch.compile (not part of the test suite)."""
