"""Notebook 8 (inference): decoding from a KV cache. `model` holds gpusim's side as data (the KV-cache
calculator, the split-KV schedule, both allocators, the "70% wasted" test), `measured` the H200's results
beside gpusim, `plots` and `widgets` show them, `exercises` checks the learner's functions.

    >>> from gpusim_course.inference import exercises, measured, model, plots, widgets
"""
