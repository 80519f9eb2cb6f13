"""Notebook 9 (training): the backward pass. `model` holds gpusim's side as data (what the forward saves,
the backward's steps and FLOPs, training memory, the FlashAttention paper's Figure 2), `measured` the H200's
backward benchmark beside gpusim, `plots` and `widgets` show them, `exercises` checks the learner's functions.

    >>> from gpusim_course.training import exercises, measured, model, plots, widgets
"""
