"""Reference semantics of every logical tile op, checked against numpy float64.

Each test builds a tiny kernel (load inputs, apply the op, store), runs it on
fresh random inputs and compares with a float64 computation on the same
(already rounded) input values, within the per-dtype bound of
`tessera.reference.oracles`.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from tessera.ir.fragment_ops import FRAGMENT_OPS
from tessera.ir.parse import parse_module
from tessera.ir.tile_ops import LOGICAL_OPS
from tessera.reference import rel_error, run
from tessera.reference.interpreter import ReferenceInterpreter
from tessera.reference.numerics import erf
from tessera.reference.oracles import error_bound

DTYPES = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16), "f32": np.dtype(np.float32),
          "i32": np.dtype(np.int32), "i1": np.dtype(np.bool_)}
R, C = 16, 24


def single_op_kernel(in_elems: list[str], out_elem: str, body: str, shape=(R, C), out_shape=None) -> ModuleOp:
    """`@k(%X0..., %Y)`: load each input tile at [0, 0], run `body` (defines %y from %x0...), store %y."""
    out_shape = out_shape or shape
    dims = "x".join(map(str, shape))
    params = [f"%X{i}: memref<?x?x{e}>" for i, e in enumerate(in_elems)] + [f"%Y: memref<?x?x{out_elem}>"]
    loads = "\n".join(
        f"  %x{i} = tile.load %X{i}[%c0, %c0] pad 0.0 : memref<?x?x{e}> -> !tile.tile<{dims}x{e}>"
        for i, e in enumerate(in_elems))
    out_t = f"!tile.tile<{'x'.join(map(str, out_shape))}x{out_elem}>"
    text = f"""func.func @k({', '.join(params)}) {{
  %c0 = arith.constant 0 : index
{loads}
{body}
  tile.store %y, %Y[%c0, %c0] : {out_t} -> memref<?x?x{out_elem}>
  func.return
}}"""
    return parse_module(text, "single_op.mlir")


def run_single(module: ModuleOp, inputs: list[np.ndarray], out_dtype, out_shape) -> np.ndarray:
    out = np.zeros(out_shape, dtype=out_dtype)
    res = run(module, 1, [*inputs, out])
    assert res.lane == "reference" and res.kernel == "k"
    return out


def rand(rng, dtype, low=-2.0, high=2.0, shape=(R, C)) -> np.ndarray:
    """Random values of `dtype`, none of them zero."""
    x = rng.uniform(low, high, size=shape)
    x = np.where(np.abs(x) < 1e-3, 0.5, x)
    return x.astype(np.float32).astype(dtype)


UNARY = {  # op -> (float64 reference, input range)
    "neg": (np.negative, (-2, 2)), "abs": (np.abs, (-2, 2)), "exp": (np.exp, (-3, 3)),
    "exp2": (np.exp2, (-3, 3)), "log": (np.log, (0.1, 4)), "sqrt": (np.sqrt, (0.1, 4)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 4)), "tanh": (np.tanh, (-3, 3)),
    "erf": (np.vectorize(math.erf), (-3, 3)),
}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "max": np.maximum, "min": np.minimum}


@pytest.mark.parametrize("elem", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float_ops(name, elem):
    rng = np.random.default_rng()
    ref, (lo, hi) = UNARY[name]
    x = rand(rng, DTYPES[elem], lo, hi)
    t = f"!tile.tile<{R}x{C}x{elem}>"
    out = run_single(single_op_kernel([elem], elem, f"  %y = tile.{name} %x0 : {t}"), [x], DTYPES[elem], (R, C))
    assert out.dtype == DTYPES[elem]
    want = ref(x.astype(np.float64))
    assert rel_error(out, want) <= error_bound(elem)
    # The result is the float64 value rounded once to the element type (via f32): exact agreement.
    np.testing.assert_array_equal(out, want.astype(np.float32).astype(DTYPES[elem]))


@pytest.mark.parametrize("elem", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float_ops(name, elem):
    rng = np.random.default_rng()
    x, y = rand(rng, DTYPES[elem]), rand(rng, DTYPES[elem])
    t = f"!tile.tile<{R}x{C}x{elem}>"
    out = run_single(single_op_kernel([elem, elem], elem, f"  %y = tile.{name} %x0, %x1 : {t}"), [x, y],
                     DTYPES[elem], (R, C))
    want = BINARY[name](x.astype(np.float64), y.astype(np.float64))
    assert rel_error(out, want) <= error_bound(elem)
    # Same as computing in IEEE f32 and rounding to the element type, as the GPU does.
    f32 = BINARY[name](x.astype(np.float32), y.astype(np.float32))
    np.testing.assert_array_equal(out, f32.astype(DTYPES[elem]))


def test_bf16_rounds_after_every_op():
    """(x + y) - y in bf16 differs from x exactly where the intermediate sum was rounded."""
    rng = np.random.default_rng()
    bf = DTYPES["bf16"]
    x, y = rand(rng, bf), (rand(rng, bf).astype(np.float32) * 37.0).astype(bf)
    t = f"!tile.tile<{R}x{C}xbf16>"
    body = f"  %s = tile.add %x0, %x1 : {t}\n  %y = tile.sub %s, %x1 : {t}"
    out = run_single(single_op_kernel(["bf16", "bf16"], "bf16", body), [x, y], bf, (R, C))
    s = (x.astype(np.float32) + y.astype(np.float32)).astype(bf)
    want = (s.astype(np.float32) - y.astype(np.float32)).astype(bf)
    np.testing.assert_array_equal(out, want)
    assert np.any(out != x), "the test needs at least one rounded intermediate"


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "min", "neg", "abs"])
def test_int32_ops_wrap_and_truncate(name):
    rng = np.random.default_rng()
    x = rng.integers(-2**31, 2**31, size=(R, C), dtype=np.int32)
    y = rng.integers(-1000, 1000, size=(R, C), dtype=np.int32)
    y[y == 0] = 7
    t = f"!tile.tile<{R}x{C}xi32>"
    unary = name in ("neg", "abs")
    body = f"  %y = tile.{name} %x0 : {t}" if unary else f"  %y = tile.{name} %x0, %x1 : {t}"
    ins = [x] if unary else [x, y]
    out = run_single(single_op_kernel(["i32"] * len(ins), "i32", body), ins, np.int32, (R, C))
    xl, yl = x.astype(np.int64), y.astype(np.int64)
    ref = {"add": xl + yl, "sub": xl - yl, "mul": xl * yl, "max": np.maximum(xl, yl), "min": np.minimum(xl, yl),
           "div": np.trunc(xl / yl).astype(np.int64), "neg": -xl, "abs": np.abs(xl)}[name]
    np.testing.assert_array_equal(out, ref.astype(np.int32))  # wraps like the GPU's 32-bit ALU


def test_erf_matches_math_erf():
    xs = np.concatenate([np.linspace(-7, 7, 4001), np.geomspace(1e-8, 3, 200), [2.999999, 3.0, 3.000001]])
    want = np.array([math.erf(v) for v in xs])
    err = np.abs(erf(xs) - want)
    assert err.max() < 1e-12
    small = np.abs(xs) < 1e-3
    assert np.all(err[small] <= 1e-12 * np.abs(want[small]))
    assert np.isnan(erf(np.array([np.nan]))[0]) and list(erf(np.array([-np.inf, np.inf]))) == [-1.0, 1.0]


@pytest.mark.parametrize("elem", ["bf16", "f32"])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
def test_reduce_keeps_axis(kind, axis, elem):
    rng = np.random.default_rng()
    x = rand(rng, DTYPES[elem])
    out_shape = (1, C) if axis == 0 else (R, 1)
    out_t = f"!tile.tile<{out_shape[0]}x{out_shape[1]}x{elem}>"
    body = f"  %y = tile.reduce {kind} {axis} %x0 : !tile.tile<{R}x{C}x{elem}> -> {out_t}"
    out = run_single(single_op_kernel([elem], elem, body, out_shape=out_shape), [x], DTYPES[elem], out_shape)
    fn = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    want = fn(x.astype(np.float64), axis=axis, keepdims=True)
    assert rel_error(out, want) <= error_bound(elem)


def test_softmax_row_pattern_reduce_broadcast_sub():
    rng = np.random.default_rng()
    x = rand(rng, np.float32)
    t, r = f"!tile.tile<{R}x{C}xf32>", f"!tile.tile<{R}x1xf32>"
    body = (f"  %m = tile.reduce max 1 %x0 : {t} -> {r}\n  %b = tile.broadcast %m : {r} -> {t}\n"
            f"  %s = tile.sub %x0, %b : {t}\n  %e = tile.exp %s : {t}\n  %d = tile.reduce sum 1 %e : {t} -> {r}\n"
            f"  %db = tile.broadcast %d : {r} -> {t}\n  %y = tile.div %e, %db : {t}")
    out = run_single(single_op_kernel(["f32"], "f32", body), [x], np.float32, (R, C))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert rel_error(out, e / e.sum(axis=1, keepdims=True)) <= error_bound("f32")


def test_causal_mask_with_iota_cmp_select():
    rng = np.random.default_rng()
    x = rand(rng, np.float32)
    t, ti, tb = f"!tile.tile<{R}x{C}xf32>", f"!tile.tile<{R}x{C}xi32>", f"!tile.tile<{R}x{C}xi1>"
    body = (f"  %i = tile.iota 1 : {ti}\n  %j = tile.iota 0 : {ti}\n  %m = tile.cmp le %i, %j : {ti}\n"
            f"  %ninf = tile.constant -inf : {t}\n  %y = tile.select %m, %x0, %ninf : {t}")
    out = run_single(single_op_kernel(["f32"], "f32", body), [x], np.float32, (R, C))
    keep = np.arange(C)[None, :] <= np.arange(R)[:, None]
    np.testing.assert_array_equal(out, np.where(keep, x, -np.inf))
    mask = run_single(single_op_kernel(["i32", "i32"], "i1", f"  %y = tile.cmp gt %x0, %x1 : {ti}"),
                      [np.full((R, C), 3, np.int32), np.arange(R * C, dtype=np.int32).reshape(R, C)], np.bool_,
                      (R, C))
    np.testing.assert_array_equal(mask, 3 > np.arange(R * C).reshape(R, C))


def test_transpose_splat_and_constant():
    rng = np.random.default_rng()
    x = rand(rng, np.float32)
    t, tt = f"!tile.tile<{R}x{C}xf32>", f"!tile.tile<{C}x{R}xf32>"
    text = f"""func.func @k(%X: memref<?x?xf32>, %s: f32, %Y: memref<?x?xf32>) {{
  %c0 = arith.constant 0 : index
  %x = tile.load %X[%c0, %c0] pad 0.0 : memref<?x?xf32> -> {t}
  %tr = tile.transpose %x : {t} -> {tt}
  %sp = tile.splat %s : f32 -> {tt}
  %two = tile.constant 2.5 : {tt}
  %p = tile.mul %tr, %sp : {tt}
  %y = tile.add %p, %two : {tt}
  tile.store %y, %Y[%c0, %c0] : {tt} -> memref<?x?xf32>
  func.return
}}"""
    out = np.zeros((C, R), np.float32)
    s = float(rng.uniform(0.5, 3.0))
    run(parse_module(text), 1, [x, s, out])
    want = (x.T.astype(np.float32) * np.float32(s)) + np.float32(2.5)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("src,dst", [("f32", "bf16"), ("f32", "f16"), ("bf16", "f32"), ("f32", "i32"),
                                     ("i32", "f32"), ("bf16", "f16")])
def test_convert(src, dst):
    rng = np.random.default_rng()
    if src == "i32":
        x = rng.integers(-2**30, 2**30, size=(R, C), dtype=np.int32)
    else:
        x = (rng.standard_normal((R, C)) * 300).astype(np.float32).astype(DTYPES[src])
        x[0, :4] = np.array([2.5, -2.5, 1e10, -1e10], np.float32).astype(DTYPES[src])  # ties, saturation
    t = f"!tile.tile<{R}x{C}x{src}>"
    body = f"  %y = tile.convert %x0 : {t} -> !tile.tile<{R}x{C}x{dst}>"
    with np.errstate(over="ignore"):
        out = run_single(single_op_kernel([src], dst, body), [x], DTYPES[dst], (R, C))
        if dst == "i32":
            t64 = np.trunc(x.astype(np.float64))  # toward zero, saturating
            want = np.clip(t64, -2**31, 2**31 - 1).astype(np.int32)
        else:  # round to nearest even, through f32 for narrow targets
            want = x.astype(np.float32).astype(DTYPES[dst]) if src != "i32" else x.astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_convert_nan_to_int_is_zero():
    x = np.full((R, C), np.nan, np.float32)
    x[1] = 7.9
    body = f"  %y = tile.convert %x0 : !tile.tile<{R}x{C}xf32> -> !tile.tile<{R}x{C}xi32>"
    out = run_single(single_op_kernel(["f32"], "i32", body), [x], np.int32, (R, C))
    assert (out[0] == 0).all() and (out[1] == 7).all()


@pytest.mark.parametrize("elem,acc", [("bf16", "f32"), ("f16", "f32"), ("f16", "f16"), ("f32", "f32")])
def test_mma_against_float64(elem, acc):
    rng = np.random.default_rng()
    M, N, K = 32, 48, 64
    a = rand(rng, DTYPES[elem], shape=(M, K))
    b = rand(rng, DTYPES[elem], shape=(K, N))
    c = rand(rng, DTYPES[acc], shape=(M, N))
    text = f"""func.func @k(%A: memref<?x?x{elem}>, %B: memref<?x?x{elem}>, %C: memref<?x?x{acc}>) {{
  %c0 = arith.constant 0 : index
  %a = tile.load %A[%c0, %c0] pad 0.0 : memref<?x?x{elem}> -> !tile.tile<{M}x{K}x{elem}>
  %b = tile.load %B[%c0, %c0] pad 0.0 : memref<?x?x{elem}> -> !tile.tile<{K}x{N}x{elem}>
  %c = tile.load %C[%c0, %c0] pad 0.0 : memref<?x?x{acc}> -> !tile.tile<{M}x{N}x{acc}>
  %d = tile.mma %a, %b, %c : !tile.tile<{M}x{K}x{elem}>, !tile.tile<{K}x{N}x{elem}>, !tile.tile<{M}x{N}x{acc}>
  tile.store %d, %C[%c0, %c0] : !tile.tile<{M}x{N}x{acc}> -> memref<?x?x{acc}>
  func.return
}}"""
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    run(parse_module(text), 1, [a, b, c])
    assert c.dtype == DTYPES[acc]
    assert rel_error(c, want) <= error_bound(elem if acc == "f32" else acc)
    if acc == "f32":  # one rounding of the exact sum: within half an f32 ulp
        assert rel_error(c, want) <= 1e-7


def test_every_tile_op_has_a_reference_implementation():
    interp = ReferenceInterpreter.for_module(ModuleOp([]))
    missing = [op.name for op in (*LOGICAL_OPS, *FRAGMENT_OPS) if not interp.supports(op)]
    assert missing == []
