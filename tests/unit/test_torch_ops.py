"""torch.ops.tessera.* (issue 17, item 1) on the CPU: the reference lane behind torch custom ops.

What a PyTorch user relies on, checked against float64 references on fresh
random inputs: forward numerics in every GEMM layout and activation, gradients
of gemm (dA, dB, dbias, dresidual) against float64 autograd, opcheck (schema,
fake tensors, autograd registration, AOT dispatch), torch.compile(fullgraph=True)
capture with zero graph breaks, and the coded errors: bad shapes and options
both eagerly and under fake tensors, and a backward through attention or linear
attention (no backward kernel yet) that raises instead of returning a gradient.
The CUDA side (the cuda lane, CUDA graphs, a training step) is tests/gpu/test_torch_ops_gpu.py.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import tessera.ops as ops  # noqa: E402
import tessera.ops.torch_ops as tt  # noqa: E402
from tessera.ir import diagnostics as D  # noqa: E402

BF16_REL = 2e-2   # bf16 output: 8 mantissa bits (2^-8 = 0.4%) plus the f32 accumulation order, against max |ref|
GRAD_REL = 3e-2   # a gradient is a second bf16 product of a rounded dZ


def rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    return float((x.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def randn(*shape, dtype=torch.bfloat16, gen):
    return torch.randn(*shape, generator=gen, dtype=torch.float32).to(dtype)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(int(torch.randint(0, 2**31 - 1, ()).item()))


def stored(x: torch.Tensor, transposed: bool) -> torch.Tensor:
    return x.t().contiguous() if transposed else x


def torch_gemm(a, b, bias, residual, alpha, activation, ta, tb):
    """The same function in float64 torch ops, from the stored operands."""
    z = alpha * (a.double().t() if ta else a.double()) @ (b.double().t() if tb else b.double())
    if bias is not None:
        z = z + bias.double().reshape(1, -1)
    y = {"none": lambda t: t, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
         "silu": torch.nn.functional.silu}[activation](z)
    return y + residual.double() if residual is not None else y


LAYOUTS = [(False, False), (False, True), (True, False), (True, True)]


@pytest.mark.parametrize("ta, tb", LAYOUTS)
@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "silu"])
def test_gemm_forward_matches_float64_in_every_layout(ta, tb, activation, gen):
    M, N, K = 37, 50, 24  # ragged against every tile
    a, b = stored(randn(M, K, gen=gen), ta), stored(randn(K, N, gen=gen), tb)
    bias, res = randn(N, dtype=torch.float32, gen=gen), randn(M, N, gen=gen)
    y = tt.gemm(a, b, bias, residual=res, alpha=0.75, activation=activation, trans_a=ta, trans_b=tb)
    assert y.shape == (M, N) and y.dtype == torch.bfloat16
    assert rel(y, torch_gemm(a, b, bias, res, 0.75, activation, ta, tb)) < BF16_REL
    assert ops.last_run().lane == "reference" and ops.last_run().kernel == "gemm"


@pytest.mark.parametrize("ta, tb", LAYOUTS)
@pytest.mark.parametrize("activation", ["none", "gelu", "silu", "relu"])
def test_gemm_gradients_match_float64_autograd(ta, tb, activation, gen):
    M, N, K = 33, 40, 48
    a = stored(randn(M, K, gen=gen), ta).requires_grad_()
    b = stored(randn(K, N, gen=gen), tb).requires_grad_()
    bias = randn(1, N, dtype=torch.float32, gen=gen).requires_grad_()
    res = randn(M, N, gen=gen).requires_grad_()
    dy = randn(M, N, gen=gen)
    y = tt.gemm(a, b, bias, residual=res, alpha=1.25, activation=activation, trans_a=ta, trans_b=tb)
    y.backward(dy)
    leaves = [t.detach().double().requires_grad_() for t in (a, b, bias, res)]
    torch_gemm(*leaves[:2], leaves[2], leaves[3], 1.25, activation, ta, tb).backward(dy.double())
    for mine, ref, name in zip((a, b, bias, res), leaves, ("a", "b", "bias", "residual")):
        assert mine.grad.shape == mine.shape and mine.grad.dtype == mine.dtype, name
        assert rel(mine.grad, ref.grad) < GRAD_REL, name


@pytest.mark.parametrize("activation", ["relu", "gelu", "silu"])
def test_the_backward_runs_one_fused_gemm_for_dz(activation, gen, monkeypatch):
    """dZ = dY * act'(Z) is one tessera gemm ('<act>_grad', dY in the residual slot): no separate activation
    backward and no stored pre-activation; that gemm alone matches float64."""
    M, N, K = 29, 40, 32
    a, w = randn(M, K, gen=gen).requires_grad_(), randn(N, K, gen=gen).requires_grad_()
    bias, dy = randn(N, dtype=torch.float32, gen=gen), randn(M, N, gen=gen)
    seen, original = [], tt._gemm

    def spy(*args, **kwargs):
        seen.append(kwargs.get("activation"))
        return original(*args, **kwargs)

    monkeypatch.setattr(tt, "_gemm", spy)
    tt.gemm(a, w, bias, activation=activation, trans_b=True).backward(dy)
    assert seen == [activation, activation + "_grad", None, None]  # forward; dZ; dA and dW plain
    zt = (a.detach().double() @ w.detach().double().t() + bias.double()).requires_grad_()
    {"relu": torch.relu, "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu}[activation](zt) \
        .backward(dy.double())
    dz = tt.gemm(a.detach(), w.detach(), bias, residual=dy, activation=activation + "_grad", trans_b=True)
    assert dz.dtype == torch.bfloat16 and rel(dz, zt.grad) < BF16_REL


def test_a_grad_activation_needs_the_upstream_gradient(gen):
    a, w = randn(8, 16, gen=gen), randn(8, 16, gen=gen)
    with pytest.raises(D.TesseraError) as err:
        ops.gemm(a.float().numpy(), w.float().numpy(), activation="gelu_grad", trans_b=True, lane="reference")
    assert err.value.code is D.OPS_ARG_VALUE and "residual is None" in str(err.value) and err.value.hint
    y = tt.gemm(a.requires_grad_(), w, residual=randn(8, 8, gen=gen), activation="gelu_grad", trans_b=True)
    with pytest.raises(D.TesseraError) as err:
        y.sum().backward()
    assert err.value.code is D.OPS_BACKWARD_UNSUPPORTED and "second derivative" in str(err.value)


def test_gemm_gradient_only_where_asked(gen):
    a, w = randn(16, 32, gen=gen).requires_grad_(), randn(24, 32, gen=gen)  # a frozen weight
    tt.gemm(a, w, trans_b=True).sum().backward()
    assert a.grad is not None and w.grad is None


def test_opcheck_passes_on_every_op(gen):
    from torch.library import opcheck
    a, w = randn(20, 16, gen=gen).requires_grad_(), randn(24, 16, gen=gen).requires_grad_()
    bias = randn(24, dtype=torch.float32, gen=gen).requires_grad_()
    checks = [(torch.ops.tessera.gemm.default, (a, w, bias, None, 1.0, "gelu", False, True)),
              (torch.ops.tessera.gemm.default, (a.detach().t().contiguous(), w.detach(), None, None, 0.5, "none",
                                                True, True))]
    q, kv = randn(1, 2, 20, 64, gen=gen), randn(1, 1, 24, 64, gen=gen)
    checks += [(torch.ops.tessera.attention.default, (q, kv, kv, True, None)),
               (torch.ops.tessera.attention.default, (q, kv, kv, False, 0.3)),
               (torch.ops.tessera.linear_attention.default, (q, q, q, torch.full((2,), -0.1))),
               (torch.ops.tessera.linear_attention.default, (q, q, q, None))]
    for op, args in checks:
        result = opcheck(op, args)
        assert set(result.values()) == {"SUCCESS"}, (op, result)


def test_torch_compile_captures_every_op_with_no_graph_break(gen):
    w, bias = randn(64, 64, gen=gen), randn(64, dtype=torch.float32, gen=gen)

    def model(x, q, kv, g):
        h = tt.gemm(x, w, bias, activation="silu", trans_b=True)
        o, lse = tt.attention(q, kv, kv, causal=True)
        return h * 2, o, lse, tt.linear_attention(q, q, q, g)

    args = (randn(40, 64, gen=gen), randn(1, 2, 24, 64, gen=gen), randn(1, 2, 24, 64, gen=gen),
            torch.full((2,), -0.05))
    explained = torch._dynamo.explain(model)(*args)
    assert explained.graph_break_count == 0 and explained.graph_count == 1, explained.break_reasons
    eager = model(*args)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")(*args)
    for e, c in zip(eager, compiled):
        assert torch.equal(e, c)


def test_torch_compile_inductor_forward_and_backward_match_eager(gen):
    w1, w2 = (randn(48, 32, gen=gen) * 0.2).requires_grad_(), (randn(32, 48, gen=gen) * 0.2).requires_grad_()

    def mlp(x):
        return tt.gemm(tt.gemm(x, w1, activation="gelu", trans_b=True), w2, trans_b=True, residual=x)

    x = randn(40, 32, gen=gen)
    eager = mlp(x)
    eager.float().square().mean().backward()
    grads = w1.grad.clone(), w2.grad.clone()
    w1.grad = w2.grad = None
    compiled = torch.compile(mlp, fullgraph=True)(x)  # inductor: forward through the custom ops
    assert torch.equal(compiled, eager)
    compiled.float().square().mean().backward()
    assert rel(w1.grad, grads[0].double()) < 1e-2 and rel(w2.grad, grads[1].double()) < 1e-2


def attention_ref(q, k, v, causal, scale):
    q, k, v = q.double(), k.double(), v.double()
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), -math.inf)
    lse = torch.logsumexp(s, -1)
    return torch.softmax(s, -1) @ v, lse


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_float64_with_lse(causal, gen):
    q, k, v = randn(1, 4, 21, 64, gen=gen), randn(1, 2, 30, 64, gen=gen), randn(1, 2, 30, 64, gen=gen)
    o, lse = tt.attention(q, k, v, causal=causal)
    ro, rlse = attention_ref(q, k, v, causal, 64 ** -0.5)
    assert o.dtype == torch.bfloat16 and lse.dtype == torch.float32 and lse.shape == (1, 4, 21)
    assert rel(o, ro) < BF16_REL and float((lse.double() - rlse).abs().max()) < 2e-2
    assert ops.last_run().lane == "reference" and ops.last_run().kernel == "flash_attention"


def test_linear_attention_matches_float64(gen):
    B, H, T, Dk = 1, 2, 40, 64
    q, k, v = (randn(B, H, T, Dk, gen=gen) * 0.3 for _ in range(3))
    g = -torch.rand(H, generator=gen) * 0.2
    o = tt.linear_attention(q, k, v, g)
    t = torch.arange(T, dtype=torch.float64)
    decay = torch.exp(g.double()[:, None, None] * (t[:, None] - t[None, :])) * (t[:, None] >= t[None, :])
    ref = ((q.double() @ k.double().transpose(-1, -2)) * decay) @ v.double()
    assert o.shape == v.shape and rel(o, ref) < BF16_REL


@pytest.mark.parametrize("call", [
    lambda q, k, v: tt.attention(q, k, v)[0],
    lambda q, k, v: tt.linear_attention(q, k, v),
], ids=["attention", "linear_attention"])
def test_backward_without_a_kernel_raises_a_coded_error(call, gen):
    q = randn(1, 1, 16, 64, gen=gen).requires_grad_()
    k, v = randn(1, 1, 16, 64, gen=gen), randn(1, 1, 16, 64, gen=gen)
    out = call(q, k, v)
    with pytest.raises(D.TesseraError) as err:
        out.float().sum().backward()
    assert err.value.code is D.OPS_BACKWARD_UNSUPPORTED and "no backward kernel" in err.value.message
    with torch.no_grad():  # inference through the same op is fine
        assert call(q, k, v).shape == (1, 1, 16, 64)


def test_bad_arguments_raise_coded_errors_eagerly_and_under_fake_tensors(gen):
    from torch._subclasses.fake_tensor import FakeTensorMode
    a, b = randn(8, 16, gen=gen), randn(12, 16, gen=gen)
    cases = [((a, b), {}, D.OPS_ARG_SHAPE, "inner dims differ"),
             ((a, b), {"trans_b": True, "activation": "tanh"}, D.OPS_ARG_VALUE, "activation='tanh'"),
             ((a[0], b), {}, D.OPS_ARG_SHAPE, "must be 2-D")]
    for args, kw, code, text in cases:
        with pytest.raises(D.TesseraError) as eager:
            tt.gemm(*args, **kw)
        assert eager.value.code is code and text in eager.value.message
        with FakeTensorMode() as mode, pytest.raises(D.TesseraError) as fake:
            tt.gemm(*(mode.from_tensor(t) for t in args), **kw)
        assert fake.value.code is code
    with pytest.raises(D.TesseraError) as err:
        tt.attention(randn(2, 16, 64, gen=gen), randn(2, 16, 64, gen=gen), randn(2, 16, 64, gen=gen))
    assert err.value.code is D.OPS_ARG_SHAPE
    with pytest.raises(D.TesseraError) as err:  # the op's own checks still run behind the custom op
        tt.gemm(randn(8, 16, gen=gen), randn(16, 8, dtype=torch.float16, gen=gen))
    assert err.value.code is D.OPS_ARG_DTYPE


def test_importing_tessera_ops_does_not_import_torch():
    import subprocess
    import sys
    code = "import sys, tessera.ops; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120).stdout.strip() == "False"
