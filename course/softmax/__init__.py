"""Notebook 3 (the online softmax). `bits` measures bit-for-bit agreement, `model` the variants' memory
accesses, `plots` the ULP histogram, `widgets` the online softmax stepper, `exercises` checks the learner's
function.

    >>> from gpusim_course.softmax import bits, exercises, model, plots, widgets
"""
