"""The NVIDIA target: nv dialect (`ir/`), tile-to-fragments to lower-tile-to-nv (`passes/`), CUDA C++ (`emit/`),
NVRTC and SASS (`toolchain/`), and the nv-IR emulator (`emulate/`). `register()` registers the nv dialect
(`tessera.target.load_all` calls it); importing the package does not, so the runtime and the toolchain load
without xDSL (a warm process launches cached kernels without it: `tessera.compiler.records`)."""


def register() -> None:
    """Register the nv dialect (importing its op modules registers them)."""
    from tessera.target.nvidia.ir import ops  # noqa: F401
