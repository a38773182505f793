"""tl.range loops: scf.for with iter_args, nested loops, carried tiles and scalars, traced bounds."""

from __future__ import annotations

import pytest
from xdsl.dialects import scf

import tessera
from tessera import tl
from tessera.ir import diagnostics as D
from tessera.ir.parse import parse_module

T = tessera.tensor


def loops(tk) -> list[scf.ForOp]:
    return [op for op in tk.module.walk() if isinstance(op, scf.ForOp)]


def round_trips(tk) -> bool:
    text = tk.ir_text()
    return str(parse_module(text, "roundtrip.mlir")) + "\n" == text


@tessera.kernel
def k_loop(A, B, C, *, BM=32, BN=32, BK=16):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.f32)
    for k in tl.range(0, A.shape[1], BK):
        a = tl.load(A, [m0, k], (BM, BK))
        b = tl.load(B, [k, n0], (BK, BN))
        acc = tl.dot(a, b, acc)
    tl.store(C, [m0, n0], acc)


def test_carried_accumulator_becomes_an_iter_arg():
    tk = k_loop.trace(T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "f32"))
    (loop,) = loops(tk)
    assert len(loop.iter_args) == 1 and loop.results[0].name_hint == "acc"
    assert loop.body.block.args[0].name_hint == "k"
    acc_t = loop.results[0].type
    assert acc_t.get_shape() == (32, 32) and acc_t.element_type == tessera.f32.ir
    mma = next(op for op in loop.body.block.ops if op.name == "tile.mma")
    assert mma.acc is loop.body.block.args[1]  # the body reads the carried value, not a fresh zero
    assert loop.body.block.last_op.operands[0] is mma.result
    store = next(op for op in tk.module.walk() if op.name == "tile.store")
    assert store.value is loop.results[0]
    assert round_trips(tk)
    for_line = k_loop.fn.__code__.co_firstlineno + 5
    assert (loop.location.line.data, loop.location.column.data) == (for_line, 5)
    assert loop.body.block.last_op.location.line.data == for_line  # the scf.yield
    assert mma.location.line.data == for_line + 3


@tessera.kernel
def nested(X, Out, n_outer, *, BM=16, INNER=4):
    acc = tl.zeros((BM, BM), tl.f32)
    total = tl.index(0)
    for i in tl.range(n_outer):
        row = tl.zeros((BM, 1), tl.f32)
        for j in tl.range(i, i + INNER, 2):
            t = tl.load(X, [i, j], (BM, BM))
            row = row + tl.sum(t, 1)
            acc = acc + t
            total = total + 1
        acc = acc * row
    tl.store(Out, [total, 0], acc)


def test_nested_loops_carry_through_both_levels():
    tk = nested.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), 3)
    outer, inner = loops(tk)
    assert inner.parent_op() is outer
    assert [r.name_hint for r in outer.results] == ["acc", "total"]
    assert [r.name_hint for r in inner.results] == ["row", "acc", "total"]
    assert outer.ub.name_hint == "n_outer"
    assert inner.lb is outer.body.block.args[0]  # the inner loop starts at the outer induction variable
    assert [v.type for v in inner.iter_args][2] == tessera.index.ir
    assert inner.iter_args[1] is outer.body.block.args[1]  # acc enters the inner loop from the outer one
    store = next(op for op in tk.module.walk() if op.name == "tile.store")
    assert store.offsets[0] is outer.results[1] and store.value is outer.results[0]
    assert round_trips(tk)


@tessera.kernel
def meta_branch_in_loop(X, Out, *, SCALE=False, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    unused = tl.zeros((BM, BM), tl.f32)
    for k in tl.range(0, 64, BM):
        x = tl.load(X, [0, k], (BM, BM))
        for r in range(2):                       # an unrolled Python loop inside a traced one
            x = x + r
        if SCALE:
            unused = unused * 2.0
        acc = acc + x
    tl.store(Out, [0, 0], acc + unused)


def test_names_assigned_only_under_a_false_meta_branch_are_yielded_unchanged():
    plain = meta_branch_in_loop.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    scaled = meta_branch_in_loop.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), SCALE=True)
    (loop,) = loops(plain)
    i_unused = [r.name_hint for r in loop.results].index("unused")
    assert loop.body.block.last_op.operands[i_unused] is loop.body.block.args[1 + i_unused]
    assert sum(op.name == "tile.add" for op in loops(plain)[0].body.walk()) == 3  # x + 0, x + 1, acc + x
    assert any(op.name == "tile.mul" for op in loops(scaled)[0].body.walk())


@tessera.kernel
def traced_bounds(X, Out, lo, *, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    step = tl.dim(X, 1) // 4
    for k in tl.range(lo, X.shape[0], step):
        acc = tl.maximum(acc, tl.load(X, [k, 0], (BM, BM)))
    tl.store(Out, [0, 0], acc)


def test_bounds_may_be_traced_scalars():
    tk = traced_bounds.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"), tessera.scalar("i32"))
    (loop,) = loops(tk)
    assert loop.lb.owner.name == "arith.index_cast"  # an i32 bound is cast to index
    assert loop.ub.owner.name == "memref.dim" and loop.step.owner.name == "arith.divsi"
    assert round_trips(tk)


@tessera.kernel
def python_counter(X, Out, *, BM=16):
    count = 0
    for k in tl.range(0, 64, BM):
        count += 1
    tl.store(Out, [count, 0], tl.load(X, [0, 0], (BM, BM)))


def test_python_number_carried_across_iterations_is_an_error():
    with pytest.raises(tessera.KernelError) as info:
        python_counter.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    err = info.value
    assert err.code is D.DSL_LOOP_CARRIED and "'count'" in err.message and "tl.index(0)" in err.hint
    assert err.line == python_counter.fn.__code__.co_firstlineno + 4


@tessera.kernel
def retyped_carry(X, Out, *, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    for k in tl.range(0, 64, BM):
        acc = acc.to(tl.bf16)
    tl.store(Out, [0, 0], acc)


def test_a_carried_value_cannot_change_type():
    with pytest.raises(tessera.KernelError) as info:
        retyped_carry.trace(T(("M", "N"), "f32"), T(("M", "N"), "bf16"))
    err = info.value
    assert err.code is D.DSL_LOOP_CARRIED
    assert "64x16xf32" not in err.message and "16x16xf32" in err.message and "16x16xbf16" in err.message
    assert err.line == retyped_carry.fn.__code__.co_firstlineno + 4


@tessera.kernel
def loop_in_plain_helper_caller(X, Out, *, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    acc = plain_helper_with_loop(X, acc, BM)
    tl.store(Out, [0, 0], acc)


def plain_helper_with_loop(X, acc, BM):
    for k in tl.range(0, 64, BM):
        acc = acc + tl.load(X, [k, 0], (BM, BM))
    return acc


def test_tl_range_in_an_undecorated_helper_says_what_to_do():
    with pytest.raises(tessera.KernelError) as info:
        loop_in_plain_helper_caller.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    assert info.value.code is D.DSL_LOOP_SYNTAX and "@tessera.kernel" in info.value.hint
    assert info.value.line == plain_helper_with_loop.__code__.co_firstlineno + 1


@tessera.kernel
def spelled_out(X, Out, *, BM=16):
    acc = tl.zeros((BM, BM), tl.f32)
    for k in tessera.tl.range(0, 64, BM):        # the long spelling is recognised too
        for r in range(4):
            if r == 2:
                continue                         # belongs to the Python loop: allowed
            acc = acc + r
        acc = acc + tl.load(X, [k, 0], (BM, BM))
    tl.store(Out, [0, 0], acc)


def test_long_spelling_and_python_loop_control_inside_a_traced_loop():
    tk = spelled_out.trace(T(("M", "N"), "f32"), T(("M", "N"), "f32"))
    (loop,) = loops(tk)
    assert sum(op.name == "tile.add" for op in loop.body.walk()) == 4  # r = 0, 1, 3 and the load
    assert round_trips(tk)
