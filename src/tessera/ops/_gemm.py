"""`tessera.ops.gemm`: D = act(alpha * op(a) @ op(b) + beta * c + bias) + residual, on the shipped GEMM kernel."""

from __future__ import annotations

from tessera.compiler import arrays, records
from tessera.compiler.driver import device_arch
from tessera.compiler.launch_shape import LaunchShape
from tessera.ir import diagnostics as D
from tessera.kernels.epilogues import ACTIVATIONS, GRADS
from tessera.ops._common import Checker, Plan, memref, plan_for, start
from tessera.ops._warm import REALS, WarmCall, probe_all, warm_get, warm_put
from tessera.ops import _hopper as H
from tessera.ops.configs import gemm_config

OPERAND_DTYPES = ("bf16", "f16", "f32")
EPILOGUE_DTYPES = ("bf16", "f16", "f32")
GRID_Y_LIMIT = 65535
_ACTIVATIONS = {None: "none", **{a: a for a in ACTIVATIONS + GRADS}}
KERNEL = "tessera.kernels.gemm:gemm"  # loaded only to compile or interpret: a warm process reads launch records


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, bias=None, activation=None, residual=None, trans_a=False,
         trans_b=False, out=None, out_dtype=None, lane="auto", stream=None):
    """Matrix product with a fused epilogue: returns D = act(alpha * op(a) @ op(b) + beta * c + bias) + residual.

    a: [M, K] (or [K, M] with trans_a=True: a column-major M x K operand);
    b: [K, N] (or [N, K] with trans_b=True). a and b share dtype bf16, f16 or
    f32; products accumulate in f32 and the epilogue runs in f32.
    c: [M, N], read only when beta != 0 (beta == 0 never reads c, so NaN in
    c cannot leak); it must have the output dtype. bias: [N] (or [1, N]),
    added to every row; residual: [M, N], added after the activation; both
    bf16, f16 or f32. activation: None, 'relu', 'gelu' (exact erf form) or 'silu';
    or 'relu_grad', 'gelu_grad', 'silu_grad', the backward of a fused activation:
    D = residual * act'(alpha * op(a) @ op(b) + beta * c + bias), with residual the
    upstream gradient dY (required), so the pre-activation is never written.
    out: [M, N] array to write: c itself for in-place C = alpha*A@B + beta*C,
    else an array sharing no memory with the inputs (c is then copied into
    it first). out_dtype: the output dtype when out is None (default: c's
    dtype, else a's); a name ('bf16', 'float32'), numpy or torch dtype.
    lane: 'auto' (the GPU; OPS_NO_GPU without one), 'cuda', or 'reference'
    (the CPU interpreter, numpy arrays only). stream: the CUDA stream of the
    launch (a handle int, or a torch / cupy / cuda.core stream); default: the
    current stream of the arrays' framework (torch.cuda.current_stream(),
    cupy's current stream), else the legacy default stream.
    Arrays: torch CUDA tensors and __cuda_array_interface__ arrays are used in
    place and the call returns without waiting; numpy arrays are copied in and out.
    Returns out (allocated like `a` when not given). `tessera.ops.last_run()`
    then says what ran. Bad arguments raise OPS_* errors before anything is written.
    """
    warm = _warm_key(a, b, c, alpha, beta, bias, activation, residual, trans_a, trans_b, out, out_dtype, lane)
    if warm is not None:
        call = warm_get(warm[0])
        if call is not None:
            done = _warm_run(call, warm[1], a, c, out, alpha, beta, stream)
            if done is not None:
                return done
    lane = start("gemm", lane)
    ck = Checker("gemm", lane)
    A = ck.array("a", a, OPERAND_DTYPES, 2)
    B = ck.array("b", b, OPERAND_DTYPES, 2)
    if B.dtype != A.dtype:
        raise ck.fail(D.OPS_ARG_DTYPE, f"a is {A.dtype} and b is {B.dtype}; both operands take one dtype")
    ta, tb = ck.flag("trans_a", trans_a), ck.flag("trans_b", trans_b)
    M, K = (A.shape[1], A.shape[0]) if ta else A.shape
    Kb, N = (B.shape[1], B.shape[0]) if tb else B.shape
    if Kb != K:
        raise ck.fail(D.OPS_ARG_SHAPE, f"a{'.T' if ta else ''} is {M} x {K} but b{'.T' if tb else ''} is {Kb} x {N}: "
                                       "the inner dims differ")
    alpha_v, beta_v = ck.scalar("alpha", alpha), ck.scalar("beta", beta)
    act = _ACTIVATIONS.get(activation) if activation is None or isinstance(activation, str) else None
    if act is None:
        raise ck.fail(D.OPS_ARG_VALUE, f"activation={activation!r} is not one of None, 'relu', 'gelu', 'silu' "
                                       "(or their backwards 'relu_grad', 'gelu_grad', 'silu_grad')")
    ck.stream(stream)
    reads_c = beta_v != 0.0
    C = ck.array("c", c, EPILOGUE_DTYPES, 2) if c is not None else None
    if C is not None and C.shape != (M, N):
        raise ck.fail(D.OPS_ARG_SHAPE, f"c has shape {list(C.shape)}; the result is [{M}, {N}]")
    if reads_c and C is None:
        raise ck.fail(D.OPS_ARG_VALUE, f"beta={beta!r} scales c, but no c was given")
    Bias = ck.array("bias", bias, EPILOGUE_DTYPES, (1, 2)) if bias is not None else None
    if Bias is not None and Bias.shape not in ((N,), (1, N)):
        raise ck.fail(D.OPS_ARG_SHAPE, f"bias has shape {list(Bias.shape)}; it must be [{N}] or [1, {N}]")
    R = ck.array("residual", residual, EPILOGUE_DTYPES, 2) if residual is not None else None
    if R is not None and R.shape != (M, N):
        raise ck.fail(D.OPS_ARG_SHAPE, f"residual has shape {list(R.shape)}; the result is [{M}, {N}]")
    if act.endswith("_grad") and R is None:
        raise ck.fail(D.OPS_ARG_VALUE, f"activation={activation!r} multiplies the upstream gradient, which is "
                                       "passed as residual; residual is None",
                      hint="gemm(a, b, bias=..., activation='gelu_grad', residual=dy)")
    Out = arrays.view(out) if out is not None else None
    dtype = _out_dtype(ck, out_dtype, Out, C, A)
    if reads_c and C.dtype != dtype:
        raise ck.fail(D.OPS_ARG_DTYPE, f"c is {C.dtype} but the output is {dtype}; c is read in the output's dtype",
                      hint="convert c, or pass out_dtype (or out) matching c")
    in_place = reads_c and Out is not None and (out is c or _same_memory(Out, C))
    inputs = (("a", a, A), ("b", b, B), ("bias", bias, Bias), ("residual", residual, R))
    if reads_c and not in_place:
        inputs += (("c", c, C),)
    result, O = ck.output("out", out, a, A, (M, N), dtype, inputs, Out)

    device = ck.device or 0
    arch = device_arch(device) if lane == "cuda" else None
    hopper = arch is not None and H.eligible(arch, A, B, ta, tb, O)
    cfg = (H.gemm_config(M, N, K, A.dtype, reads_c or R is not None, H.layout_of(ta, tb)) if hopper
           else gemm_config(M, N, K, arch, A.dtype))
    # decode: C^T = op(b)^T op(a)^T, the wide operand in wgmma's rows, where the config is a swapped one (the
    # untuned rule's up to SWAP_DEFAULT_M, or a tuned or pinned one); a swapped one for a call that cannot swap
    # gives way to the rule. The epilogue's inputs swap too: c and a residual are read through their transposed
    # views, as C^T is written, and a bias is added along C^T's rows (BIAS_AXIS="m")
    if hopper and cfg.swap and not H.can_swap(M, N):
        cfg = H.default_config(M, N, K, reads_c or R is not None, H.layout_of(ta, tb))
    swap = hopper and cfg.swap
    if swap:
        ta, tb = not tb, not ta
    if -(-N // cfg.BN) > GRID_Y_LIMIT:
        raise ck.fail(D.OPS_ARG_SHAPE, f"N = {N} needs {-(-N // cfg.BN)} column programs; the grid's y limit is "
                                       f"{GRID_Y_LIMIT}")
    key = ("gemm", lane, device, A.dtype, dtype, reads_c, Bias and Bias.dtype, R and R.dtype, ta, tb, act, cfg, swap)
    plan = plan_for(key, lambda: _build(lane, device, A.dtype, dtype, reads_c, Bias, R, ta, tb, act, cfg, swap))
    if reads_c and not in_place:
        arrays.copy_into(result, c)
    bias_2d = None if bias is None else bias.reshape(1, N) if Bias.ptr is None else bias
    values = []
    if swap:  # a' = b, b' = a, and C^T: element [n, m] of the kernel's output is C[m, n], at n + m * N
        memref(values, b, B)
        memref(values, a, A)
        values += [result if O.ptr is None else O.ptr, N, M, 1, N]
        if Bias is not None:  # bias[n] for every column of C^T: an [N, M] view of column stride 0
            values += [bias if Bias.ptr is None else Bias.ptr, N, M, 1, 0]
    else:
        memref(values, a, A)
        memref(values, b, B)
        memref(values, result, O)
    if Bias is not None and not swap:
        memref(values, bias_2d, Bias, (1, N))
    if R is not None and swap:  # read as C^T is written: element [n, m] at n + m * N
        values += [residual if R.ptr is None else R.ptr, N, M, 1, N]
    elif R is not None:
        memref(values, residual, R)
    values.append(alpha_v)
    if reads_c:
        values.append(beta_v)
    fargs = None
    if lane == "reference":
        fargs = [x for x in (a, b, result, bias_2d, residual) if x is not None] + [alpha_v]
        fargs += [beta_v] if reads_c else []
    grid = (-(-N // cfg.BM), -(-M // cfg.BN)) if swap else (-(-M // cfg.BM), -(-N // cfg.BN))  # G.grid, inlined
    plan.run(grid, values, fargs, ck.launch_stream(stream), device)
    if warm is not None and lane == "cuda":
        _remember(warm, plan, grid, device, values, (A, B, C, Bias, R, O), reads_c, out is None,
                  reads_c and not in_place, arrays.stream_reader(a, A), swap)
    return result


# --- the warm path (see tessera.ops._warm) -------------------------------------------------------------

def _warm_key(a, b, c, alpha, beta, bias, activation, residual, trans_a, trans_b, out, out_dtype, lane):
    """(call key, addresses of a, b, c, bias, residual, out) for the warm path, or None (take the full path)."""
    if (lane != "auto" and lane != "cuda") or trans_a.__class__ is not bool or trans_b.__class__ is not bool:
        return None
    if alpha.__class__ not in REALS or beta.__class__ not in REALS:
        return None
    same = out is c  # probed once; the key says so
    found = probe_all((a, b, c, bias, residual, None if same else out))
    if found is None:
        return None
    keys, addresses = found
    if same:
        addresses[5] = addresses[2]
    return ("gemm", lane, trans_a, trans_b, beta != 0.0, activation, out_dtype, same, keys), addresses


def _warm_run(call: WarmCall, addresses: list, a, c, out, alpha, beta, stream):
    """The result of a warm call, or None when an address check fails (the full path then names the problem)."""
    if call.in_place is not None and call.in_place != (out is c or (call.same_layout and
                                                                    addresses[5] == addresses[2])):
        return None
    if call.alloc is None:
        result = out
    else:
        result = arrays.empty_like(a, *call.alloc)
        found = None if result is None else arrays.probe(result)
        if found is None:
            return None
        addresses[5] = found[1]
    before = (lambda: arrays.copy_into(result, c)) if call.copy_c else None
    if not call.run(addresses, (alpha, beta), stream, before):
        return None
    return result


def _remember(warm, plan, grid, device, values, views, reads_c: bool, allocated: bool, copy_c: bool, stream,
              swap: bool = False) -> None:
    """Keep the verdict of a checked cuda-lane call: where its addresses and scalars go, what to re-check.

    `views`: ArrayViews of a, b, c, bias, residual and the output (None where absent), in the address order.
    `swap`: the kernel takes b, a, the output's transposed view, the bias along its rows and the residual's
    transposed view (a decode GEMM run swapped).
    """
    call_key = warm[0]
    if any(v is not None and v.ptr is None for v in views):
        return  # host arrays: they are staged through the device, nothing to win
    O = views[5]
    fills, at = [], 0
    for i in ((1, 0, 5, 3, 4) if swap else (0, 1, 5, 3, 4)):  # the kernel's memref order: a, b, out, bias, residual
        v = views[i]
        if v is not None:
            fills.append((at, i, arrays.ITEMSIZE[v.dtype]))
            at += 1 + 2 * (2 if i == 3 else len(v.shape))  # bias goes in as [1, N]
    scalars = (at, at + 1) if reads_c else (at,)
    if len(values) != at + len(scalars):
        return  # not the layout above: never guess, stay on the full path
    disjoint = ()
    if not allocated and O.nbytes > 0:  # what Checker.output checks the output against
        inputs = (0, 1, 3, 4, 2) if copy_c else (0, 1, 3, 4)
        disjoint = tuple((i, views[i].nbytes) for i in inputs if views[i] is not None and views[i].nbytes > 0)
    C = views[2]
    in_place = None if not reads_c or allocated else not copy_c
    warm_put(call_key, WarmCall(plan, grid, device, list(values), tuple(fills), scalars, disjoint, 5, O.nbytes, stream,
                                (views[0], O.shape, O.dtype) if allocated else None, in_place,
                                C is not None and O.shape == C.shape and O.dtype == C.dtype, copy_c))


def _same_memory(v: arrays.ArrayView, C: arrays.ArrayView) -> bool:
    return v.ptr is not None and v.ptr == C.ptr and v.shape == C.shape and v.dtype == C.dtype


def _out_dtype(ck: Checker, out_dtype, Out, C, A) -> str:
    if out_dtype is not None:
        name = arrays.dtype_name(out_dtype)
        if name not in EPILOGUE_DTYPES:
            raise ck.fail(D.OPS_ARG_DTYPE, f"out_dtype={out_dtype!r}; the output takes bf16, f16 or f32")
        return name  # an `out` of another dtype is reported by Checker.output
    if Out is not None and Out.dtype in EPILOGUE_DTYPES:
        return Out.dtype
    return C.dtype if C is not None else A.dtype


def _build(lane, device, in_dt, out_dt, reads_c, Bias, R, ta, tb, act, cfg, swap: bool = False) -> Plan:
    T, S = records.tensor, records.scalar
    row_bias = swap and Bias is not None  # swapped: the bias runs along C^T's rows (see kernels.gemm.epilogue)
    specs = (T(("K", "M") if ta else ("M", "K"), in_dt), T(("N", "K") if tb else ("K", "N"), in_dt),
             T(("M", "N"), out_dt),
             None if Bias is None else T(("M", "N") if row_bias else (1, "N"), Bias.dtype),
             T(("M", "N"), R.dtype) if R is not None else None, S("f32"), S("f32") if reads_c else None)
    meta = {**cfg.meta(), "TRANS_A": ta, "TRANS_B": tb, "ACTIVATION": act, **({"BIAS_AXIS": "m"} if row_bias else {})}
    config = {**meta, "stages": cfg.stages}
    if isinstance(cfg, H.HopperConfig):  # sm_90a: warp-specialised wgmma + TMA (see tessera.ops._hopper)
        config.update({**cfg.shape.as_dict(), "config_source": cfg.source, **({"swap_ab": True} if swap else {})})
        compiled = records.compiled(KERNEL, specs, meta, arch="sm_90a", shape=cfg.shape)
        return Plan("gemm", lane, None, compiled, config)
    if lane == "cuda":
        compiled = records.compiled(KERNEL, specs, meta, arch=device_arch(device), shape=LaunchShape(cfg.stages))
        return Plan("gemm", lane, None, compiled, config)
    return Plan("gemm", lane, records.resolve(KERNEL).trace(*records.specs_of(specs), **meta), None, config)
