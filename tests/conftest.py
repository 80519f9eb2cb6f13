"""Without a GPU the Triton kernels run in Triton's interpreter, which must be chosen before they are
imported (@triton.jit reads TRITON_INTERPRET when it decorates). A test module that needs an extra which is
not installed is not collected, and the summary says which extra (any subset of the extras works).
Both checks stay cheap where no test runs: an extra is looked up, not imported (nbformat's import alone takes
1.5 s), and pytest-xdist's controller, which hands the tests to its workers, does not import torch to ask for a GPU
(each worker asks)."""
import importlib
import importlib.util
import os

EXTRAS = {  # extra -> the top-level modules it installs that the tests import
    "kernels": ("torch", "triton"),
    "course": ("matplotlib", "ipywidgets", "nbclient", "nbformat", "PIL"),
}
NEEDS = {  # test modules -> the extras they need beyond `test`
    "test_kernels.py": ("kernels",),
    "test_*_kernels.py": ("kernels",),
    "test_hopper.py": ("kernels",),
    "test_benchmarks.py": ("kernels",),
    "test_course_puzzle*.py": ("course", "kernels"),  # the learner's kernels run in Triton's interpreter
    "test_course_*.py": ("course",),
    "test_notebooks*.py": ("course",),
    "test_browser.py": ("course",),
    "test_results.py": ("course", "kernels"),
}


def installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def missing(extra):
    return [module for module in EXTRAS[extra] if not installed(module)]


def cuda_available():
    try:
        return importlib.import_module("torch").cuda.is_available()
    except ImportError:
        return False


def pytest_configure(config):
    """Before collection imports triton: the interpreter where there is no GPU (not in xdist's controller)."""
    controller = config.getoption("numprocesses", None) and not hasattr(config, "workerinput")
    if not controller and not cuda_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


MISSING = {extra: missing(extra) for extra in EXTRAS}
collect_ignore_glob = [glob for glob, extras in NEEDS.items() if any(MISSING[e] for e in extras)]


def pytest_report_header():
    return [f"the `{extra}` extra is not installed ({', '.join(modules)} missing): its tests are not collected "
            f"(pip install -e '.[kernels,course,test]' for all of them)" for extra, modules in MISSING.items() if modules]
