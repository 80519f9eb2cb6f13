"""Learner kernels run in a child process, so that no mistake can take the notebook's Python kernel down (an
out-of-bounds pointer in Triton's interpreter writes through raw memory) and a loop that never ends is
stopped. The parent sends the kernel's source (inspect.getsource of the @triton.jit function, and of its
Python launcher where the learner writes one: both work for a function typed into a notebook cell); the
child writes it to a file, imports it and checks it (checker.check_here); the verdict comes back as data.

One child, a fresh interpreter (no fork of a process that holds threads, and nothing of the notebook's or
the script's __main__ is run again), serves check after check over a socket; it is replaced when it dies or
runs past the time limit.
"""
import ast
import atexit
import importlib.util
import inspect
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from multiprocessing.connection import Connection

import numpy as np

PATH_VARIABLE = "GPUSIM_SANDBOX_PATH"  # the parent's sys.path, which the child appends to its own
BOOT = ("import os, runpy, sys; "
        f"sys.path += [p for p in os.environ['{PATH_VARIABLE}'].split(os.pathsep) if p and p not in sys.path]; "
        f"runpy.run_module('{__name__}', run_name='__main__')")  # the child's first lines (python -I -c BOOT)
TIMEOUT_S = 20  # a check of the small puzzle shapes takes well under 5 s; a verdict comes within 30 s
START_S = 120  # importing torch and triton in the child, on a busy machine
HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"


@dataclass(frozen=True)
class Source:
    """A learner's function as text: its name and its source, decorator included; or a line the functions need
    from their notebook (an import, a constant), written before them."""
    name: str
    text: str
    helper: bool = False  # a function the learner's kernel or launcher calls, or a line, sent along
    prelude: bool = False  # a line: `import math as math`, `BLOCK = 64`

    @classmethod
    def of(cls, fns):
        """The Sources of fns (kernel, launcher), of the functions they call that were defined beside them (in the
        same notebook or file), at any depth, and of the modules and other modules' functions (importable by name)
        and plain constants (an int, float, str or bool, or a tl.constexpr of one) their source names from there: an
        `import math`, a `from math import ceil` or a `BLOCK = 64` in another cell reaches the checker too."""
        out = {}

        def visit(fn, helper):
            fn = getattr(fn, "fn", fn)  # a @triton.jit function wraps the Python one
            text = textwrap.dedent(inspect.getsource(fn))
            out.setdefault(fn.__name__, cls(fn.__name__, text, helper))
            names = (node.id for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name))
            for name in dict.fromkeys(names):  # its body's, its defaults' and its decorators' names
                value = fn.__globals__.get(name)
                called = getattr(value, "fn", value)
                if name in out or name not in fn.__globals__:
                    continue
                if inspect.isfunction(called) and called.__module__ == fn.__module__:
                    visit(called, True)
                elif line := _line(name, value):
                    out[name] = cls(name, line, True, True)
        for fn in fns:
            visit(fn, False)
        return list(out.values())


def _line(name, value):
    """The line that makes `name` in the child: an import of a module, or a constant that repr writes back as it
    was (exactly an int, float, str or bool: NumPy's scalars and enums repr otherwise), a tl.constexpr's too."""
    if inspect.ismodule(value):
        return f"import {value.__name__} as {name}"
    module = getattr(value, "__module__", None) if inspect.isroutine(value) else None
    if module not in (None, "__main__") and getattr(sys.modules.get(module), value.__name__, None) is value:
        return f"from {module} import {value.__name__} as {name}"  # `from math import ceil` in a cell
    wrapped = type(value).__name__ == "constexpr" and type(value).__module__.startswith("triton")
    inner = value.value if wrapped else value
    if type(inner) not in (int, float, str, bool) or (type(inner) is float and not math.isfinite(inner)):
        return None
    try:
        text = repr(inner)
    except ValueError:  # an int of more digits than Python converts (4,300)
        return None
    return f"{name} = tl.constexpr({text})" if wrapped else f"{name} = {text}"


def load_sources(sources, folder):
    """Import the learner's functions (Source) from one file in `folder`, the lines they need first; returns those
    not helpers, in order."""
    path = os.path.join(folder, f"learner_{os.getpid()}_{len(os.listdir(folder))}.py")
    lines = [s.text for s in sources if s.prelude] + [s.text for s in sources if not s.prelude]
    with open(path, "w") as f:
        f.write(HEADER + "\n\n".join(lines))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [getattr(module, s.name) for s in sources if not s.helper]


def _serve(fd, progress_path):
    """The child: import the kernels once, then answer (action, args) requests until the socket closes. The
    kernels run in Triton's interpreter on CPU tensors, GPU or not: the guard and the byte count live there."""
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    import importlib
    progress = np.memmap(progress_path, np.int64, "r+", shape=(5,))  # the running program, its accesses so far
    conn = Connection(fd)
    conn.send("ready")
    with tempfile.TemporaryDirectory() as folder:
        while True:
            try:
                action, args = conn.recv()
            except EOFError:
                return
            progress[:] = 0
            module, function = action.rsplit(".", 1)  # e.g. "checker.check_here", in this package
            answer = getattr(importlib.import_module(f"{__package__}.{module}"), function)
            conn.send(answer(*args, folder=folder, progress=progress))


class Child:
    """The parent's handle on the child (this module run as __main__ by a fresh interpreter that imports nothing of
    the notebook's): ask("module.function", *args) -> the answer of that function of this package, run in the
    child, or ("timeout", progress) or ("died", exit code). The child runs isolated (python -I: no current folder,
    no PYTHON* variables) with the parent's sys.path after its own, so that a learner's file named like a module
    (enum.py, torch.py) beside the notebook cannot hide the standard library's or an installed one from it, while a
    module of their own beside it (helpers.py) is still found: the parent's '' (its current folder) goes as that
    folder's path."""

    def __init__(self):
        self.process = self.conn = None
        self.progress_path = os.path.join(tempfile.mkdtemp(prefix="gpusim_puzzles_"), "progress")

    def _start(self):
        np.zeros(5, np.int64).tofile(self.progress_path)
        ours, theirs = socket.socketpair()
        env = {**os.environ, PATH_VARIABLE: os.pathsep.join(p or os.getcwd() for p in sys.path)}  # '': the folder
        self.process = subprocess.Popen([sys.executable, "-I", "-c", BOOT, str(theirs.fileno()), self.progress_path],
                                        pass_fds=[theirs.fileno()], env=env)
        theirs.close()
        self.conn = Connection(ours.detach())
        try:
            if self.conn.poll(START_S) and self.conn.recv() == "ready":
                return
            died = False
        except (EOFError, ConnectionResetError):  # it exited first: an import failed (its traceback is on stderr)
            died = True
        code = None
        if died:
            try:
                code = self.process.wait(timeout=60)  # a fatal error (its core dumped) may take a while to end it
            except subprocess.TimeoutExpired:
                pass
        self.stop()
        raise RuntimeError(f"the checker's process exited with code {code} before it started (its error is above)"
                           if died else f"the checker's process did not start within {START_S} s")

    @property
    def progress(self):
        return tuple(int(x) for x in np.fromfile(self.progress_path, np.int64))

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.conn.close()
        self.process = None

    def ask(self, action, *args, timeout_s=TIMEOUT_S):
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self._start()
        self.conn.send((action, args))
        try:
            if self.conn.poll(timeout_s):
                return self.conn.recv()
        except (EOFError, ConnectionResetError):  # the child died: a crash the guard did not catch
            code = self.process.wait()
            self.stop()
            return ("died", code)
        progress = self.progress
        self.stop()
        return ("timeout", progress)


CHILD = Child()


@atexit.register
def _clean_up():
    CHILD.stop()
    shutil.rmtree(os.path.dirname(CHILD.progress_path), ignore_errors=True)

if __name__ == "__main__":
    _serve(int(sys.argv[1]), sys.argv[2])
