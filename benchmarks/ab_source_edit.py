"""A/B edits of the emitted CUDA on the GPU: the kernel as compiled (A) against the same kernel with an edit
applied to its source (B), side by side, checked against each other, timed alternately with an L2 flush.

    python3 benchmarks/ab_source_edit.py --drop-lines "tsr_tma_store_2d(" [--runs 50]
    python3 benchmarks/ab_source_edit.py --edit b-evict-first --edit desc-add [--runs 50]
    python3 benchmarks/ab_source_edit.py --attention --drop-lines "reinterpret_cast<tsr_u32*>((wbase"
    python3 benchmarks/ab_source_edit.py --attention --edit narrow-stores

--drop-lines drops every source line containing the given text; --edit applies one of EDITS (each its own B,
timed against the same A). Edits go through `tessera.compiler.testing.inject_faults`, the fault-injection hook,
so the compiler itself is unchanged. It answers "what would this emitted change buy" without a switch in the
product (B may compute something else: dropping the output stores times the kernel without its writes;
`bitwise_equal` says whether A and B agreed). The shapes and configs are DEFAULT's (what v10 of
bench_hopper_gemm chose); with --attention, the sm_90a flash attention of ATTENTION's rows at their default
configs. Prints one line per (shape, edit) and writes JSON to $OUT/ab_source_edit.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

DEFAULT = {  # shape -> the config v10 of bench_hopper_gemm chose for it
    (2048, 2048, 2048): {"BM": 128, "BN": 256, "stages": 4, "schedule": "cooperative", "cluster": 1, "splitk": 1},
    (4096, 4096, 4096): {"BM": 128, "BN": 256, "stages": 4, "schedule": "cooperative", "cluster": 2, "splitk": 1},
    (1024, 1024, 16384): {"BM": 128, "BN": 128, "stages": 6, "schedule": "pingpong", "cluster": 1, "splitk": 2},
    (128, 8192, 8192): {"BM": 128, "BN": 64, "stages": 8, "schedule": "pingpong", "cluster": 1, "splitk": 1},
}


ATTENTION = {  # (B, H, S, D, causal) -> the default config (configs.attention_config, v11)
    (16, 16, 1024, 128, False): (128, 128, 3),
    (8, 16, 2048, 128, True): (128, 128, 2),
    (4, 16, 4096, 128, False): (128, 128, 3),
}


_EVICT = """
static __device__ __forceinline__ void tsr_tma_load_2d_hint(unsigned dst, const tsr_tensormap* map, int c0, int c1,
                                                            unsigned bar, unsigned long long policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
               " [%0], [%1, {%2, %3}], [%4], %5;\\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
               : "memory");
}
static __device__ __forceinline__ unsigned long long tsr_policy_evict_first() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\\n" : "=l"(p));
  return p;
}
static __device__ __forceinline__ unsigned long long tsr_policy_evict_last() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\\n" : "=l"(p));
  return p;
}
"""


def _hint(operand: str, policy: str):
    """The plain TMA loads of `operand` (A or B) with an L2 eviction-priority hint (`policy`)."""
    def edit(src: str) -> str:
        at = src.index("\n}\n", src.index("void tsr_tma_load_2d(")) + 3  # after the plain load's definition
        src = src[:at] + _EVICT.lstrip("\n") + src[at:]
        lines = [line.replace("tsr_tma_load_2d(", "tsr_tma_load_2d_hint(").replace(");", f", {policy}());")
                 if f"&{operand}_tmap" in line and "tsr_tma_load_2d(" in line else line for line in src.splitlines()]
        return "\n".join(lines)
    return edit


def _desc_add(src: str) -> str:
    """wgmma descriptors of a K step as the first step's plus the offset (>> 4), which nvcc computes once: the
    start field is addr >> 4 of a shared address below 2^18, so adding offset >> 4 never carries out of it."""
    import re
    return re.sub(r"tsr_wgmma_desc\((\w+) \+ (\d+)u, (0x[0-9a-fA-F]+ull)\)",
                  lambda m: f"(tsr_wgmma_desc({m[1]}, {m[3]}) + {int(m[2]) >> 4}ull)", src)


def _narrow_stores(src: str) -> str:
    """The wgmma-accumulator register stores as before the quad transpose: one 4-byte store per column pair."""
    import re
    src = re.sub(r"\(wide(_\d+)? && ", "(false && ", src)
    return re.sub(r"\(!wide(_\d+)? && ", "(true && ", src)


EDITS = {  # name -> source edit (each is one B)
    "b-evict-first": _hint("B", "tsr_policy_evict_first"),
    "a-evict-last": _hint("A", "tsr_policy_evict_last"),
    "desc-add": _desc_add,
    "narrow-stores": _narrow_stores,
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--drop-lines", default=None, help="drop emitted source lines containing this text (a B)")
    p.add_argument("--edit", action="append", default=[], choices=sorted(EDITS), help="a named edit (a B each)")
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--attention", action="store_true", help="the attention rows (ATTENTION) instead of the GEMMs")
    a = p.parse_args()
    edits = {f"drop '{a.drop_lines}'": lambda src: "\n".join(l for l in src.splitlines() if a.drop_lines not in l)}
    edits = {**(edits if a.drop_lines else {}), **{name: EDITS[name] for name in a.edit}}
    if not edits:
        p.error("give --drop-lines and/or --edit")
    import torch

    import tessera
    from tessera.compiler import testing
    from tessera.compiler.driver import default_pipeline
    from tessera.kernels import gemm as G
    from tessera.ops._cold_l2 import ColdL2

    T = tessera.tensor
    flush = ColdL2(torch)  # .evict(): L2 evicted by a read before every call
    rows = []
    if a.attention:
        rows = [r for shape, cfg in ATTENTION.items() for r in _attention_ab(torch, flush, shape, cfg, edits, a.runs)]
    for (M, N, K), cfg in ({} if a.attention else DEFAULT).items():
        A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        W = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        specs = (T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), None, None,
                 tessera.scalar("f32"), None)
        traced = G.gemm.trace(*specs, BM=cfg["BM"], BN=cfg["BN"], BK=64, TRANS_B=True)
        pipe = default_pipeline("sm_90a", cfg["stages"], cfg["schedule"], cfg["cluster"], cfg["splitk"])
        ka = tessera.compile(traced, "sm_90a", pipeline=pipe)
        for name, edit in edits.items():
            with testing.inject_faults(source=edit):
                kb = tessera.compile(traced, "sm_90a", pipeline=pipe)
            if ka.source == kb.source:
                print(f"{M}x{N}x{K}: {name} changes nothing in this kernel", flush=True)
                continue
            rows.append(_ab(torch, flush, ka, kb, A, W, (M, N, K), cfg, name, a.runs))
    out = Path(os.environ.get("OUT") or "/tmp") / "ab_source_edit.json"
    out.write_text(json.dumps({"edits": list(edits), "runs": a.runs, "rows": rows}, indent=1))
    return 0


def _attention_ab(torch, flush, shape, cfg, edits, runs) -> list:
    """Each edit of the flash attention kernel ops.attention runs for `shape`, timed against the kernel as built."""
    import math

    import tessera
    from tessera.compiler import testing
    from tessera.kernels import flash_attention as FA
    from tessera.ops._attention import kernel_specs
    from tessera.ops.configs import AttentionConfig

    B, H, S, D, causal = shape
    bm, bn, stages = cfg
    specs, meta, knobs = kernel_specs("bf16", D, causal, True, True, AttentionConfig(bm, bn, stages), hopper=True)
    traced = FA.flash_attention.trace(*specs, **meta)
    ka = tessera.compile(traced, "sm_90a", **knobs)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    grid = (-(-S // bm), B * H)
    out = []
    for name, edit in edits.items():
        with testing.inject_faults(source=edit):
            kb = tessera.compile(traced, "sm_90a", **knobs)
        if ka.source == kb.source:
            print(f"{shape}: {name} changes nothing in this kernel", flush=True)
            continue
        outs = [(torch.empty_like(q), torch.empty(B, H, S, device="cuda")) for _ in range(2)]
        calls = [lambda kk=kk, o=o: kk.launch(grid, [q, k, v, o[0], o[1], 1 / math.sqrt(D)])
                 for kk, o in zip((ka, kb), outs)]
        out.append(_time_ab(torch, flush, calls, lambda: bool(torch.equal(outs[0][0], outs[1][0])), shape, cfg, name,
                            runs))
    return out


def _ab(torch, flush, ka, kb, A, W, shape, cfg, name, runs) -> dict:
    """A and B timed alternately (median of `runs` each, an L2 flush before every call)."""
    from tessera.kernels import gemm as G

    M, N, K = shape
    outs = [torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    grid = G.grid(M, N, BM=cfg["BM"], BN=cfg["BN"])
    calls = [lambda k=k, o=o: k.launch(grid, [A, W, o, 1.0]) for k, o in zip((ka, kb), outs)]
    return _time_ab(torch, flush, calls, lambda: bool(torch.equal(outs[0], outs[1])), shape, cfg, name, runs)


def _time_ab(torch, flush, calls, equal, shape, cfg, name, runs) -> dict:
    """A and B (`calls`) timed alternately (median of `runs` each, an L2 flush before every call)."""
    for c in calls:
        c()
    torch.cuda.synchronize()
    same = equal()
    times = [[], []]
    for r in range(runs):
        for i in (r % 2, 1 - r % 2):
            flush.evict()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            calls[i]()
            e.record()
            e.synchronize()
            times[i].append(s.elapsed_time(e))
    ma, mb = statistics.median(times[0]), statistics.median(times[1])
    print(f"{shape}: A {ma * 1e3:.1f} us, B ({name}) {mb * 1e3:.1f} us, B/A {mb / ma:.3f}, "
          f"outputs equal {same}", flush=True)
    return {"shape": list(shape), "config": cfg, "edit": name, "a_ms": ma, "b_ms": mb, "b_over_a_time": mb / ma,
            "bitwise_equal": same}


if __name__ == "__main__":
    sys.exit(main())
