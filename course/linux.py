"""The course's kernel cells need torch and Triton, which the project installs on Linux only (Triton publishes
Linux wheels only); the model, the widgets and the figures need neither, so the rest of every notebook runs
on macOS too."""
import importlib.util
import platform


def require_kernels():
    """Nothing where torch and Triton can be imported; else one line saying why the cell needs Linux."""
    missing = [m for m in ("torch", "triton") if importlib.util.find_spec(m) is None]
    if missing:
        raise ModuleNotFoundError(f"this cell runs Triton kernels, which need Linux: {' and '.join(missing)} "
                                  f"{'is' if len(missing) == 1 else 'are'} not installed on {platform.system()} "
                                  "(Triton publishes Linux wheels only, so `make course` leaves the kernels out "
                                  "there); the model's cells, the widgets and the figures run without them")
