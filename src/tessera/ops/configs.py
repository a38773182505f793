"""Which tile configuration each op launches, by shape: a small documented table, not an autotuner.

Every rule below picks among configurations that the CPU suite lowers,
emulates and checks against the reference interpreter; the GPU suite runs
them against float64 oracles. A configuration is part of a kernel's
specialisation (and so of its cache key), so rules are coarse on purpose:
few distinct configs means few compiles.

GEMM (`gemm_config(M, N, K)`), 128 threads (2 x 2 warps) per CTA:
  BN = 64 if N <= 64 else 128     cols of C per program
  BM = 64 if M <= 64 or BN == 64 else 128
                                  rows of C per program (128 x 64 with a fused
                                  epilogue spills to local memory: never picked)
  BK = 32                         K step (one mma.sync K of 16, twice)
  stages = 3 if K >= 128 else 1   cp.async pipelining depth of the K-loop;
                                  short K-loops gain nothing from it
  (128 x 128 x 32 with 3 stages needs 124 KiB of shared memory for 16-bit operands: sm_80 has 163 KiB,
  sm_90 227, but sm_86/sm_89 99, so there `gemm_config(..., arch=)` takes 64 x 128 x 32 with 3 stages
  (75 KiB) instead; f32 operands take 35 KiB and keep 128 x 128.)
Attention (`attention_config(S_q, D)`; on sm_90 with TMA-readable bf16/f16 q, k, v the sm_90a kernel with
  BLOCK_M = 128 (64 for S_q <= 64; 192 at d = 64 non-causal), BLOCK_N = 128, a K/V ring of 3 (2 causal, 2 for
  BLOCK_M 64) unless a pin
  or a tuned winner says otherwise: ops/_hopper_attention.py): BLOCK_M = 64 query rows, BLOCK_N = 64
  keys per step for every S_q (BLOCK_M = 128 spills 88 B to 1.4 KB of stack) (a short sequence wastes rows of one program,
  not launches or compiles); D (the head dim) must be 64 or 128, or 256 on the sm_90a kernel: 128 query rows
  (64 for S_q <= 64) and 64 keys a step in a ring of 2 (a 64 x 256 f32 accumulator is 128 registers a
  consumer thread; causal takes 64 rows, as two causal consumers spill; the sm_80/sm_90 kernel spills
  ~1.4 KB of stack at 256, so ops refuses it there).
Linear attention (`linear_attention_config(D_k, D_v)`): CHUNK = 32 time steps;
  BLOCK_V = 32 d_v columns per program when D_v > 64, else all of D_v; D_k and
  D_v in 64 or 128. (CHUNK = 64, or BLOCK_V = 64 at D = 128, spills.)
Every configuration this table can pick compiles without local memory:
tests/unit/test_configs_no_spill.py checks that in CI.
"""

from __future__ import annotations

from dataclasses import dataclass

HEAD_DIMS = (64, 128)  # every lane and kernel
HOPPER_HEAD_DIMS = HEAD_DIMS + (256,)  # the sm_90a attention kernel (and the reference lane) also take 256


@dataclass(frozen=True)
class GemmConfig:
    BM: int
    BN: int
    BK: int
    stages: int

    def meta(self) -> dict:
        return {"BM": self.BM, "BN": self.BN, "BK": self.BK}


@dataclass(frozen=True)
class AttentionConfig:
    BLOCK_M: int
    BLOCK_N: int
    stages: int = 1
    schedule: str | None = None  # sm_90a only: "cooperative" or "pingpong" (the consumers' mmas take turns)
    overlap: bool | None = None  # sm_90a only: False waits for each wgmma where it is issued (A/B runs)
    tiles: str = "static"  # sm_90a only: "dynamic" takes tiles from a launch-wide counter (warp-specialize)
    # sm_90a, non-causal only: key slices per query block (flash decoding: flash_attention KV_SPLITS writes f32
    # partials, attention_combine merges them); no causal candidate has it, so a pin that sets it is refused there
    kv_splits: int = 1

    def meta(self) -> dict:
        return {"BLOCK_M": self.BLOCK_M, "BLOCK_N": self.BLOCK_N,
                **({"KV_SPLITS": self.kv_splits} if self.kv_splits > 1 else {})}


@dataclass(frozen=True)
class LinearAttentionConfig:
    CHUNK: int
    BLOCK_V: int | None
    stages: int = 1

    def meta(self) -> dict:
        return {"CHUNK": self.CHUNK, "BLOCK_V": self.BLOCK_V}


_GEMM = {(bm, bn, st): GemmConfig(bm, bn, 32, st) for bm in (64, 128) for bn in (64, 128) for st in (1, 3)}
_ATTENTION = AttentionConfig(64, 64)
# tiles="dynamic": persistent CTAs take tiles from a launch-wide counter (v14 notes: causal 2k 13% less time)
HOPPER_ATTENTION = AttentionConfig(128, 128, 3, "cooperative", tiles="dynamic")  # a ring of 3: +7% at S 4k (v6)
HOPPER_ATTENTION_64 = AttentionConfig(64, 128, 2, "cooperative")  # decode: <= 64 query rows (heads packed) a program
HOPPER_ATTENTION_CAUSAL = AttentionConfig(128, 128, 2, "cooperative", tiles="dynamic")  # a ring of 3: 4-5% slower
# d = 64: three consumer warpgroups (192 rows) share each K/V step (tuned winner on both d = 64 rows, H100 12-06),
# taking turns at the tensor cores (pingpong: +2% and +7% over cooperative on those rows, H100 v11 notes)
HOPPER_ATTENTION_D64 = AttentionConfig(192, 128, 3, "pingpong", tiles="dynamic")
# d = 256: Q is 64 KB and each 64-key K or V step 32 KB, so two consumers with a ring of 2 (192 KB with the
# tile-overlap Q slot) is what shared memory takes; 128-key steps do not fit at all, and one 128-key stage spills
HOPPER_ATTENTION_D256 = AttentionConfig(128, 64, 2, "cooperative", tiles="dynamic")
HOPPER_ATTENTION_D256_64 = AttentionConfig(64, 64, 2, "cooperative")  # decode at d = 256
# causal d = 256: the mask's registers make two 128-row consumers spill (64-72 B of stack): one consumer of 64 rows
HOPPER_ATTENTION_D256_CAUSAL = AttentionConfig(64, 64, 2, "cooperative", tiles="dynamic")
_LINEAR = {None: LinearAttentionConfig(32, None), 32: LinearAttentionConfig(32, 32)}


SMALL_SMEM_ARCHS = ("sm_86", "sm_89")  # 99 KiB of shared memory per CTA: no 16-bit 128 x 128 x 32 tile x 3 stages


def gemm_config(M: int, N: int, K: int, arch: str | None = None, dtype: str | None = None) -> GemmConfig:
    """The GEMM tile configuration for an M x N x K product (see the module docstring); `arch` and `dtype`
    (the operands') only matter where the 128 x 128 pipelined tile does not fit shared memory."""
    bn = 64 if N <= 64 else 128
    bm, stages = (64 if M <= 64 or bn == 64 else 128), (3 if K >= 128 else 1)
    if (bm, bn, stages) == (128, 128, 3) and arch in SMALL_SMEM_ARCHS and dtype != "f32":
        bm = 64
    return _GEMM[(bm, bn, stages)]


def attention_config(S_q: int, D: int, hopper: bool = False, causal: bool = False) -> AttentionConfig:
    """The flash-attention configuration (one for every S_q and D in HEAD_DIMS); `hopper`: the sm_90a
    warp-specialised kernel's (a consumer warpgroup per 64 query rows, 128 keys per step): two warpgroups, three
    at d = 64 non-causal, or one when S_q <= 64 (decode; S_q counts the GQA heads ops.attention packs into rows);
    at d = 256 (HOPPER_HEAD_DIMS) 64 keys per step in a ring of 2 (causal: one 64-row consumer)."""
    if hopper:
        if D == 256:
            return (HOPPER_ATTENTION_D256_64 if S_q <= 64 else HOPPER_ATTENTION_D256_CAUSAL if causal
                    else HOPPER_ATTENTION_D256)
        if S_q <= 64:
            return HOPPER_ATTENTION_64
        if causal:
            return HOPPER_ATTENTION_CAUSAL
        return HOPPER_ATTENTION_D64 if D == 64 and S_q > 128 else HOPPER_ATTENTION
    return _ATTENTION


def linear_attention_config(D_k: int, D_v: int) -> LinearAttentionConfig:
    """The chunked linear-attention configuration."""
    return _LINEAR[32 if D_v > 64 else None]
