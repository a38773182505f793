"""NVRTC layer: CUDA C++ text -> cubin for each supported arch, byte-identical, with coded errors."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_samples import TEMPLATE, VECADD, WGMMA  # noqa: E402

from tessera.target.nvidia.toolchain import CodegenError, compile_cuda, normalize_options, parse_arch, toolchain_versions  # noqa: E402

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")


@pytest.mark.parametrize("arch", ARCHS)
def test_vecadd_compiles_for_every_arch(arch):
    art = compile_cuda(VECADD, arch)
    assert art.cubin[:4] == b"\x7fELF"
    assert art.arch == arch and art.verify()
    assert art.sha256 == hashlib.sha256(art.cubin).hexdigest()
    assert f".target {arch}" in art.ptx  # the PTX of the same compile, sm_90a included
    assert art.options == () and dict(art.toolchain)["nvrtc"].startswith("13.")


def test_same_source_gives_byte_identical_cubin():
    first, second = compile_cuda(VECADD, "sm_90"), compile_cuda(VECADD, "sm_90")
    assert first.cubin == second.cubin and first.sha256 == second.sha256
    # Line info used to embed a random temp-file name in the cubin: it must be deterministic too.
    l1 = compile_cuda(VECADD, "sm_90", options={"lineinfo": True})
    l2 = compile_cuda(VECADD, "sm_90", options={"lineinfo": True})
    assert l1.cubin == l2.cubin
    assert l1.cubin != first.cubin  # and the option really reached NVRTC


def test_lineinfo_off_by_default_and_recorded_when_on():
    plain = compile_cuda(VECADD, "sm_90")
    lined = compile_cuda(VECADD, "sm_90", options=[("lineinfo", True)])
    assert ".loc" not in plain.ptx and ".loc" in lined.ptx
    assert lined.options == (("lineinfo", True),)


def test_options_reach_the_compiler():
    art = compile_cuda(VECADD, "sm_90", options={"define_macro": ["UNUSED=1"], "max_register_count": 32})
    assert art.options == (("define_macro", ("UNUSED=1",)), ("max_register_count", 32))
    with pytest.raises(CodegenError) as err:
        compile_cuda("#ifndef NEEDED\n#error NEEDED is not defined\n#endif\n", "sm_90")
    assert "NEEDED is not defined" in err.value.message
    compile_cuda("#ifndef NEEDED\n#error NEEDED is not defined\n#endif\n", "sm_90",
                 options={"define_macro": "NEEDED"})


def test_compile_error_is_coded_with_log_and_location():
    src = 'extern "C" __global__ void k(float* x) {\n  x[0] = undefined_thing;\n}\n'
    with pytest.raises(CodegenError) as err:
        compile_cuda(src, "sm_90")
    e = err.value
    assert e.code.name == "CODEGEN_COMPILE_FAILED"
    assert 'identifier "undefined_thing" is undefined' in e.message
    assert str(e).startswith("tessera_kernel.cu:2:1: error: CODEGEN_COMPILE_FAILED:")
    assert "Traceback" not in str(e) and "hint:" in str(e)


def test_arch_instruction_missing_is_a_compile_error():
    """wgmma on plain sm_90: ptxas refuses it, and the error says so."""
    with pytest.raises(CodegenError) as err:
        compile_cuda(WGMMA, "sm_90")
    assert err.value.code.name == "CODEGEN_COMPILE_FAILED" and "wgmma" in err.value.message


def test_ptxas_warnings_are_kept_in_the_log():
    art = compile_cuda(WGMMA, "sm_90a")
    assert "setmaxnreg" in art.log  # ptxas reports it ignored setmaxnreg without a known entry register count


@pytest.mark.parametrize("arch", ["sm_70", "sm_91", "sm90", "gfx90a", "", None])
def test_bad_arch_is_coded(arch):
    with pytest.raises(CodegenError) as err:
        compile_cuda(VECADD, arch)
    assert err.value.code.name == "CODEGEN_ARCH_UNSUPPORTED"


def test_parse_arch():
    assert parse_arch("sm_90a") == (9, 0, "a") and parse_arch("sm_100") == (10, 0, "")
    assert parse_arch("sm_86") == (8, 6, "")


@pytest.mark.parametrize("options", [{"lineinfo": 1}, {"no_such_option": True}, {"arch": "sm_80"},
                                     {"max_register_count": True}, {"include_path": "/tmp"}])
def test_bad_options_are_coded(options):
    with pytest.raises(CodegenError) as err:
        normalize_options(options)
    assert err.value.code.name == "CODEGEN_OPTION_INVALID"


def test_name_expressions_give_lowered_names():
    art = compile_cuda(TEMPLATE, "sm_80", name_expressions=["fill<4>", "fill<7>"])
    mapping = dict(art.symbol_mapping)
    assert set(mapping) == {"fill<4>", "fill<7>"}
    assert mapping["fill<4>"] == "_Z4fillILi4EEvPf" and mapping["fill<4>"] != mapping["fill<7>"]


def test_non_text_source_is_coded():
    with pytest.raises(CodegenError) as err:
        compile_cuda(b"bytes", "sm_90")
    assert err.value.code.name == "CODEGEN_COMPILE_FAILED"


def test_missing_nvrtc_library_is_coded():
    """In a fresh interpreter whose library finder cannot find libnvrtc, compiling names the fix."""
    script = (
        "import cuda.pathfinder as pf\n"
        "import cuda.pathfinder._dynamic_libs.load_nvidia_dynamic_lib as m\n"
        "def missing(name): raise pf.DynamicLibNotFoundError(f'no lib{name} here')\n"
        "pf.load_nvidia_dynamic_lib = m.load_nvidia_dynamic_lib = missing\n"
        "from tessera.target.nvidia.toolchain import compile_cuda, CodegenError\n"
        "try:\n"
        "    compile_cuda('extern \"C\" __global__ void k() {}', 'sm_90')\n"
        "except CodegenError as e:\n"
        "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "CODEGEN_TOOLCHAIN_MISSING" in out.stdout and "nvidia-cuda-nvrtc" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


def test_toolchain_versions_name_the_packages():
    versions = dict(toolchain_versions())
    assert set(versions) == {"nvrtc", "nvidia-cuda-nvrtc", "cuda-bindings", "cuda-core"}


@pytest.mark.parametrize("options", [
    {},
    {"lineinfo": True, "max_register_count": 128, "std": "c++17"},
    {"lineinfo": False, "use_fast_math": False, "device_code_optimize": False, "ftz": False, "fma": True},
    {"debug": True, "device_code_optimize": True, "prec_sqrt": False, "prec_div": True, "use_fast_math": True,
     "extra_device_vectorization": True, "restrict": True, "disable_warnings": True},
    {"define_macro": ("A", "B=1"), "ptxas_options": ("-v", "-O2"), "diag_suppress": (177, 550)},
    {"define_macro": "A", "ptxas_options": "-v", "diag_suppress": 177},
])
def test_flags_are_spelled_as_cuda_core_spells_them(options):
    """compile_cuda calls NVRTC itself (no cuda.core import on a cold compile): its command line for each
    option is the one cuda.core's ProgramOptions builds from the same fields."""
    from cuda.core import ProgramOptions

    from tessera.target.nvidia.toolchain.nvrtc import nvrtc_flags

    opts = normalize_options(options)
    kwargs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in opts}
    assert nvrtc_flags("sm_90a", opts) == ProgramOptions(name="x", arch="sm_90a", **kwargs).as_bytes("nvrtc")


def test_a_compile_does_not_import_cuda_core():
    script = ("import sys\n"
              "from tessera.target.nvidia.toolchain import compile_cuda\n"
              f"compile_cuda({VECADD!r}, 'sm_90')\n"
              "print(sorted(m for m in sys.modules if m.startswith('cuda.core')))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
