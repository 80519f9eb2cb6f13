"""Every ```python block in README.md and docs/*.md runs, so an example cannot go stale. A block whose
first line is `# needs a GPU` runs only where CUDA is (the GPU suite); every other block runs here."""
import os
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
GPU_MARK = "# needs a GPU"


def blocks():
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for i, match in enumerate(FENCE.finditer(path.read_text())):
            found.append(pytest.param(match.group(1), id=f"{path.relative_to(ROOT)}#{i}"))
    return found


def test_the_docs_have_examples():
    assert len(blocks()) >= 4


@pytest.mark.parametrize("code", blocks())
def test_example_runs(code):
    if code.startswith(GPU_MARK) and os.environ.get("TRITON_INTERPRET"):  # conftest: no CUDA GPU
        pytest.skip("the example needs a CUDA GPU: it runs in the GPU suite")
    if "gpusim_kernels" in code:
        for module in ("torch", "triton"):
            pytest.importorskip(module, reason="the example needs the `kernels` extra (Linux)")
    if "TRITON_INTERPRET" in code and not os.environ.get("TRITON_INTERPRET"):
        pytest.skip("the example runs the kernels in Triton's interpreter on CPU; the GPU suite runs them compiled")
    module = types.ModuleType("gpusim_doc_example")  # a real module: torch.compile looks its globals up by name
    sys.modules[module.__name__] = module
    exec(compile(code, "<doc example>", "exec"), module.__dict__)
