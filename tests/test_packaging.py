"""The project's own files install everything; the core stays pure NumPy."""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement):
    return re.split(r"[<>=!~; \[]", requirement, maxsplit=1)[0].lower()


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"]) | {r for extra in project["optional-dependencies"].values() for r in extra}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    conda = {d for d in env if isinstance(d, str) and _name(d) not in ("python", "pip")}
    pip = {d for d in next(d["pip"] for d in env if isinstance(d, dict)) if d != "-e ."}
    assert {r.replace(" ", "") for r in wanted} == {r.replace(" ", "") for r in conda | pip}


def test_core_imports_numpy_only():
    blocked = ["matplotlib", "ipywidgets", "torch", "triton", "scipy", "IPython"]
    code = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked) +
            "import gpusim, gpusim.cli\nr = gpusim.simulate('flash2', seq=128, head_dim=16, trace=True)\n"
            "print(sorted(m for m, mod in sys.modules.items() if mod is not None))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    top = {m.split(".")[0] for m in eval(p.stdout) if not m.startswith("_")} - set(sys.stdlib_module_names)
    assert top <= {"gpusim", "numpy", "cython_runtime"}, top


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^make (\w+)$", readme, flags=re.M)
    assert commands[:2] == ["course", "test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_preset_number_has_a_source():
    source = (ROOT / "gpusim" / "hardware.py").read_text()
    body = source[source.index("def _a100"):]
    numeric = [line for line in body.splitlines() if re.search(r"=\s*[\d(]", line) and "=" in line
               and not line.strip().startswith(("def ", "return", "#", "rate", "by_lower", "close", "hint"))]
    assert numeric and all("#" in line for line in numeric), [line for line in numeric if "#" not in line]
