"""The compile driver: `tessera.compile(traced_kernel, arch=...)` -> `CompiledKernel` (source, cubin, launch).

`driver` runs the named pipeline, emits CUDA C++ and compiles it through the
compile cache; `kernel` holds the result and launches it with the launch
signature derived from the kernel ABI; `arrays` reads array arguments
(numpy, torch, __cuda_array_interface__) in place; `report` reads what ptxas
made of a kernel (`ck.report`) and `occupancy` the CTAs per SM that allows;
`testing` injects faults and can run the cuda lane on the CPU host emulator.
"""

import importlib

_WHERE = {"compile": "driver", "compile_cached": "driver", "clear_memo": "driver", "device_arch": "driver",
          "CompiledKernel": "kernel", "launch_signature": "kernel", "CompileReport": "report",
          "TesseraPerformanceWarning": "report"}
__all__ = list(_WHERE)


def __getattr__(name: str):
    """Each name from its module on first use: `from tessera.compiler import arrays` (a warm op call) loads no
    compiler (xDSL, the passes, the emitter)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tessera.compiler' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
