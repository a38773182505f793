"""torch.ops.tessera.* on a GPU (issue 17, item 1): the cuda lane behind the custom ops.

Numerics against float64 in every GEMM layout and for both attentions;
torch.compile(fullgraph=True) of a small model that uses gemm and attention,
against eager; a training step through gemm's autograd against the same model
in torch's own ops (bf16 tolerance); and CUDA-graph capture and replay of each
op (no host sync, no allocation outside torch's allocator on the warm path).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch has no CUDA device", allow_module_level=True)

import tessera.ops as ops  # noqa: E402
import tessera.ops.torch_ops as tt  # noqa: E402

BF16_REL = 2e-2
DEV = "cuda"


def rel(x, ref) -> float:
    return float((x.double() - ref.double()).abs().max() / ref.double().abs().max().clamp_min(1e-30))


def randn(*shape, dtype=torch.bfloat16, scale=1.0):
    return (torch.randn(*shape, device=DEV) * scale).to(dtype)


@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, False), (True, True)])
def test_gemm_on_the_cuda_lane_in_every_layout(ta, tb):
    M, N, K = 300, 520, 256
    a = randn(K, M) if ta else randn(M, K)
    b = randn(N, K) if tb else randn(K, N)
    bias = randn(N, dtype=torch.float32)
    y = tt.gemm(a, b, bias, activation="gelu", trans_a=ta, trans_b=tb)
    ref = torch.nn.functional.gelu((a.double().t() if ta else a.double()) @ (b.double().t() if tb else b.double())
                                   + bias.double())
    assert ops.last_run().lane == "cuda" and y.device.type == "cuda"
    assert rel(y, ref) < BF16_REL


def test_attention_and_linear_attention_on_the_cuda_lane():
    q, k, v = randn(2, 8, 256, 128), randn(2, 2, 256, 128), randn(2, 2, 256, 128)
    o, lse = tt.attention(q, k, v, causal=True)
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double().repeat_interleave(4, 1),
                                                           v.double().repeat_interleave(4, 1), is_causal=True)
    assert ops.last_run().lane == "cuda" and rel(o, ref) < BF16_REL and lse.shape == (2, 8, 256)
    ql, kl, vl = (randn(1, 4, 256, 64, scale=0.3) for _ in range(3))
    g = -torch.rand(4, device=DEV) * 0.1
    ol = tt.linear_attention(ql, kl, vl, g)
    t = torch.arange(256, device=DEV, dtype=torch.float64)
    decay = torch.exp(g.double()[:, None, None] * (t[:, None] - t[None, :])) * (t[:, None] >= t[None, :])
    assert rel(ol, ((ql.double() @ kl.double().transpose(-1, -2)) * decay) @ vl.double()) < BF16_REL


class Block(torch.nn.Module):
    """An MLP and an attention, with Tessera's ops (tessera=True) or torch's."""

    def __init__(self, d=128, hidden=512, tessera=True):
        super().__init__()
        self.tessera = tessera
        self.w1 = torch.nn.Parameter(torch.randn(hidden, d, device=DEV, dtype=torch.bfloat16) * d ** -0.5)
        self.b1 = torch.nn.Parameter(torch.zeros(hidden, device=DEV))
        self.w2 = torch.nn.Parameter(torch.randn(d, hidden, device=DEV, dtype=torch.bfloat16) * hidden ** -0.5)

    def mlp(self, x):
        if self.tessera:
            return tt.gemm(tt.gemm(x, self.w1, self.b1, activation="gelu", trans_b=True), self.w2, trans_b=True,
                           residual=x)
        h = torch.nn.functional.gelu(torch.nn.functional.linear(x, self.w1, self.b1.to(x.dtype)))
        return torch.nn.functional.linear(h, self.w2) + x

    def forward(self, x, q, k, v):
        o = tt.attention(q, k, v, causal=True)[0] if self.tessera else \
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.mlp(x), o


def test_torch_compile_fullgraph_of_gemm_and_attention_matches_eager():
    torch.manual_seed(1)
    block = Block()
    x, q, k, v = randn(512, 128), randn(2, 4, 512, 128), randn(2, 4, 512, 128), randn(2, 4, 512, 128)
    explained = torch._dynamo.explain(block)(x, q, k, v)
    assert explained.graph_break_count == 0, explained.break_reasons
    with torch.no_grad():
        eager = block(x, q, k, v)
        compiled = torch.compile(block, fullgraph=True)(x, q, k, v)
    for e, c in zip(eager, compiled):
        assert rel(c, e) < 1e-2


def test_a_training_step_through_gemm_autograd_matches_torch():
    torch.manual_seed(2)
    ours, theirs = Block(tessera=True), Block(tessera=False)
    theirs.load_state_dict(ours.state_dict())
    x, target = randn(1024, 128), randn(1024, 128)
    for model in (ours, theirs):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = (model.mlp(x).float() - target.float()).square().mean()
        loss.backward()
        model.loss = loss.item()
        opt.step()
    assert abs(ours.loss - theirs.loss) / theirs.loss < 1e-2
    for name in ("w1", "b1", "w2"):
        p, r = getattr(ours, name), getattr(theirs, name)
        assert rel(p.grad, r.grad) < 3e-2, name
        assert rel(p.detach(), r.detach()) < 1e-2, name


def test_cuda_graph_capture_and_replay_of_each_op():
    w, bias = randn(512, 256), randn(512, dtype=torch.float32)
    x = randn(384, 256)
    q, k, v = randn(1, 8, 256, 64), randn(1, 8, 256, 64), randn(1, 8, 256, 64)
    g = -torch.rand(8, device=DEV) * 0.1

    def step():
        return (tt.gemm(x, w, bias, activation="relu", trans_b=True), tt.attention(q, k, v)[0],
                tt.linear_attention(q * 0.3, k * 0.3, v, g))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()  # warm: compile and plan outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = step()
    for _ in range(2):  # new inputs in the captured buffers, then replay
        for t in (x, q, k, v):
            t.copy_(torch.randn_like(t, dtype=torch.float32).to(t.dtype))
        graph.replay()
        torch.cuda.synchronize()
        for got, want in zip(static, step()):
            assert torch.equal(got, want)
    assert not math.isnan(float(static[0].float().sum()))
