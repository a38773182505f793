"""A hand-written flash-attention forward in Tile IR, run on the interpreter against `attention_ref`.

It exercises the ops together the way a real kernel does: rank-4 memrefs read
through 2-D tiles, an scf.for carrying three tiles (running max, running sum,
accumulator), iota/cmp/select masks for ragged keys and causality, reduce +
broadcast for the online softmax, bf16 P for the second mma, and GQA head
mapping via index arithmetic.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tessera.ir.parse import parse_module
from tessera.reference import attention_ref, rel_error, run
from tessera.reference.oracles import error_bound

BQ, BK = 16, 16


def flash_attention_ir(D: int, causal: bool) -> str:
    q_t, k_t, kt_t = f"!tile.tile<{BQ}x{D}xbf16>", f"!tile.tile<{BK}x{D}xbf16>", f"!tile.tile<{D}x{BK}xbf16>"
    s_t, s_i, s_b = f"!tile.tile<{BQ}x{BK}xf32>", f"!tile.tile<{BQ}x{BK}xi32>", f"!tile.tile<{BQ}x{BK}xi1>"
    r_t, o_t, p_t = f"!tile.tile<{BQ}x1xf32>", f"!tile.tile<{BQ}x{D}xf32>", f"!tile.tile<{BQ}x{BK}xbf16>"
    mem, out = "memref<?x?x?x?xbf16>", "memref<?x?x?x?xf32>"
    causal_mask = f"""
    %rows = tile.add %iota0, %qofs : {s_i}
    %seen = tile.cmp le %cols, %rows : {s_i}
    %sm = tile.select %seen, %sl, %ninf : {s_t}""" if causal else f"""
    %sm = tile.select %inlen, %s2, %ninf : {s_t}"""
    return f"""func.func @attn(%Q: {mem}, %K: {mem}, %V: {mem}, %O: {out}, %L: {out}, %scale: f32, %group: index) {{
  %qb = tile.program_id 0
  %h = tile.program_id 1
  %b = tile.program_id 2
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %bq = arith.constant {BQ} : index
  %bk = arith.constant {BK} : index
  %q0 = arith.muli %qb, %bq : index
  %kvh = arith.divui %h, %group : index
  %S = memref.dim %K, %c2 : {mem}
  %q = tile.load %Q[%b, %h, %q0, %c0] pad 0.0 : {mem} -> {q_t}
  %m_init = tile.constant -inf : {r_t}
  %l_init = tile.constant 0.0 : {r_t}
  %acc_init = tile.constant 0.0 : {o_t}
  %zs = tile.constant 0.0 : {s_t}
  %ninf = tile.constant -inf : {s_t}
  %scl = tile.splat %scale : f32 -> {s_t}
  %iota0 = tile.iota 0 : {s_i}
  %iota1 = tile.iota 1 : {s_i}
  %q0i = arith.index_cast %q0 : index to i32
  %qofs = tile.splat %q0i : i32 -> {s_i}
  %Si = arith.index_cast %S : index to i32
  %slen = tile.splat %Si : i32 -> {s_i}
  %m, %l, %acc = scf.for %k0 = %c0 to %S step %bk iter_args(%mi = %m_init, %li = %l_init, %ai = %acc_init)
      -> ({r_t}, {r_t}, {o_t}) {{
    %k = tile.load %K[%b, %kvh, %k0, %c0] pad 0.0 : {mem} -> {k_t}
    %kt = tile.transpose %k : {k_t} -> {kt_t}
    %s = tile.mma %q, %kt, %zs : {q_t}, {kt_t}, {s_t}
    %s2 = tile.mul %s, %scl : {s_t}
    %k0i = arith.index_cast %k0 : index to i32
    %kofs = tile.splat %k0i : i32 -> {s_i}
    %cols = tile.add %iota1, %kofs : {s_i}
    %inlen = tile.cmp lt %cols, %slen : {s_i}
    %sl = tile.select %inlen, %s2, %ninf : {s_t}{causal_mask}
    %mx = tile.reduce max 1 %sm : {s_t} -> {r_t}
    %mnew = tile.max %mi, %mx : {r_t}
    %mb = tile.broadcast %mnew : {r_t} -> {s_t}
    %d = tile.sub %sm, %mb : {s_t}
    %p = tile.exp %d : {s_t}
    %dm = tile.sub %mi, %mnew : {r_t}
    %alpha = tile.exp %dm : {r_t}
    %ls = tile.reduce sum 1 %p : {s_t} -> {r_t}
    %la = tile.mul %li, %alpha : {r_t}
    %lnew = tile.add %la, %ls : {r_t}
    %ab = tile.broadcast %alpha : {r_t} -> {o_t}
    %as = tile.mul %ai, %ab : {o_t}
    %pb = tile.convert %p : {s_t} -> {p_t}
    %v = tile.load %V[%b, %kvh, %k0, %c0] pad 0.0 : {mem} -> {k_t}
    %anew = tile.mma %pb, %v, %as : {p_t}, {k_t}, {o_t}
    scf.yield %mnew, %lnew, %anew : {r_t}, {r_t}, {o_t}
  }}
  %lb = tile.broadcast %l : {r_t} -> {o_t}
  %o = tile.div %acc, %lb : {o_t}
  tile.store %o, %O[%b, %h, %q0, %c0] : {o_t} -> {out}
  %logl = tile.log %l : {r_t}
  %lse = tile.add %m, %logl : {r_t}
  tile.store %lse, %L[%b, %h, %q0, %c0] : {r_t} -> {out}
  func.return
}}"""


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("H,Hkv", [(2, 2), (4, 2)])
def test_flash_attention_tile_ir_matches_oracle(causal, H, Hkv):
    rng = np.random.default_rng()
    B, S, D = 2, 50, 32  # S is ragged: the last q and k blocks hang over the edge
    bf16 = ml_dtypes.bfloat16
    q = rng.standard_normal((B, H, S, D)).astype(np.float32).astype(bf16)
    k = rng.standard_normal((B, Hkv, S, D)).astype(np.float32).astype(bf16)
    v = rng.standard_normal((B, Hkv, S, D)).astype(np.float32).astype(bf16)
    o = np.zeros((B, H, S, D), np.float32)
    lse = np.zeros((B, H, S, 1), np.float32)
    scale = 1.0 / math.sqrt(D)
    res = run(parse_module(flash_attention_ir(D, causal), "attn.mlir"), (-(-S // BQ), H, B),
              [q, k, v, o, lse, scale, H // Hkv])
    assert res.programs == 4 * H * B
    want_o, want_lse = attention_ref(q, k, v, causal, scale=float(np.float32(scale)))
    assert rel_error(o, want_o) <= error_bound("bf16")
    assert rel_error(lse[..., 0], want_lse) <= error_bound("f32")  # lse never goes through bf16
