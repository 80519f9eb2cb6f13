"""environment(command): the GPU, versions, date and command a result file names (benchmarks.bench's),
or as much of it as can be read where that fails (no nvidia-smi, no GPU)."""
import datetime
import platform


def environment(command):
    try:
        from benchmarks.bench import environment as bench_environment
        return bench_environment(command)
    except Exception as err:  # noqa: BLE001 - never lose a run to its header
        env = {"command": command, "date": datetime.date.today().isoformat(), "python": platform.python_version(),
               "environment_error": f"{type(err).__name__}: {err}"[:300]}
        try:
            import torch
            import triton
            env |= {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
                    "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}
        except Exception:  # noqa: BLE001
            pass
        return env
