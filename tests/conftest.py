"""Without a GPU the Triton kernels run in Triton's interpreter, which must be chosen before they are
imported (@triton.jit reads TRITON_INTERPRET when it decorates). Without torch (no `kernels` extra) the
kernel tests skip."""
import os

try:
    import torch
except ModuleNotFoundError:
    torch = None

if torch is None or not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:  # the course extra (matplotlib, ipywidgets, nbclient, ...): without it the model's tests still run
    import gpusim_course  # noqa: F401
    import yaml  # noqa: F401
except ModuleNotFoundError as missing:
    collect_ignore_glob = ["test_course_*.py", "test_notebooks*.py", "test_results.py", "test_packaging.py"]
    print(f"conftest: {missing.name} is not installed, so the course and packaging tests are not collected "
          "(pip install -e '.[kernels,course,test]' for all of them)")
