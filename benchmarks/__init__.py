"""GPU measurement and model-check scripts, run from the repository root as modules (python -m benchmarks.serving)."""
