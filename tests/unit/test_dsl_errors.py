"""Kernel-body errors: coded, located at the user's file:line, showing that line, with a trimmed traceback.

Lines are found by the `# @name` markers at the end of the offending lines.
"""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import tessera
from tessera import tl
from tessera.dsl.errors import is_internal
from tessera.ir import diagnostics as D

T = tessera.tensor
F32 = T(("M", "N"), "f32")
BF16 = T(("M", "N"), "bf16")
_SOURCE = open(__file__).read().splitlines()


def line_of(marker: str) -> int:
    tag = f"# @{marker}"
    hits = [i for i, text in enumerate(_SOURCE, 1) if text.rstrip().endswith(tag)]
    assert len(hits) == 1, marker
    return hits[0]


def trace_error(kernel, *specs, **meta) -> tessera.KernelError:
    with pytest.raises(tessera.KernelError) as info:
        kernel.trace(*specs, **meta)
    return info.value


def assert_at(err: tessera.KernelError, marker: str, code: D.Code) -> None:
    line = line_of(marker)
    assert err.code is code, err
    assert D.all_codes()[code.name] is code
    assert (err.filename, err.line) == (__file__, line)
    text = str(err)
    assert text.startswith(f"{__file__}:{line}:")
    assert f"error: {code.name}:" in text
    assert _SOURCE[line - 1].split("#")[0].strip() in text  # the source line is shown
    assert err.__traceback__ is not None


@tessera.kernel
def dot_shapes(A, C, *, BM=64):
    a = tl.load(A, [0, 0], (BM, 32))
    b = tl.load(A, [0, 0], (16, BM))
    tl.store(C, [0, 0], tl.dot(a, b))  # @dot-shape


def test_dot_shape_mismatch_points_at_the_dot():
    err = trace_error(dot_shapes, BF16, F32)
    assert_at(err, "dot-shape", D.DSL_SHAPE_MISMATCH)
    assert "64x32" in err.message and "16x64" in err.message


def test_traceback_ends_at_the_user_line_without_tracer_internals():
    err = trace_error(dot_shapes, BF16, F32)
    frames = traceback.extract_tb(err.__traceback__)
    assert (frames[-1].filename, frames[-1].lineno) == (__file__, line_of("dot-shape"))
    internal = [f for f in frames if is_internal(f.filename)]
    assert [f.name for f in internal] == ["trace"]  # the entry point that re-raised it, nothing deeper
    assert err.__cause__ is None and err.__suppress_context__


@tessera.kernel
def mixed_dtypes(A, B, C, *, BM=16):
    a = tl.load(A, [0, 0], (BM, BM))
    b = tl.load(B, [0, 0], (BM, BM))
    tl.store(C, [0, 0], a + b)  # @mixed


def test_mixed_dtypes_name_both_and_the_fix():
    err = trace_error(mixed_dtypes, BF16, F32, F32)
    assert_at(err, "mixed", D.DSL_DTYPE_MISMATCH)
    assert "bf16" in err.message and "f32" in err.message and ".to(" in err.hint


@tessera.kernel
def store_wrong_dtype(A, C, *, BM=16):
    tl.store(C, [0, 0], tl.load(A, [0, 0], (BM, BM)))  # @store-dtype


def test_store_dtype_mismatch():
    err = trace_error(store_wrong_dtype, F32, BF16)
    assert_at(err, "store-dtype", D.DSL_DTYPE_MISMATCH)
    assert "C.dtype" in err.hint


@tessera.kernel
def escapes(A, C, *, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    for k in tl.range(0, 64, BM):
        tmp = tl.load(A, [k, 0], (BM, BM))  # @tmp-def
        acc = acc + tmp
    tl.store(C, [0, 0], acc + tmp)  # @tmp-use


def test_use_outside_the_loop_names_the_defining_line():
    err = trace_error(escapes, F32, F32)
    assert_at(err, "tmp-use", D.DSL_LOOP_ESCAPE)
    assert f"'tmp' is defined inside the loop at line {line_of('tmp-def')} and used outside it" in err.message


@tessera.kernel
def escapes_through_a_list(A, C, *, BM=16):
    saved = []
    for k in tl.range(0, 64, BM):
        saved.append(tl.load(A, [k, 0], (BM, BM)))
    tl.store(C, [0, 0], saved[0])  # @list-use


def test_value_smuggled_out_of_a_loop_is_caught_at_its_use():
    err = trace_error(escapes_through_a_list, F32, F32)
    assert_at(err, "list-use", D.DSL_LOOP_ESCAPE)
    assert "loop at line" in err.message


@tessera.kernel
def branch_on_tile(A, C, *, BM=16):
    a = tl.load(A, [0, 0], (BM, BM))
    if tl.max(tl.max(a, 1), 0) > 0:  # @if
        a = a * 2.0
    tl.store(C, [0, 0], a)


def test_if_on_a_traced_value_says_use_where():
    err = trace_error(branch_on_tile, F32, F32)
    assert_at(err, "if", D.DSL_TRACED_BOOL)
    assert "tl.where" in err.hint


@tessera.kernel
def bad_offsets(A, C, *, BM=16):
    tl.store(C, [0, 0], tl.load(A, [0], (BM, BM)))  # @offsets


def test_wrong_number_of_offsets():
    err = trace_error(bad_offsets, F32, F32)
    assert_at(err, "offsets", D.DSL_OFFSETS_INVALID)
    assert "1 offset(s)" in err.message and "rank-2" in err.message


@tessera.kernel
def bad_axis(A, C, *, BM=16):
    a = tl.load(A, [0, 0], (BM, BM))
    tl.store(C, [0, 0], tl.sum(a, 2))  # @axis


def test_bad_reduction_axis():
    assert_at(trace_error(bad_axis, F32, F32), "axis", D.DSL_AXIS_INVALID)


@tessera.kernel
def bad_program_axis(A, C, *, BM=16):
    tl.store(C, [tl.program_id(3), 0], tl.load(A, [0, 0], (BM, BM)))  # @pid-axis


def test_bad_program_id_axis():
    assert_at(trace_error(bad_program_axis, F32, F32), "pid-axis", D.DSL_AXIS_INVALID)


@tessera.kernel
def symbolic_tile_shape(A, C):
    tl.store(C, [0, 0], tl.load(A, [0, 0], (A.shape[0], 16)))  # @sym-shape


def test_tile_shapes_must_be_static():
    err = trace_error(symbolic_tile_shape, F32, F32)
    assert_at(err, "sym-shape", D.DSL_SHAPE_INVALID)
    assert "symbolic" in err.message


@tessera.kernel
def tensor_as_tile(A, C):
    tl.store(C, [0, 0], A * 2.0)  # @tensor-math


def test_tensor_arithmetic_says_load_first():
    err = trace_error(tensor_as_tile, F32, F32)
    assert_at(err, "tensor-math", D.DSL_OPERAND_INVALID)
    assert "tl.load(A" in err.message


@tessera.kernel
def breaks(A, C, *, BM=16):
    for k in tl.range(0, 64, BM):
        break  # @break
    tl.store(C, [0, 0], tl.load(A, [0, 0], (BM, BM)))


def test_break_in_a_traced_loop_is_a_syntax_error_at_the_break():
    assert_at(trace_error(breaks, F32, F32), "break", D.DSL_LOOP_SYNTAX)


@tessera.kernel
def returns_value(A, C):
    return A


def test_kernel_returning_a_value():
    err = trace_error(returns_value, F32, F32)
    assert err.code is D.DSL_KERNEL_RETURN and err.line == returns_value.fn.__code__.co_firstlineno + 1


@tessera.kernel
def iterate_range(A, C, *, BM=16):
    total = [k for k in tl.range(4)]  # @iter-range
    tl.store(C, [0, 0], tl.load(A, [0, 0], (BM, BM)))


def test_tl_range_outside_a_for_statement():
    assert_at(trace_error(iterate_range, F32, F32), "iter-range", D.DSL_LOOP_SYNTAX)


def test_calling_a_kernel_directly_or_tl_outside_a_trace():
    with pytest.raises(tessera.KernelError) as info:
        dot_shapes(np.zeros((4, 4)), np.zeros((4, 4)))  # @direct-call
    assert_at(info.value, "direct-call", D.DSL_KERNEL_CALL)
    with pytest.raises(tessera.KernelError) as info:
        tl.zeros((16, 16))  # @outside
    assert_at(info.value, "outside", D.DSL_OUTSIDE_TRACE)
    assert "@tessera.kernel" in info.value.hint


def test_signature_errors_point_at_the_trace_call():
    with pytest.raises(tessera.KernelError) as info:
        dot_shapes.trace(BF16, F32, F32)  # @too-many
    assert_at(info.value, "too-many", D.DSL_SIGNATURE)
    with pytest.raises(tessera.KernelError) as info:
        dot_shapes.trace(BF16, F32, BX=3)  # @unknown-meta
    assert_at(info.value, "unknown-meta", D.DSL_SIGNATURE)
    assert "BM" in info.value.message
    with pytest.raises(tessera.KernelError) as info:
        dot_shapes.trace(BF16)  # @missing
    assert_at(info.value, "missing", D.DSL_SIGNATURE)


def test_arg_spec_errors():
    with pytest.raises(tessera.KernelError) as info:
        T(("M", 1.5), "f32")
    assert info.value.code is D.DSL_ARG_SPEC
    with pytest.raises(tessera.KernelError) as info:
        T(("M",), "float8")
    assert info.value.code is D.DSL_DTYPE_INVALID
    with pytest.raises(tessera.KernelError) as info:
        tessera.scalar("bf16")
    assert info.value.code is D.DSL_DTYPE_INVALID
    with pytest.raises(tessera.KernelError) as info:
        dot_shapes.trace(BF16, "not a spec")
    assert info.value.code is D.DSL_ARG_SPEC and "'C'" in info.value.message


@tessera.kernel
def read_before_assigned(A, C, *, BM=16):
    for k in tl.range(0, 64, BM):  # @rba-loop
        y = later + 1.0  # @rba-read
        later = tl.load(A, [k, 0], (BM, BM))
        tl.store(C, [k, 0], y)


def test_reading_a_loop_local_before_its_assignment():
    err = trace_error(read_before_assigned, F32, F32)
    assert_at(err, "rba-read", D.DSL_LOOP_ESCAPE)
    assert f"tl.range loop at line {line_of('rba-loop')} before the loop body assigns it" in err.message


@tessera.kernel
def inner_local_into_carried(A, C, *, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    for i in tl.range(0, 64, BM):  # @outer-loop
        for j in tl.range(0, 64, BM):
            part = tl.load(A, [i, j], (BM, BM))  # @part-def
        acc = part
    tl.store(C, [0, 0], acc)


def test_an_inner_loop_local_cannot_become_the_outer_carried_value():
    err = trace_error(inner_local_into_carried, F32, F32)
    assert_at(err, "outer-loop", D.DSL_LOOP_ESCAPE)
    assert f"'part' is defined inside the loop at line {line_of('part-def')}" in err.message


def test_scalar_constructor_needs_a_trace():
    with pytest.raises(tessera.KernelError) as info:
        tl.index(0)  # @index-outside
    assert_at(info.value, "index-outside", D.DSL_OUTSIDE_TRACE)


def test_ir_verifier_errors_are_relocated_to_the_traced_line():
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

    from tessera.dsl.errors import from_ir_error
    from tessera.ir import tile_ops as TO

    op = TO.ProgramIdOp(7)
    op.location = FileLineColLoc(StringAttr(__file__), IntAttr(line_of("relocated")), IntAttr(3))
    with pytest.raises(D.TesseraError) as info:
        op.verify()
    with pytest.raises(tessera.KernelError) as relocated:
        raise from_ir_error(info.value)  # @relocated
    assert_at(relocated.value, "relocated", D.TILE_ATTR_INVALID)
    assert relocated.value.col == 3 and "axis 7" in relocated.value.message


@tessera.kernel
def zero_step(A, C, *, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    for k in tl.range(0, 64, 0):  # @zero-step
        acc = acc + tl.load(A, [0, k], (BM, BM))
    tl.store(C, [0, 0], acc)


def test_zero_loop_step_is_a_bounds_error_at_the_loop():
    err = trace_error(zero_step, F32, F32)
    assert_at(err, "zero-step", D.DSL_LOOP_BOUNDS)
    assert "positive step" in err.message


@tessera.kernel
def matmul_operator(A, C, *, BM=16):
    a = tl.load(A, [0, 0], (BM, BM))
    tl.store(C, [0, 0], a @ a)  # @matmul-op


def test_matmul_operator_is_unsupported_and_points_to_dot():
    err = trace_error(matmul_operator, F32, F32)
    assert_at(err, "matmul-op", D.DSL_UNSUPPORTED)
    assert "tl.dot" in err.hint


def test_decorating_something_that_is_not_a_def_is_a_source_error():
    with pytest.raises(tessera.KernelError) as info:
        tessera.kernel(len)
    assert info.value.code is D.DSL_SOURCE
    assert "def function" in info.value.message
