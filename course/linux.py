"""The course's kernel cells need torch and Triton, which the project installs on Linux only (Triton publishes
Linux wheels only); the model, the widgets and the figures need neither, so the rest of every notebook runs
on macOS too.

A notebook loads this module as an IPython extension (`%load_ext gpusim_course.linux`) and starts each kernel cell
with `%%needs_kernels`: where torch and Triton import, the cell runs as any other (the line is taken off before
IPython reads it: no magic wraps it); elsewhere it prints one line saying why it needs Linux and is skipped, so
that Run All goes on to the model's cells after it."""
import importlib.util
import platform


def missing():
    """The kernels' packages that cannot be imported here, of torch and triton."""
    return [m for m in ("torch", "triton") if importlib.util.find_spec(m) is None]


def why(gone):
    """One line: the packages `gone` and why the kernels need them (on Linux: how to add them)."""
    names = f"{' and '.join(gone)} {'is' if len(gone) == 1 else 'are'} not installed"
    if platform.system() == "Linux":
        return f"this cell runs Triton kernels: {names} here (pip install -e '.[kernels]' adds them)"
    return (f"this cell runs Triton kernels, which need Linux: {names} on {platform.system()} (Triton publishes "
            "Linux wheels only, so `make course` leaves the kernels out there); the model's cells run without them")


MARK = "%%needs_kernels"


def needs_kernels(lines):
    """IPython's first transform of a cell's lines (input_transformers_cleanup): a cell that starts with MARK is the
    rest of it, run as any other cell, where torch and Triton import; elsewhere a line that prints why it is
    skipped."""
    if not lines or lines[0].split()[:1] != [MARK]:  # the mark, alone or with a comment after it
        return lines
    gone = missing()
    if gone:
        return [f"print({'Skipped: ' + why(gone) + '.'!r})\n"]
    if lines[1:] and lines[1].startswith("%%"):  # another cell magic (%%time) must be the cell's first line
        return lines[1:]
    return ["\n", *lines[1:]]  # numbered as written


def load_ipython_extension(ipython):
    if needs_kernels not in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.append(needs_kernels)
