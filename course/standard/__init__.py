"""Notebook 2 (standard attention). `model` holds gpusim's time terms as a table, `measured` Nsight Compute's
bytes and times beside gpusim, `breakdown` and `plots` the time per operation and per term, `widgets` the
footprint and traffic explorers and the three-kernel stepper, `exercises` checks the learner's function.

    >>> from gpusim_course.standard import breakdown, exercises, measured, model, plots, widgets
"""
