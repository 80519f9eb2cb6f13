"""Without a GPU the Triton kernels run in Triton's interpreter, which must be chosen before they are
imported (@triton.jit reads TRITON_INTERPRET when it decorates)."""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
