"""Notebook 12 (appendix: where every measurement comes from). `measured` lists every results file and sets
the measured footprints, tiles and Nsight Compute's numbers beside gpusim; `heldout` scores the held-out sets
(never fitted) against gpusim; `plots` draws the benchmark and Nsight charts and the held-out sets' ratios
(`python -m gpusim_course.provenance.plots`).

    >>> from gpusim_course.provenance import measured, plots
"""
