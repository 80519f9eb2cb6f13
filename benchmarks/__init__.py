"""Scripts that measure the GPU, check the model against measurements, and keep its counts (golden.py)."""
