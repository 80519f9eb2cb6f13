"""Notebooks 6 (real kernels, SDPA in practice) and 7 (Hopper and beyond). `live` measures on this machine,
`sdpa` asks PyTorch which backend it picks, `measured` sets the project's GPU results beside gpusim, `model`
holds the FlashAttention-3 claims beside gpusim, `plots` the benchmark figure, `widgets` the SDPA pick and
Hopper overlap explorers.

    >>> from gpusim_course.practice import live, measured, model, plots, sdpa, widgets
"""
