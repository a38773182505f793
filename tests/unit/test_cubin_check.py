"""A damaged cubin is refused before the driver sees it (the H200's driver segfaulted on a truncated one)."""

from __future__ import annotations

import pytest

from cuda_samples import VECADD
from tessera.target.nvidia.toolchain import compile_cuda
from tessera.runtime.cubin_check import cubin_problem


@pytest.fixture(scope="module", params=["sm_80", "sm_90", "sm_90a"])
def cubin(request) -> bytes:
    return compile_cuda(VECADD, request.param).cubin


def test_real_cubins_pass(cubin):
    assert cubin_problem(cubin) is None


@pytest.mark.parametrize("damage, needle", [
    (lambda c: c[: len(c) // 3], "past the end"),
    (lambda c: c[: len(c) - 64], "past the end"),
    (lambda c: c[:40], "shorter than an ELF header"),
    (lambda c: bytes(len(c)), "ELF magic"),
    (lambda c: c[:1] + b"XYZ" + c[4:], "ELF magic"),
    (lambda c: c[:18] + b"\x3e\x00" + c[20:], "EM_CUDA"),  # x86-64 machine type
])
def test_damaged_cubins_are_named(cubin, damage, needle):
    problem = cubin_problem(damage(cubin))
    assert problem is not None and needle in problem, problem
