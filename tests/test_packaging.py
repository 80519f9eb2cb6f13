"""The project's own files install everything, torch and triton agree, and the core stays pure NumPy."""
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CPU_INDEX = re.search(r"^CPU_INDEX := (\S+)$", (ROOT / "Makefile").read_text(), flags=re.M).group(1)
CUDA_COMMAND = 'pip install -e ".[kernels,course,test]"'  # the README's command for CUDA machines
PYPI = "https://pypi.org/simple/"


def _name(requirement):
    return re.split(r"[<>=!~; \[]", requirement, maxsplit=1)[0].lower()


def _kernels_requirement(name):
    """The `kernels` extra's requirement on `name`, as a packaging Requirement."""
    return next(r for r in map(Requirement, PROJECT["optional-dependencies"]["kernels"]) if r.name == name)


def _cpu_pins():
    lines = (ROOT / "constraints-cpu.txt").read_text().splitlines()
    return {r.name: r for r in (Requirement(line) for line in lines if line and not line.startswith("#"))}


def test_environment_yml_matches_pyproject():
    wanted = set(PROJECT["dependencies"]) | {r for extra in PROJECT["optional-dependencies"].values() for r in extra}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    conda = {d for d in env if isinstance(d, str) and _name(d) not in ("python", "pip")}
    pip = next(d["pip"] for d in env if isinstance(d, dict))
    options = [line for line in pip if line.startswith("-")]
    assert {r.replace(" ", "") for r in wanted} == {r.replace(" ", "") for r in conda | set(pip) - set(options)}
    # The same CPU environment as the Makefile's: its CPU wheel index and its pins.
    assert options == [f"--extra-index-url {CPU_INDEX}", "-c constraints-cpu.txt", "-e ."]


def test_cpu_pins_lie_in_the_project_ranges():
    for name in ("torch", "triton"):
        (version,) = [s.version for s in _cpu_pins()[name].specifier]
        assert _kernels_requirement(name).specifier.contains(version), (name, version)


def _triton_required_by_installed_torch():
    """The specifiers of the triton requirements of the installed torch whose markers hold here."""
    found = [Requirement(r) for r in md.requires("torch") or []]
    return [r.specifier for r in found if canonicalize_name(r.name) == "triton"
            and (r.marker is None or r.marker.evaluate({"extra": ""}))]


def test_triton_requirement_agrees_with_installed_torch():
    """The installed torch's own metadata: a CUDA build pins one triton, which the project's range must admit;
    a CPU build pins none and the CPU environment's triton is constraints-cpu.txt's."""
    try:
        torch_version, triton_version = md.version("torch"), md.version("triton")
    except md.PackageNotFoundError as missing:
        pytest.skip(f"{missing.name} is not installed: the `kernels` extra (triton publishes Linux wheels only)")
    assert _kernels_requirement("torch").specifier.contains(torch_version, prereleases=True), torch_version
    ours = _kernels_requirement("triton").specifier
    torch_wants = _triton_required_by_installed_torch()
    for spec in torch_wants:
        pinned = [s.version for s in spec if s.operator == "=="]
        assert all(ours.contains(v) for v in pinned), f"torch {torch_version} requires triton{spec}; we say {ours}"
    assert ours.contains(triton_version) and all(s.contains(triton_version) for s in torch_wants), triton_version
    if not torch_wants:
        assert _cpu_pins()["triton"].specifier.contains(triton_version), "CPU torch: triton should be the pinned one"


def _reachable(url):
    try:
        urllib.request.urlopen(url, timeout=5)
        return True
    except OSError:
        return False


def _uv_compile(requirements, *options):
    """{name: version} that uv resolves for `requirements`, ignoring this machine's pip and uv configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    p = subprocess.run([sys.executable, "-m", "uv", "pip", "compile", "--no-config", "--no-header", "--quiet",
                        "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}", *options, "-"],
                       input=requirements, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return dict(re.findall(r"^([\w.-]+)==(\S+)", p.stdout, flags=re.M))


@pytest.mark.parametrize("torch_pin", ["", "torch==2.11.0", "cpu"], ids=["as-is", "H200-torch", "cpu-pin"])
def test_cuda_command_resolves_from_pypi(torch_pin):
    """The README's CUDA command, resolved against PyPI alone for Linux x86-64: CUDA torch and its triton. Also
    with torch pinned to the H200's version and to constraints-cpu.txt's, so that bumping either without
    pyproject's ranges fails here."""
    if not _reachable(PYPI):
        pytest.skip(f"PyPI ({PYPI}) unreachable: the CUDA command's resolution is not checked")
    assert CUDA_COMMAND in (ROOT / "README.md").read_text()
    torch_pin = str(_cpu_pins()["torch"]) if torch_pin == "cpu" else torch_pin
    pins = _uv_compile(f"-e {CUDA_COMMAND.split(chr(34))[1]}\n{torch_pin}", "--python-platform", "x86_64-manylinux_2_28")
    assert any(name.startswith("nvidia-") for name in pins), "expected PyPI's CUDA build of torch"
    assert Requirement(torch_pin or "torch").specifier.contains(pins["torch"]), pins["torch"]
    assert _kernels_requirement("torch").specifier.contains(pins["torch"]), pins["torch"]
    assert _kernels_requirement("triton").specifier.contains(pins["triton"]), pins["triton"]
    if not torch_pin:  # the README's driver note: the CUDA its torch was built for
        major = pins["torch"].split(".")[1]
        runtime = pins.get("nvidia-cuda-runtime") or pins.get("nvidia-cuda-runtime-cu12")
        readme = " ".join((ROOT / "README.md").read_text().split())
        assert f"PyPI's torch 2.{major}, which that resolves to, is built for CUDA {runtime.split('.')[0]}" in readme
        assert f"(`nvidia-cuda-runtime` {'.'.join(runtime.split('.')[:2])})" in readme


def test_cpu_index_gives_torch_without_cuda_or_triton():
    """The Makefile's first route: torch from PyTorch's CPU wheel index, under constraints-cpu.txt."""
    if not _reachable(f"{CPU_INDEX}/torch/"):
        pytest.skip(f"{CPU_INDEX} unreachable: the Makefile falls back to pip's configured index (not checked)")
    pins = _uv_compile("torch", "--index-url", CPU_INDEX, "-c", "constraints-cpu.txt")
    assert pins["torch"].endswith("+cpu") and "triton" not in pins, pins
    assert not any(name.startswith("nvidia-") for name in pins), pins


def _stand_in_kernels_wheel(folder):
    """A wheel of a package named `kernels`, for where PyPI's cannot be downloaded."""
    path = folder / "kernels-0.0.0-py3-none-any.whl"
    files = {"kernels/__init__.py": 'ORIGIN = "stand-in"\n',
             "kernels-0.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: kernels\nVersion: 0.0.0\n",
             "kernels-0.0.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files["kernels-0.0.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in [*files, "kernels-0.0.0.dist-info/RECORD"])
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
    return path


def _kernels_wheel(folder):
    """(PyPI's `kernels` wheel, or a stand-in where PyPI is unreachable; whether it is PyPI's)."""
    p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--timeout", "10", "--retries", "1",
                        "-d", str(folder), "kernels"], capture_output=True, text=True)
    wheels = list(folder.glob("kernels-*.whl"))
    return (wheels[0], True) if p.returncode == 0 and wheels else (_stand_in_kernels_wheel(folder), False)


def _gpusim_wheel(folder):
    """gpusim's wheel, built from a copy of the sources so that the build leaves nothing in the repository."""
    src = folder / "src"
    for package in ("gpusim", "kernels", "course"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(folder),
                    str(src)], check=True, capture_output=True)
    return next(folder.glob("gpusim-*.whl"))


CHECK_IMPORTS = """
import importlib.metadata as md, importlib.util, json, sys
import gpusim, gpusim_kernels
out = {"gpusim": gpusim.__file__, "gpusim_kernels": gpusim_kernels.__file__,
       "flash2": hasattr(gpusim_kernels, "flash2_attention"), "kernels_loaded_by_ours": "kernels" in sys.modules,
       "kernels_spec": importlib.util.find_spec("kernels").origin,
       "providers": {k: md.packages_distributions().get(k, []) for k in ("kernels", "gpusim_kernels")},
       "kernels_requires": md.requires("kernels") or []}
try:
    import kernels
    out["kernels"] = [kernels.__file__, getattr(kernels, "ORIGIN", "")]
except ImportError as err:  # PyPI's kernels, installed without its dependencies
    out["kernels_missing"] = err.name
print(json.dumps(out))
"""


def test_installs_beside_a_package_named_kernels(tmp_path):
    """A non-editable install of gpusim and of a `kernels` package into one folder: both import as themselves."""
    pytest.importorskip("triton", reason="gpusim_kernels imports torch and triton: the `kernels` extra (Linux)")
    ours = _gpusim_wheel(tmp_path)
    top = {name.split("/")[0] for name in zipfile.ZipFile(ours).namelist()}
    assert top == {"gpusim", "gpusim_kernels", "gpusim_course", "gpusim-0.1.0.dist-info"}, top
    theirs, from_pypi = _kernels_wheel(tmp_path)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(ours),
                    str(theirs)], check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"  # outside the repository: no import from its folders
    elsewhere.mkdir()
    p = subprocess.run([sys.executable, "-c", CHECK_IMPORTS], capture_output=True, text=True, cwd=elsewhere,
                       env=os.environ | {"PYTHONPATH": str(site)})
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["gpusim"] == str(site / "gpusim" / "__init__.py") and got["flash2"]
    assert got["gpusim_kernels"] == str(site / "gpusim_kernels" / "__init__.py")
    assert got["kernels_spec"] == str(site / "kernels" / "__init__.py") and not got["kernels_loaded_by_ours"]
    assert got["providers"]["kernels"] == ["kernels"] and set(got["providers"]["gpusim_kernels"]) == {"gpusim"}
    if from_pypi and "kernels_missing" in got:  # PyPI's runs until it needs a dependency --no-deps left out
        dependencies = {canonicalize_name(Requirement(r).name) for r in got["kernels_requires"]}
        assert canonicalize_name(got["kernels_missing"].split(".")[0]) in dependencies, got
    else:
        assert got["kernels"] == [str(site / "kernels" / "__init__.py"), "" if from_pypi else "stand-in"], got


def test_core_imports_numpy_only():
    blocked = ["matplotlib", "ipywidgets", "torch", "triton", "scipy", "IPython"]
    code = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in blocked) +
            "import gpusim, gpusim.cli\nr = gpusim.simulate('flash2', seq=128, head_dim=16, trace=True)\n"
            "print(sorted(m for m, mod in sys.modules.items() if mod is not None))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    top = {m.split(".")[0] for m in eval(p.stdout) if not m.startswith("_")} - set(sys.stdlib_module_names)
    assert top <= {"gpusim", "numpy", "cython_runtime"}, top


def test_ci_runs_the_readme_test_command_and_requires_the_browser():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^make (\w+)$", readme, flags=re.M)
    assert commands[:2] == ["course", "test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "GPUSIM_REQUIRE_BROWSER=1" in ci and "apt-get install" in ci
    assert "GPUSIM_REQUIRE_KERNELS=1" in ci
    assert "apt-get" not in (ROOT / "Makefile").read_text()  # make test needs neither root nor apt


def test_every_preset_number_has_a_source():
    source = (ROOT / "gpusim" / "hardware.py").read_text()
    body = source[source.index("def _a100"):]
    numeric = [line for line in body.splitlines() if re.search(r"=\s*[\d(]", line) and "=" in line
               and not line.strip().startswith(("def ", "return", "#", "rate", "by_lower", "close", "hint"))]
    assert numeric and all("#" in line for line in numeric), [line for line in numeric if "#" not in line]


@pytest.mark.parametrize("platform, macos", [("aarch64-apple-darwin", "13.0"), ("aarch64-apple-darwin", "14.0"),
                                             ("x86_64-apple-darwin", "13.0"), ("x86_64-apple-darwin", "14.0")])
def test_model_and_course_install_on_macos(platform, macos, monkeypatch):
    """`make course`'s install on macOS (the kernels extra is Linux's), resolved against PyPI alone."""
    if not _reachable(PYPI):
        pytest.skip(f"PyPI ({PYPI}) unreachable: the macOS install is not checked")
    monkeypatch.setenv("MACOSX_DEPLOYMENT_TARGET", macos)
    pins = _uv_compile("-e .[kernels,course,test]", "--python-platform", platform, "-c", "constraints-cpu.txt")
    assert {"numpy", "jupyterlab", "ipywidgets", "matplotlib"} <= set(pins), pins
    assert "torch" not in pins and "triton" not in pins, pins
    # every package a wheel (gpusim's own, editable, aside): on an Intel Mac, argon2-cffi-bindings 26's sdist alone
    # resolved, which pip builds with a C compiler
    wheels = _uv_compile("-e .[kernels,course,test]", "--python-platform", platform, "-c", "constraints-cpu.txt",
                         "--only-binary", ":all:", "--no-binary", "gpusim")
    assert wheels == pins, set(wheels.items()) ^ set(pins.items())


def test_kernels_are_installed_where_ci_requires_them():
    """`make`'s set-up installs the model and the course without the kernels where no CPU build of torch can be had,
    and the kernel tests then skip: CI, which must run them, says so (GPUSIM_REQUIRE_KERNELS=1 in .ci/run)."""
    if os.environ.get("GPUSIM_REQUIRE_KERNELS") != "1":
        pytest.skip("GPUSIM_REQUIRE_KERNELS is not set: the kernels may be absent here")
    assert md.version("torch") and md.version("triton") == str(_cpu_pins()["triton"].specifier).lstrip("=")
