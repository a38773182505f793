"""The NVIDIA target: nv dialect (`ir/`), tile-to-fragments to lower-tile-to-nv (`passes/`), CUDA C++ (`emit/`),
NVRTC and SASS (`toolchain/`), and the nv-IR emulator (`emulate/`). Importing it registers the nv dialect."""

from tessera.target.nvidia.ir import ops as _ops  # noqa: F401 - registers the nv dialect
