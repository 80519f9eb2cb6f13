"""Measurement scripts run on the lent GPUs (most as `python benchmarks/NAME.py`; cp.py as a module under
torchrun: `torchrun --nproc-per-node 2 -m benchmarks.cp --out DIR`)."""
