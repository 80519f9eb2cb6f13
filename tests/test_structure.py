"""The model's structure (docs/architecture.md), read from its source with ast: imports point one way (no
circle, imports inside functions included), no function is longer than 50 lines, no pass is probed for a
hook (hasattr, getattr, vars), and a pass is looked up by name in three places only."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "gpusim"
MAX_LINES = 50
# The places that turn a name into a pass: the registry itself, and the two makers of configurations.
LOOKUPS = {("passes/__init__.py", "get"), ("config.py", "pass_of"), ("backward.py", "pass_of")}
REGISTRIES = {"PASSES", "FORWARD", "BACKWARD"}


def modules():
    return {path.relative_to(ROOT).as_posix(): ast.parse(path.read_text()) for path in sorted(ROOT.rglob("*.py"))}


def functions(tree):
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _module_name(path):
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path, tree):
    """The gpusim modules `path` imports, anywhere in it (relative imports resolved)."""
    here = _module_name(path).split(".") if path.endswith("__init__.py") else _module_name(path).split(".")[:-1]
    here = [p for p in here if p]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[:len(here) - node.level + 1]
            if node.module is None:  # from . import x: the submodule x
                names |= {".".join(base + [a.name]) for a in node.names}
            else:  # from .m import x: the module m (x a name in it, or its submodule)
                module = ".".join(base + [node.module])
                names |= {module} | {f"{module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpusim"):
            names |= {node.module[len("gpusim."):]}
    return names


def test_the_import_graph_has_no_circle():
    trees = modules()
    known = {_module_name(path): path for path in trees}
    graph = {_module_name(path): {n for n in imported(path, tree) if n in known and n != _module_name(path)}
             for path, tree in trees.items()}
    assert_no_circle(graph)


def assert_no_circle(graph):
    """Depth-first over {module: the modules it imports}: a module met again while still open closes a circle."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != "open", f"import circle: {' -> '.join(path + [nxt])}"
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_no_function_is_longer_than_50_lines():
    long = [f"{path}:{f.name} ({f.end_lineno - f.lineno + 1} lines)" for path, tree in modules().items()
            for f in functions(tree) if f.end_lineno - f.lineno + 1 > MAX_LINES]
    assert not long


def test_no_pass_is_probed_for_a_hook():
    probes = [f"{path}:{node.lineno}" for path, tree in modules().items() for node in ast.walk(tree)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("hasattr", "getattr", "vars")]
    assert not probes


def test_a_pass_is_looked_up_by_name_in_three_places():
    places = set()
    for path, tree in modules().items():
        for f in functions(tree):
            for node in ast.walk(f):
                by_get = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                          and node.func.attr == "get" and isinstance(node.func.value, ast.Name)
                          and node.func.value.id in REGISTRIES | {"passes"})
                by_index = (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                            and node.value.id in REGISTRIES)
                if by_get or by_index:
                    places.add((path, f.name))
    assert places <= LOOKUPS and len(LOOKUPS) <= 3


def test_every_subpackage_is_installed():
    """pyproject.toml lists packages by name: a subpackage left out is missing from the wheel (an editable
    install of another checkout can hide that)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11: the test extra's tomli
        import tomli as tomllib
    listed = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    folders = {"gpusim." + p.parent.relative_to(ROOT).as_posix().replace("/", ".")
               for p in ROOT.rglob("__init__.py") if p.parent != ROOT}
    assert folders <= set(listed)
