"""Notebooks 4 (tiling) and 5 (FlashAttention-1 against -2). `model` holds gpusim's side as data (traffic per
tensor, the causal tiles, the non-matmul share), `block_sweep` the tiling explorer's sweeps, `warps` split-K
against split-Q inside a thread block, `measured` the measured speedups beside gpusim, `plots` the sweeps and
score grids, `widgets` the explorers, steppers and the FlashAttention-1 against -2 control, `exercises`
checks the learner's functions.

    >>> from gpusim_course.tiling import block_sweep, exercises, measured, model, plots, warps, widgets
"""
