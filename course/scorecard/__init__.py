"""Notebook 11 (the claims scorecard), and the verdicts at the end of notebooks 2, 4 to 8: `verdicts` holds
the verdict rules and the table, `claims` evaluates every concrete claim of the two source documents with
gpusim and results/h200/*.json, `claims_model` those gpusim alone decides.

    >>> from gpusim_course.scorecard import claims, verdicts
"""
