"""tests/conftest.py's guard: with any subset of the extras installed, collection has no error. An extra is
taken away by a sitecustomize that makes its modules fail to import, as if they were not installed."""
import subprocess
import sys

import pytest

from conftest import EXTRAS

BLOCKER = '''import os, sys
BLOCKED = set(os.environ["GPUSIM_BLOCK"].split(","))
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
sys.meta_path.insert(0, Blocker())
'''


@pytest.mark.parametrize("absent", [("kernels",), ("course",), ("kernels", "course")])
def test_collection_has_no_error_without(absent, tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    blocked = ",".join(m for extra in absent for m in EXTRAS[extra])
    env = {"PYTHONPATH": str(tmp_path), "GPUSIM_BLOCK": blocked, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    for extra in absent:
        assert f"the `{extra}` extra is not installed" in done.stdout
