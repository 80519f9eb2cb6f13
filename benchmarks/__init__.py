"""Benchmarks of the project's kernels and the model, run as modules: python -m benchmarks.NAME --out DIR."""
