"""Notebook 13 (beyond one GPU): context parallelism. `model` holds gpusim's context-parallel pass as
timelines, tables and figures (and the two-GPU measurement beside it once it exists), `widgets` the timeline
explorer, `exercises` the merge of two partial results.

    >>> from gpusim_course.context import exercises, model, widgets
"""
