"""Notebook 1 (the memory hierarchy). `model` holds gpusim's side as data (the hierarchy, the ridge points),
`measured` the GPU's ceilings beside it, `plots` the FlashAttention paper's Figure 1, `widgets` the roofline
explorer, `exercises` checks the learner's function.

    >>> from gpusim_course.hierarchy import exercises, measured, model, plots, widgets
"""
