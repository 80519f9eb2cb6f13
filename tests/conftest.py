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
