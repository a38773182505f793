"""The compile driver: `tessera.compile(traced_kernel, arch=...)` -> `CompiledKernel` (source, cubin, launch).

`driver` runs the named pipeline, emits CUDA C++ and compiles it through the
compile cache; `kernel` holds the result and launches it with the launch
signature derived from the kernel ABI; `arrays` reads array arguments
(numpy, torch, __cuda_array_interface__) in place; `report` reads what ptxas
made of a kernel (`ck.report`) and `occupancy` the CTAs per SM that allows;
`testing` injects faults and can run the cuda lane on the CPU host emulator.
"""

from tessera.compiler.driver import clear_memo, compile, compile_cached, device_arch
from tessera.compiler.kernel import CompiledKernel, launch_signature
from tessera.compiler.report import CompileReport, TesseraPerformanceWarning

__all__ = ["compile", "compile_cached", "clear_memo", "device_arch", "CompiledKernel", "launch_signature",
           "CompileReport", "TesseraPerformanceWarning"]
