"""Tessera's ops as PyTorch custom ops: `torch.ops.tessera.gemm / attention / linear_attention`.

    import tessera.ops.torch_ops as tt       # registers the ops (torch is imported here, not by tessera.ops)
    y = tt.gemm(x, w, bias, activation="gelu", trans_b=True)     # an nn.Linear + GELU, autograd included
    o, lse = tt.attention(q, k, v, causal=True)

Why custom ops: torch.compile(fullgraph=True) must see each Tessera call as one
opaque node with a shape function (`register_fake`), not trace into Tessera's
Python (it would stop at the driver's cuInit); and training needs a backward.

Lanes follow the tensors, as any torch op does: CUDA tensors run the shipped
kernels on their device and the current stream, writing into outputs
allocated by torch's caching allocator (so a CUDA-graph capture sees no
foreign allocation); CPU tensors run the CPU reference interpreter (the same
IR), which `tessera.ops.last_run()` records as lane='reference'. Nothing falls
back: a configuration the GPU kernels cannot take raises the op's coded error.

Autograd: gemm's backward is gemms in the transposed layouts (dA = dZ @ op(B)^T,
dB = op(A)^T @ dZ, each in whatever layout makes it one call), with dZ = dY *
act'(Z) from one more gemm whose epilogue recomputes Z in registers and
multiplies act'(Z) by dY (activation '<act>_grad', dY in the residual slot):
the forward fuses the activation and never writes Z, and neither does the backward.
attention and linear_attention have no backward kernels yet: their backward
raises OPS_BACKWARD_UNSUPPORTED instead of returning a gradient.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch
from torch import Tensor

from tessera.ir import diagnostics as D
from tessera.ops._attention import attention as _attention
from tessera.ops._attention import linear_attention as _linear_attention
from tessera.ops._common import OpsError
from tessera.kernels import gemm as G
from tessera.ops._gemm import gemm as _gemm

ACTIVATIONS = ("none", "relu", "gelu", "silu")
GRADS = G.GRADS  # residual * act'(z): what the backward of a fused activation runs


# --- between torch CPU tensors and the reference lane's numpy arrays --------------------------------------------
def _to_numpy(t: Tensor | None):
    if t is None:
        return None
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _to_torch(x: np.ndarray) -> Tensor:
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(x).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x))


def _lane(op: str, tensors) -> str:
    """'cuda' when every tensor is on one CUDA device, 'reference' when every one is on the CPU."""
    devices = {t.device for t in tensors if t is not None}
    if len(devices) == 1:
        (device,) = devices
        if device.type in ("cuda", "cpu"):
            return "cuda" if device.type == "cuda" else "reference"
    raise OpsError(D.OPS_ARG_DEVICE, op, f"the tensors live on {', '.join(sorted(map(str, devices)))}: torch.ops."
                                         f"tessera.{op} takes all of them on one CUDA device or all on the CPU")


# --- gemm ---------------------------------------------------------------------------------------------------------
def _gemm_shape(a: Tensor, b: Tensor, trans_a: bool, trans_b: bool) -> tuple[int, int, int]:
    if a.dim() != 2 or b.dim() != 2:
        raise OpsError(D.OPS_ARG_SHAPE, "gemm", f"a and b must be 2-D; they are {list(a.shape)} and {list(b.shape)}")
    M, K = (a.shape[1], a.shape[0]) if trans_a else a.shape
    Kb, N = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if Kb != K:
        raise OpsError(D.OPS_ARG_SHAPE, "gemm", f"a{'.T' if trans_a else ''} is {M} x {K} but b{'.T' if trans_b else ''}"
                                                f" is {Kb} x {N}: the inner dims differ")
    return M, N, K


def _check_activation(activation: str) -> None:
    if activation not in ACTIVATIONS + GRADS:
        raise OpsError(D.OPS_ARG_VALUE, "gemm", f"activation={activation!r} is not one of "
                                                f"{', '.join(ACTIVATIONS + GRADS)}")


@torch.library.custom_op("tessera::gemm", mutates_args=())
def gemm_op(a: Tensor, b: Tensor, bias: Tensor | None, residual: Tensor | None, alpha: float, activation: str,
            trans_a: bool, trans_b: bool) -> Tensor:
    """act(alpha * op(a) @ op(b) + bias) + residual, in a's dtype (see tessera.ops.gemm)."""
    _check_activation(activation)
    M, N, _ = _gemm_shape(a, b, trans_a, trans_b)
    act = None if activation == "none" else activation
    lane = _lane("gemm", (a, b, bias, residual))
    if lane == "cuda":
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
        _gemm(a, b, bias=bias, residual=residual, alpha=alpha, activation=act, trans_a=trans_a, trans_b=trans_b,
              out=out, lane="cuda")
        return out
    return _to_torch(_gemm(_to_numpy(a), _to_numpy(b), bias=_to_numpy(bias), residual=_to_numpy(residual),
                           alpha=alpha, activation=act, trans_a=trans_a, trans_b=trans_b, lane="reference"))


@gemm_op.register_fake
def _gemm_fake(a, b, bias, residual, alpha, activation, trans_a, trans_b):
    _check_activation(activation)
    M, N, _ = _gemm_shape(a, b, trans_a, trans_b)
    return a.new_empty((M, N))


def _gemm_setup(ctx, inputs, output):
    a, b, bias, residual, alpha, activation, trans_a, trans_b = inputs
    ctx.save_for_backward(a, b, bias)
    ctx.alpha, ctx.activation, ctx.trans = alpha, activation, (trans_a, trans_b)
    ctx.has_residual = residual is not None


def _mm(x: Tensor, tx: bool, y: Tensor, ty: bool, alpha: float) -> Tensor:
    """alpha * op(x) @ op(y), op a transpose where the flag says so: one tessera gemm in that layout."""
    return torch.ops.tessera.gemm(x, y, None, None, alpha, "none", tx, ty)


def _gemm_backward(ctx, grad: Tensor):
    if ctx.activation in GRADS:
        raise OpsError(D.OPS_BACKWARD_UNSUPPORTED, "gemm", f"activation={ctx.activation!r} is itself a backward; "
                                                           "its gradient (a second derivative) is not built",
                       hint="differentiate through the forward activation once")
    a, b, bias = ctx.saved_tensors
    (ta, tb), alpha = ctx.trans, ctx.alpha
    grad = grad.contiguous()
    if ctx.activation == "none":
        dz = grad
    else:  # dZ = dY * act'(Z) in one gemm: Z, the pre-activation, is recomputed in registers and never stored
        dz = torch.ops.tessera.gemm(a, b, bias, grad.to(a.dtype), alpha, ctx.activation + "_grad", ta, tb)
    dz = dz.to(a.dtype)
    da = db = dbias = None
    if ctx.needs_input_grad[0]:  # dA = dZ @ op(B)^T; stored transposed: op(B) @ dZ^T
        da = _mm(b, tb, dz, True, alpha) if ta else _mm(dz, False, b, not tb, alpha)
    if ctx.needs_input_grad[1]:  # dB = op(A)^T @ dZ; stored transposed: dZ^T @ op(A)
        db = _mm(dz, True, a, ta, alpha) if tb else _mm(a, not ta, dz, False, alpha)
    if bias is not None and ctx.needs_input_grad[2]:
        dbias = dz.float().sum(0).reshape(bias.shape).to(bias.dtype)
    dres = grad if ctx.has_residual and ctx.needs_input_grad[3] else None
    return da, db, dbias, dres, None, None, None, None


gemm_op.register_autograd(_gemm_backward, setup_context=_gemm_setup)


def gemm(a: Tensor, b: Tensor, bias: Tensor | None = None, *, residual: Tensor | None = None, alpha: float = 1.0,
         activation: str | None = None, trans_a: bool = False, trans_b: bool = False) -> Tensor:
    """`torch.ops.tessera.gemm` with keyword defaults: act(alpha * op(a) @ op(b) + bias) + residual.

    bias: [N] or [1, N]; activation None/'none', 'relu', 'gelu' (erf) or 'silu'. Differentiable in a, b,
    bias and residual. For c/beta/out (in-place epilogues), call tessera.ops.gemm directly.
    """
    return torch.ops.tessera.gemm(a, b, bias, residual, float(alpha), activation or "none", trans_a, trans_b)


# --- attention ----------------------------------------------------------------------------------------------------
def _no_backward(op: str):
    def backward(ctx, *grads):
        raise OpsError(D.OPS_BACKWARD_UNSUPPORTED, op, f"{op} has no backward kernel yet, so no gradient is "
                                                       "returned (rather than a wrong one)")
    return backward


def _attention_shapes(q: Tensor, k: Tensor, v: Tensor) -> None:
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise OpsError(D.OPS_ARG_SHAPE, "attention", f"q, k, v must be [B, H, S, D]; they have shapes "
                                                     f"{list(q.shape)}, {list(k.shape)}, {list(v.shape)}")


@torch.library.custom_op("tessera::attention", mutates_args=())
def attention_op(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float | None) -> tuple[Tensor, Tensor]:
    """(o, lse) = softmax attention forward (see tessera.ops.attention)."""
    _attention_shapes(q, k, v)
    if _lane("attention", (q, k, v)) == "cuda":
        B, H, S, _ = q.shape
        o = torch.empty(q.shape[:3] + v.shape[3:], dtype=q.dtype, device=q.device)
        lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
        _attention(q, k, v, causal=causal, scale=scale, out=o, lse=lse, lane="cuda")
        return o, lse
    o, lse = _attention(_to_numpy(q), _to_numpy(k), _to_numpy(v), causal=causal, scale=scale, lane="reference")
    return _to_torch(o), _to_torch(lse)


@attention_op.register_fake
def _attention_fake(q, k, v, causal, scale):
    _attention_shapes(q, k, v)
    return q.new_empty(q.shape[:3] + v.shape[3:]), q.new_empty(q.shape[:3], dtype=torch.float32)


attention_op.register_autograd(_no_backward("attention"), setup_context=lambda ctx, inputs, output: None)


def attention(q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, scale: float | None = None
              ) -> tuple[Tensor, Tensor]:
    """`torch.ops.tessera.attention`: (o [B, H, S_q, D], lse [B, H, S_q] f32); no backward yet."""
    return torch.ops.tessera.attention(q, k, v, causal, None if scale is None else float(scale))


@torch.library.custom_op("tessera::linear_attention", mutates_args=())
def linear_attention_op(q: Tensor, k: Tensor, v: Tensor, g: Tensor | None) -> Tensor:
    """Causal linear attention forward with optional per-head log-decay g (see tessera.ops.linear_attention)."""
    _attention_shapes(q, k, v)
    if _lane("linear_attention", (q, k, v, g)) == "cuda":
        o = torch.empty(v.shape, dtype=v.dtype, device=v.device)
        _linear_attention(q, k, v, g, out=o, lane="cuda")
        return o
    return _to_torch(_linear_attention(_to_numpy(q), _to_numpy(k), _to_numpy(v), _to_numpy(g), lane="reference"))


@linear_attention_op.register_fake
def _linear_attention_fake(q, k, v, g):
    _attention_shapes(q, k, v)
    return v.new_empty(v.shape)


linear_attention_op.register_autograd(_no_backward("linear_attention"), setup_context=lambda ctx, inputs, output: None)


def linear_attention(q: Tensor, k: Tensor, v: Tensor, g: Tensor | None = None) -> Tensor:
    """`torch.ops.tessera.linear_attention`: o [B, H, T, D_v] in v's dtype; no backward yet."""
    return torch.ops.tessera.linear_attention(q, k, v, g)


__all__ = ["gemm", "attention", "linear_attention", "gemm_op", "attention_op", "linear_attention_op", "ACTIVATIONS",
           "GRADS"]
