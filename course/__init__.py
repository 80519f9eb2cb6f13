"""The course's tables, figures, widgets and exercises, built on gpusim (and on gpusim_kernels where
Triton is installed). gpusim never imports this package."""
