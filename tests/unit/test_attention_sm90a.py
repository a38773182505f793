"""Flash attention on sm_90a through the general warp-specialised loop body (issue 15), without a GPU.

The shipped tile program (kernels/flash_attention.py) compiles for sm_90a with two
wgmmas per KV step (S = Q K^T from shared memory, O += P V with P from registers:
the RS form), K and V on a TMA ring with their own barriers, Q loaded once per tile,
and the online softmax on the consumers' registers in wgmma's D layout (row max and
sum by quad shuffles). Checked here: NVRTC compiles it for d = 64 and 128, causal
and not, with HGMMA and no local memory; shared memory holds exactly the staged
tiles and their barriers (no score tile round trip); and the emitted C++ on the g++
host emulator matches float64 on ragged, causal, GQA, S_q != S_k and decode shapes,
on rows whose every key is masked (row max -inf, LSE -inf, O = 0), and on a loop
whose accumulator starts non-zero. A wait that never completes is
RUNTIME_LAUNCH_TIMEOUT on the emulator, within the limit set below.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import tessera
import tessera.runtime.host_emulator as EH
from tessera.compiler.driver import default_pipeline, lower
from tessera.compiler.launch_shape import LaunchShape
from tessera.dsl import kernel, tl
from tessera.ir.diagnostics import TesseraError
from tessera.kernels import flash_attention as FA
from tessera.ops._hopper_attention import candidates, config_of
from tessera.ops.configs import HOPPER_ATTENTION, attention_config
from tessera.reference.oracles import error_bound, rel_error
from tessera.target.nvidia.emit.cuda import emit_cuda
from tessera.target.nvidia.toolchain.sass import count_instructions, disassemble, resource_usage

T = tessera.tensor
NP = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}
STAGES = HOPPER_ATTENTION.stages
LSE_TOL = 1e-4  # f32 row sums of f32 probabilities: only the order of the sums differs from float64


@pytest.fixture(autouse=True)
def _short_deadlock_limit(monkeypatch):
    """A deadlock ends in 5 s (these kernels finish in about a second on the emulator)."""
    monkeypatch.setattr(EH, "WAIT_LIMIT_S", 5)


def _trace(D: int, causal: bool, BN: int, dtype: str = "bf16", kernel_fn=FA.flash_attention, BM: int = 128,
           even: bool = False, fold: bool = False, splits: int = 1):
    q, kv = T(("B", "H", "S", D), dtype), T(("B", "H_kv", "S_k", D), dtype)
    extra = {**({"EVEN_N": True} if even else {}), **({"FOLD_SCALE": True} if fold else {}),
             **({"KV_SPLITS": splits} if splits > 1 else {})}
    o, lse = ((T(("B", "HS", "S", D), "f32"), T(("B", "HS", "S"), "f32")) if splits > 1  # key slices' partials
              else (q, T(("B", "H", "S"), "f32")))
    return kernel_fn.trace(q, kv, kv, o, lse, tessera.scalar("f32"), CAUSAL=causal, BLOCK_M=BM, BLOCK_N=BN, **extra)


def _lowered(traced, stages: int = STAGES):
    module, _ = lower(traced, default_pipeline("sm_90a", stages=stages), "sm_90a")
    return module


def _overlaps_tiles(module) -> bool:
    """Whether the consumers overlap tiles (ws_tile_overlap): Q is double-buffered, so its wgmmas name a slot."""
    return any(op.name == "nv.wgmma" and op.a_slot is not None for op in module.walk())


# every (config, head dim, causal) ops.attention can launch on sm_90: the rule's defaults and every autotuning
# candidate (causal takes no pingpong)
def _defaults(D: int, causal: bool) -> tuple:
    return tuple(attention_config(rows, D, hopper=True, causal=causal) for rows in (16, 4096))


CASES = [(cfg, D, causal) for D in (64, 128, 256) for causal in (False, True)
         for cfg in dict.fromkeys(_defaults(D, causal) + tuple(config_of(c, Dh=D) for c in candidates(D, causal)))]


def _case_id(case) -> str:
    cfg, D, causal = case
    return (f"{cfg.BLOCK_M}x{cfg.BLOCK_N}s{cfg.stages}-{cfg.schedule}-d{D}" + "-causal" * causal
            + "-dynamic" * (cfg.tiles == "dynamic"))


@pytest.mark.parametrize("cfg, D, causal", CASES, ids=[_case_id(c) for c in CASES])
@pytest.mark.parametrize("fast", [False, True])
def test_compiles_with_hgmma_and_no_local_memory(cfg, D, causal, fast):
    """Every config ops.attention picks on sm_90 (default or tuned), plain and as ops mostly runs it (EVEN_N,
    FOLD_SCALE)."""
    traced = _trace(D, causal, cfg.BLOCK_N, BM=cfg.BLOCK_M, even=fast, fold=fast, splits=cfg.kv_splits)
    ck = tessera.compile(traced, "sm_90a", stages=cfg.stages, schedule=cfg.schedule, tiles=cfg.tiles)
    tiles = _overlaps_tiles(lower(traced, LaunchShape(stages=cfg.stages, schedule=cfg.schedule,
                                                      tiles=cfg.tiles).pipeline("sm_90a"), "sm_90a")[0])
    sass = disassemble(ck.cubin)
    usage = next(iter(resource_usage(ck.cubin).values()))
    assert usage.local_bytes == 0 and usage.stack_bytes == 0, usage
    assert count_instructions(sass, "LDL") == 0 and count_instructions(sass, "STL") == 0
    # QK^T: D/16 k16 steps; PV: BLOCK_N/16; twice, as the rotated loop has a prologue (QK^T) and an epilogue (PV);
    # with tile overlap the first tile's QK^T and the next tile's (under the epilogue) replace the prologue's
    assert count_instructions(sass, "HGMMA") == 2 * (D // 16 + cfg.BLOCK_N // 16) + tiles * D // 16
    assert count_instructions(sass, "UTMALDG") > 0 and count_instructions(sass, "SHFL") > 0
    # ptxas's C7513: a register feeding a wgmma written while another group is in flight serialises them all
    assert "C7513" not in ck.artifact.log, ck.artifact.log
    # exp2 is one MUFU.EX2: no denormal-result rescale (a compare with -126 and two multiplies per score)
    assert not re.search(r"FSETP\.GEU\.AND .*-126", sass) and count_instructions(sass, "MUFU") > 0
    # O leaves in 16-byte stores after the quad transpose: a 64 x D block is D / 32 groups of 32 columns per row
    # half, two halves (the 4-byte stores stay for misaligned outputs); emitted once, tile overlap or not
    if cfg.kv_splits == 1:  # key slices store f32 partials (ops_emulated runs them with the merge)
        assert len(re.findall(r"STG\.E\.128 ", sass)) == D // 16


def _loop_waits(module) -> list[list[int]]:
    """The `pending` of each wgmma wait, per innermost scf.for that issues a wgmma."""
    from xdsl.dialects import scf

    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)
             and any(o.name in ("nv.wgmma", "nv.wgmma_rs") for o in op.body.block.ops)]
    return [[o.pending.value.data for o in loop.body.block.ops if o.name == "nv.wgmma_wait"] for loop in loops]


def test_overlap_rotates_the_loop():
    """overlap (the default): in the loop, QK^T of step j+1 and P V of step j are both issued before the first
    wait, which leaves one group (P V) in flight while the softmax runs; overlap=False waits for each at once."""
    module = _lowered(_trace(128, False, 128))
    loops = _loop_waits(module)
    assert loops == [[1, 0]], loops
    order = [o.name for o in next(op for op in module.walk() if op.name == "scf.for"
                                  and any(o.name == "nv.wgmma" for o in op.body.block.ops)).body.block.ops
             if o.name.startswith("nv.wgmma")]
    assert order[:3] == ["nv.wgmma", "nv.wgmma_rs", "nv.wgmma_wait"], order
    plain, _ = lower(_trace(128, False, 128), default_pipeline("sm_90a", stages=STAGES, overlap=False), "sm_90a")
    assert _loop_waits(plain) == [[0, 0]]
    assert [op.name for op in plain.walk()].count("nv.wgmma") == 1


def _q_releases(module) -> list:
    """The ops that free Q's slot (per-thread arrivals), with the block that holds each and its index there."""
    return [(op.parent, list(op.parent.ops).index(op)) for op in module.walk()
            if op.name == "nv.mbarrier_arrive" and op.per.data == "thread"]


def test_q_is_released_before_the_last_pv_and_the_epilogue():
    """With the loop rotated, every QK^T of a tile is done when the rotated loop ends: Q's slot is freed there (and
    in the branch with no key step), so the next tile's Q loads under this tile's last P V and its stores. Without
    overlap it is freed after the loop, as before."""
    module = _lowered(_trace(128, False, 128))
    releases = _q_releases(module)
    assert len(releases) == 2, releases  # the rotated branch and the no-step branch of `if lb < ub`
    block, at = next((b, i) for b, i in releases if any(o.name == "scf.for" for o in b.ops))
    names = [o.name for o in block.ops]
    assert "scf.for" in names[:at] and "nv.wgmma_rs" in names[at:], names  # after the loop, before the last P V
    assert not any(n.startswith("nv.wgmma") for n in names[names.index("scf.for"):at]), names
    plain, _ = lower(_trace(128, False, 128), default_pipeline("sm_90a", stages=STAGES, overlap=False), "sm_90a")
    (block, at), = _q_releases(plain)
    names = [o.name for o in block.ops]
    assert "scf.for" in names[:at] and not any(n.startswith("nv.wgmma") for n in names[at:]), names


@pytest.mark.parametrize("D", [64, 128])
def test_softmax_stays_in_registers(D):
    """The IR has the RS wgmma and register row reductions; shared memory is Q + the K/V ring + barriers."""
    module = _lowered(_trace(D, True, 128))
    names = [op.name for op in module.walk()]
    q_slots = 2 if _overlaps_tiles(module) else 1
    # rotated: prologue, loop, epilogue; with tile overlap the prologue's QK^T is the first tile's and the next's
    assert names.count("nv.wgmma") == 1 + q_slots and names.count("nv.wgmma_rs") == 2
    assert "nv.wgacc_reduce_rows" in names and "nv.alloc_shared" not in names
    kern = next(op for op in module.walk() if op.name == "func.func")
    tile = 128 * D * 2
    barriers = 16 * (q_slots + 2 * STAGES)  # a full and an empty mbarrier per slot: Q's, K's and V's STAGES each
    assert kern.attributes["nv.smem_bytes"].value.data == tile * (q_slots + 2 * STAGES) + barriers
    assert kern.attributes["nv.num_threads"].value.data == 384  # a producer and two consumer warpgroups


@pytest.mark.parametrize("D", [64, 128])
def test_each_wgmma_is_one_asm_statement_of_its_k16_steps(D):
    """NVRTC's NVVM spends about as long on each asm statement with 64 tied accumulator operands as on the rest of
    the kernel: every nv.wgmma / nv.wgmma_rs issues its k16 steps from one statement (cold compile of this kernel
    1.1 -> 0.7 s of NVRTC), and the host emulator still gets one call per step."""
    module = _lowered(_trace(D, False, 128))
    ops = [op for op in module.walk() if op.name in ("nv.wgmma", "nv.wgmma_rs")]
    steps = sum(op.k.value.data // 16 for op in ops)
    source = emit_cuda(module).source
    statements = re.findall(r"asm volatile\((.*?)\);", source, flags=re.S)
    issuing = [st for st in statements if "wgmma.mma_async" in st]
    assert len(issuing) == len(ops)
    assert sum(st.count("wgmma.mma_async") for st in issuing) == steps
    host_steps = [ln for ln in source.splitlines() if "_host(" in ln and ln.rstrip().endswith(tuple(
        f"// k16 step {j}" for j in range(16)))]
    assert len(host_steps) == steps
    for st in issuing:  # each step's inputs are its own operands, numbered after the accumulator
        outs, ins = st.split(":")[1:3]
        regs = outs.count('"+f"')
        used = {int(n) for n in re.findall(r"%(\d+)", st.split(":")[0])}
        assert used == set(range(regs + ins.count('"l"') + ins.count('"r"'))), st[:200]


def _run(em, B, H, H_kv, S_q, S_k, D, dtype, causal, seed=0, BM=128):
    rng = np.random.default_rng(seed)
    npd = NP[dtype]
    q = rng.standard_normal((B, H, S_q, D)).astype(npd)
    k = rng.standard_normal((B, H_kv, S_k, D)).astype(npd)
    v = rng.standard_normal((B, H_kv, S_k, D)).astype(npd)
    o = np.full((B, H, S_q, D), np.nan, npd)
    lse = np.full((B, H, S_q), np.nan, np.float32)
    scale = 1.0 / np.sqrt(D)
    EH.run_on_host(em, [q, k, v, o, lse, scale], FA.grid(B, H, S_q, BLOCK_M=BM))
    f64 = lambda x: x.astype(np.float64)  # noqa: E731
    return o, lse, (f64(q), f64(k), f64(v), scale)


SHAPES = {  # (D, causal, BLOCK_N, B, H, H_kv, S_q, S_k, dtype): ragged everywhere, several tiles per CTA
    "d64-ragged-gqa": (64, False, 64, 1, 2, 1, 130, 200, "bf16"),
    "d64-causal-3tiles": (64, True, 64, 1, 2, 1, 300, 300, "bf16"),
    "d128-causal-gqa-sq<sk": (128, True, 128, 1, 4, 2, 200, 333, "bf16"),
    "d128-decode": (128, False, 128, 2, 2, 2, 1, 257, "bf16"),
    "d64-causal-sk<sq": (64, True, 128, 1, 1, 1, 130, 77, "bf16"),
    "d128-f16": (128, False, 64, 1, 2, 2, 129, 190, "f16"),
    "bm64-d128-decode": (128, False, 128, 2, 3, 3, 12, 300, "bf16", 64),  # one consumer warpgroup
    "bm64-d64-causal": (64, True, 128, 1, 2, 1, 150, 150, "bf16", 64),
    "even-d128-gqa": (128, False, 128, 1, 4, 2, 130, 256, "bf16", 128, True),  # EVEN_N: S_k % BLOCK_N == 0
    "even-d64-causal": (64, True, 128, 1, 2, 1, 256, 256, "bf16", 128, True),
    "fold-d128-causal-ragged": (128, True, 64, 1, 2, 1, 200, 190, "bf16", 128, False, True),  # FOLD_SCALE
    "fold-even-bm64-decode": (128, False, 128, 2, 2, 2, 5, 256, "bf16", 64, True, True),
    # d = 256: 64-key steps, a ring of 2 (the only one shared memory holds with 128 rows)
    "d256-ragged-gqa": (256, False, 64, 1, 2, 1, 130, 200, "bf16", 128, False, False, 2),
    "bm64-d256-causal-fold": (256, True, 64, 1, 2, 2, 150, 150, "bf16", 64, False, True, 2),
    "bm64-d256-decode-f16": (256, False, 64, 2, 2, 2, 3, 190, "f16", 64, False, True, 3),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_numerics_on_the_host_emulator(name):
    D, causal, BN, B, H, H_kv, S_q, S_k, dtype, *extra = SHAPES[name]
    BM, even, fold, stages = (list(extra) + [128, False, False, STAGES][len(extra):])[:4]
    em = emit_cuda(_lowered(_trace(D, causal, BN, dtype, BM=BM, even=even, fold=fold), stages))
    o, lse, (q, k, v, scale) = _run(em, B, H, H_kv, S_q, S_k, D, dtype, causal, BM=BM)
    ro, rl = FA.reference_attention(q, k, v, scale, causal)
    assert rel_error(o, ro) <= error_bound(dtype), name
    assert np.abs(lse - rl).max() <= LSE_TOL, name


def _one_run_per_config() -> list:
    """Each (config, head dim) of CASES once, causal or not alternating where the config takes both."""
    modes: dict = {}
    for cfg, D, causal in CASES:
        if cfg.kv_splits == 1:  # key slices and their merge run through ops: test_ops_emulated
            modes.setdefault((cfg, D), []).append(causal)
    return [(cfg, D, m[i % len(m)]) for i, ((cfg, D), m) in enumerate(modes.items())]


EMULATED = _one_run_per_config()


@pytest.mark.parametrize("i", range(len(EMULATED)), ids=[_case_id(c) for c in EMULATED])
def test_every_config_on_the_host_emulator(i):
    """Each config ops.attention may launch (a default or an autotuning candidate) with its own ring depth, on a
    ragged GQA shape with several tiles per CTA; causal alternates over the list so both run at each head dim."""
    cfg, D, causal = EMULATED[i]
    B, H, H_kv, S_q, S_k = 1, 2, 1, 2 * cfg.BLOCK_M + 3, 2 * cfg.BLOCK_N + 61
    module, _ = lower(_trace(D, causal, cfg.BLOCK_N, BM=cfg.BLOCK_M, fold=True),
                      LaunchShape(stages=cfg.stages, schedule=cfg.schedule, tiles=cfg.tiles).pipeline("sm_90a"),
                      "sm_90a")
    o, lse, (q, k, v, scale) = _run(emit_cuda(module), B, H, H_kv, S_q, S_k, D, "bf16", causal, seed=i, BM=cfg.BLOCK_M)
    ro, rl = FA.reference_attention(q, k, v, scale, causal)
    assert rel_error(o, ro) <= error_bound("bf16"), cfg
    assert np.abs(lse - rl).max() <= LSE_TOL, cfg


SHIFT = 5  # query i sees keys j <= i - SHIFT: rows 0..SHIFT-1 see none


@kernel
def masked_attention(Q, K, V, O, LSE, scale, *, BLOCK_M=64, BLOCK_N=64, CAUSAL=True, MASK="shifted",
                     MASKED_STORE=False):
    """flash_attention with another mask. MASK="shifted": the diagonal moved down SHIFT rows, so the first rows
    have every key masked: their running max stays -inf through every step (the m_safe path), and O = 0,
    LSE = -inf. "later" / "later_strict": query i sees keys j >= i (j > i), the masks the other way round (ge,
    gt) for the guards of passes/ws_masks.py, whose scalar test is then lo(cols) >= hi(rows)."""
    H, D = Q.shape[1], Q.shape[3]
    H_kv, S_k = K.shape[1], K.shape[2]
    m0 = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b, h = bh // H, bh % H
    h_kv = h // (H // H_kv)
    q = tl.load(Q, [b, h, m0, 0], (BLOCK_M, D))
    m_i = tl.full((BLOCK_M, 1), FA.NEG_INF, tl.f32)
    l_i = tl.zeros((BLOCK_M, 1), tl.f32)
    acc = tl.zeros((BLOCK_M, D), tl.f32)
    rows = m0 + tl.arange((BLOCK_M, 1), 0)
    for n0 in tl.range(0, S_k, BLOCK_N):
        k = tl.load(K, [b, h_kv, n0, 0], (BLOCK_N, D))
        v = tl.load(V, [b, h_kv, n0, 0], (BLOCK_N, D))
        s = tl.dot(q, k.T) * (scale * FA.LOG2E)
        cols = n0 + tl.arange((1, BLOCK_N), 1)
        if MASK == "shifted":
            visible = cols + SHIFT <= rows
        elif MASK == "later_strict":
            visible = cols > rows
        else:
            visible = cols >= rows
        s = tl.where((cols < S_k) & visible, s, FA.NEG_INF)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == FA.NEG_INF, 0.0, m_new)
        p = tl.exp2(s - m_safe)
        rescale = tl.exp2(m_i - m_safe)
        l_i = l_i * rescale + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * rescale)
        m_i = m_new
    empty = l_i == 0.0
    out = (acc / tl.where(empty, 1.0, l_i)).to(O.dtype)
    if MASKED_STORE:  # rows with no visible key keep O's memory (a masked store in a warp-specialised consumer)
        tl.store(O, [b, h, m0, 0], out, mask=tl.broadcast_to(~empty, (BLOCK_M, D)))
    else:
        tl.store(O, [b, h, m0, 0], out)
    lse = tl.where(empty, FA.NEG_INF, m_i * FA.LN2 + tl.log(tl.where(empty, 1.0, l_i)))
    tl.store(LSE, [b, h, m0], lse.T)


def test_fully_masked_rows_give_zero_and_minus_infinity():
    D, S = 64, 150
    em = emit_cuda(_lowered(_trace(D, True, 64, kernel_fn=masked_attention)))
    o, lse, (q, k, v, scale) = _run(em, 1, 1, 1, S, S, D, "bf16", True, seed=3)
    assert np.all(np.isneginf(lse[..., :SHIFT])) and np.all(o[..., :SHIFT, :].astype(np.float64) == 0.0)
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    i, j = np.arange(S)[:, None], np.arange(S)[None, :]
    scores = np.where(j + SHIFT <= i, scores, -np.inf)[..., SHIFT:, :]
    rl = np.log(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1)) + scores.max(-1)
    p = np.exp(scores - rl[..., None])
    ro = np.einsum("bhqk,bhkd->bhqd", p, v)
    assert rel_error(o[..., SHIFT:, :], ro) <= error_bound("bf16")
    assert np.abs(lse[..., SHIFT:] - rl).max() <= LSE_TOL


def test_a_masked_o_store_keeps_the_memory_of_rows_with_no_key():
    D, S = 64, 150
    traced = masked_attention.trace(T(("B", "H", "S", D), "bf16"), T(("B", "H_kv", "S_k", D), "bf16"),
                                    T(("B", "H_kv", "S_k", D), "bf16"), T(("B", "H", "S", D), "bf16"),
                                    T(("B", "H", "S"), "f32"), tessera.scalar("f32"), BLOCK_M=128, BLOCK_N=64,
                                    MASKED_STORE=True)
    module = _lowered(traced)
    assert any(op.name == "nv.wgacc_store" and op.mask is not None for op in module.walk())
    o, lse, (q, k, v, scale) = _run(emit_cuda(module), 1, 1, 1, S, S, D, "bf16", True, seed=4)
    assert np.all(np.isnan(o[..., :SHIFT, :].astype(np.float64)))  # untouched (filled with NaN by _run)
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    i, j = np.arange(S)[:, None], np.arange(S)[None, :]
    scores = np.where(j + SHIFT <= i, scores, -np.inf)[..., SHIFT:, :]
    rl = np.log(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1)) + scores.max(-1)
    ro = np.einsum("bhqk,bhkd->bhqd", np.exp(scores - rl[..., None]), v)
    assert rel_error(o[..., SHIFT:, :], ro) <= error_bound("bf16")


def _guarded_selects(module) -> int:
    return sum(1 for op in module.walk() if op.name == "scf.if" and op.results and "vector" in str(op.results[0].type))


@pytest.mark.parametrize("strict", [False, True], ids=["ge", "gt"])
def test_masks_the_other_way_are_guarded_and_exact(strict):
    """Steps whose every key is later than every row skip the mask; the rest (and the ragged last step) keep it."""
    D, S = 64, 300
    traced = masked_attention.trace(T(("B", "H", "S", D), "bf16"), T(("B", "H_kv", "S_k", D), "bf16"),
                                    T(("B", "H_kv", "S_k", D), "bf16"), T(("B", "H", "S", D), "bf16"),
                                    T(("B", "H", "S"), "f32"), tessera.scalar("f32"), BLOCK_M=128,
                                    MASK="later_strict" if strict else "later")
    module = _lowered(traced)
    assert _guarded_selects(module) > 0
    o, lse, (q, k, v, scale) = _run(emit_cuda(module), 1, 2, 1, S, S, D, "bf16", False, seed=5)
    i, j = np.arange(S)[:, None], np.arange(S)[None, :]
    visible = j > i if strict else j >= i
    scores = np.where(visible, np.einsum("bhqd,bhkd->bhqk", q, np.repeat(k, 2, axis=1)) * scale, -np.inf)
    seen = visible.any(-1)
    top = np.where(seen, scores.max(-1), 0.0)
    w = np.exp(scores - top[..., None])
    rl = np.where(seen, np.log(w.sum(-1)) + top, -np.inf)
    ro = np.einsum("bhqk,bhkd->bhqd", w / np.where(seen, w.sum(-1), 1.0)[..., None], np.repeat(v, 2, axis=1))
    assert rel_error(o, ro) <= error_bound("bf16")
    assert np.array_equal(np.isneginf(lse), np.isneginf(rl))
    assert np.abs(lse[np.isfinite(rl)] - rl[np.isfinite(rl)]).max() <= LSE_TOL


def test_a_mask_with_a_constant_offset_is_guarded():
    """`cols + SHIFT <= rows` (an integer constant tile in the sum) still has scalar bounds."""
    assert _guarded_selects(_lowered(_trace(64, True, 64, kernel_fn=masked_attention))) > 0


@kernel
def earlier_blocks_attention(Q, K, V, O, LSE, scale, *, BLOCK_M=128, BLOCK_N=128, CAUSAL=False):
    """Each query block attends to the keys of the blocks before it: block t runs t loop steps, so the rotated
    loop meets zero steps (t = 0: the guarded region is skipped), one (prologue and epilogue only) and more."""
    H, D = Q.shape[1], Q.shape[3]
    H_kv, S_k = K.shape[1], K.shape[2]
    m0 = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b, h = bh // H, bh % H
    q = tl.load(Q, [b, h, m0, 0], (BLOCK_M, D))
    m_i = tl.full((BLOCK_M, 1), FA.NEG_INF, tl.f32)
    l_i = tl.zeros((BLOCK_M, 1), tl.f32)
    acc = tl.zeros((BLOCK_M, D), tl.f32)
    for n0 in tl.range(0, tl.minimum(S_k, m0), BLOCK_N):
        k = tl.load(K, [b, h, n0, 0], (BLOCK_N, D))
        v = tl.load(V, [b, h, n0, 0], (BLOCK_N, D))
        s = tl.dot(q, k.T) * (scale * FA.LOG2E)
        cols = n0 + tl.arange((1, BLOCK_N), 1)
        s = tl.where(cols < tl.minimum(S_k, m0), s, FA.NEG_INF)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == FA.NEG_INF, 0.0, m_new)
        p = tl.exp2(s - m_safe)
        rescale = tl.exp2(m_i - m_safe)
        l_i = l_i * rescale + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * rescale)
        m_i = m_new
    empty = l_i == 0.0
    tl.store(O, [b, h, m0, 0], (acc / tl.where(empty, 1.0, l_i)).to(O.dtype))
    lse = tl.where(empty, FA.NEG_INF, m_i * FA.LN2 + tl.log(tl.where(empty, 1.0, l_i)))
    tl.store(LSE, [b, h, m0], lse.T)


@pytest.mark.parametrize("overlap", [True, False])
def test_zero_one_and_several_steps(overlap):
    D, S = 64, 300  # blocks of 128 rows: 0, 1 and 2 steps
    traced = _trace(D, False, 128, kernel_fn=earlier_blocks_attention)
    module, _ = lower(traced, default_pipeline("sm_90a", stages=STAGES, overlap=overlap), "sm_90a")
    o, lse, (q, k, v, scale) = _run(emit_cuda(module), 1, 2, 2, S, S, D, "bf16", False, seed=5)
    assert np.all(np.isneginf(lse[..., :128])) and np.all(o[..., :128, :].astype(np.float64) == 0.0)
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    i, j = np.arange(S)[:, None], np.arange(S)[None, :]
    scores = np.where(j < (i // 128) * 128, scores, -np.inf)[..., 128:, :]
    rl = np.log(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1)) + scores.max(-1)
    ro = np.einsum("bhqk,bhkd->bhqd", np.exp(scores - rl[..., None]), v)
    assert rel_error(o[..., 128:, :], ro) <= error_bound("bf16")
    assert np.abs(lse[..., 128:] - rl).max() <= LSE_TOL


@kernel
def gemm_from_accumulator(A, B, C0, C, *, BM=128, BN=128, BK=64):
    """C = A @ B^T + C0 / 2: the K-loop's accumulator starts at a loaded, scaled tile, not at zero."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    acc = tl.load(C0, [m0, n0], (BM, BN)) * 0.5
    for k in tl.range(0, A.shape[1], BK):
        acc = tl.dot(tl.load(A, [m0, k], (BM, BK)), tl.load(B, [n0, k], (BN, BK)).T, acc)
    tl.store(C, [m0, n0], acc)


@pytest.mark.parametrize("BM,BN", [(128, 128), (64, 64)])
def test_an_accumulator_that_starts_non_zero(BM, BN):
    M, N, K = 200, 300, 333  # ragged in every dim; the last K step reads past K (TMA fills zeros)
    tk = gemm_from_accumulator.trace(T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "f32"),
                                     T(("M", "N"), "f32"), BM=BM, BN=BN)
    em = emit_cuda(_lowered(tk))
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    EH.run_on_host(em, [a, b, c0, c], (-(-M // BM), -(-N // BN)))
    want = a.astype(np.float64) @ b.astype(np.float64).T + 0.5 * c0
    assert rel_error(c, want) <= error_bound("f32")


@pytest.mark.parametrize("knobs,words", [({"cluster": 2}, "cluster=2: an operand staged once per tile"),
                                         ({"splitk": 2}, "splitk=2 with a loop that does more than accumulate"),
                                         ({"streamk": True}, "streamk=1 with a loop that does more than accumulate")])
def test_general_body_refuses_knobs_attention_cannot_take(knobs, words):
    """Clusters share a loop operand between two CTAs (Q is staged once per tile); split-K and stream-K sum pieces
    of the loop, which only a loop that just accumulates allows: coded refusals for attention, with a hint."""
    with pytest.raises(TesseraError) as err:
        lower(_trace(64, False, 64), default_pipeline("sm_90a", stages=2, **knobs), "sm_90a")
    assert err.value.code.name == "NV_WGMMA_UNSUPPORTED" and words in err.value.message
    assert err.value.hint


def test_pingpong_needs_two_consumers():
    with pytest.raises(TesseraError) as err:
        lower(_trace(64, False, 64, BM=64), default_pipeline("sm_90a", stages=2, schedule="pingpong"), "sm_90a")
    assert err.value.code.name == "NV_WGMMA_UNSUPPORTED" and "turns between consumer warpgroups" in err.value.message


def _turn_barriers(module) -> list[tuple[str, int]]:
    return [(op.mode.data, op.threads.value.data) for op in module.walk() if op.name == "nv.named_barrier"]


@pytest.mark.parametrize("name,BM,overlap", [("d64-causal-3tiles", 128, True), ("d128-causal-gqa-sq<sk", 128, True),
                                             ("d128-f16", 128, False), ("d64-ragged-gqa", 192, True),
                                             ("d64-causal-3tiles", 192, False)])
def test_pingpong_numerics_on_the_host_emulator(name, BM, overlap):
    """Warp-scheduler barriers (the consumers take turns at issuing a step's wgmmas, round robin over two or
    three warpgroups): same results, no deadlock across tiles of different loop lengths (ragged, causal), with
    the rotated loop (one turn per step around both wgmmas) and the plain one (one turn per wgmma)."""
    D, causal, BN, B, H, H_kv, S_q, S_k, dtype, *_ = SHAPES[name]
    module, _ = lower(_trace(D, causal, BN, dtype, BM=BM),
                      default_pipeline("sm_90a", stages=STAGES, schedule="pingpong", overlap=overlap), "sm_90a")
    turns = 1 if overlap else 2  # the rotated loop brackets QK^T(j+1) and P(j) V(j) together
    assert _turn_barriers(module) == [("arrive", 256)] + [("sync", 256), ("arrive", 256)] * turns
    o, lse, (q, k, v, scale) = _run(emit_cuda(module), B, H, H_kv, S_q, S_k, D, dtype, causal, BM=BM)
    ro, rl = FA.reference_attention(q, k, v, scale, causal)
    assert rel_error(o, ro) <= error_bound(dtype) and np.abs(lse - rl).max() <= LSE_TOL
