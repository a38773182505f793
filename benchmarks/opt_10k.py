"""Time `tessera-opt` (parse + verify + print) on a generated 10,000-op Tile IR file.

The issue's bound is < 10 s on the 2-core CI machine. The file is a realistic
mix rather than 10,000 copies of one line: GEMM-shaped kernels whose K-loops
carry typed-fragment accumulators as scf.for iter_args, long parametrized
fragment and tile types on every line, and chains of elementwise tile ops.
Parsing long parametrized types is the known slow path (DESIGN section 8),
so the text spells every type out in full, as a printer would.

Usage: python benchmarks/opt_10k.py [--ops N] [--limit SECONDS] [--keep FILE]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

_FRAG = ('!tile.fragment<m=64, n=64, k=32, elem=bf16, acc=f32, role="{role}", layout="{layout}", '
         'family="mma_sync">')
ACC = _FRAG.format(role="acc", layout="row")
FA = _FRAG.format(role="a", layout="row")
FB = _FRAG.format(role="b", layout="row")
SA, SB = "!tile.tile<128x32xbf16, smem>", "!tile.tile<32x128xbf16, smem>"
GA, GB = "!tile.tile<128x32xbf16, global>", "!tile.tile<32x128xbf16, global>"
T16, T32, ROW = "!tile.tile<128x32xbf16>", "!tile.tile<128x32xf32>", "!tile.tile<128x1xf32>"
MEM16, MEM32 = "memref<?x?xbf16>", "memref<?x?xf32>"


def kernel(i: int, chain: int) -> list[str]:
    """One GEMM + softmax-style epilogue kernel; every returned line is exactly one op."""
    L = [f"func.func @kernel{i}(%A: {MEM16}, %B: {MEM16}, %C: {MEM32}, %K: index) {{",
         "  %pm = tile.program_id 0", "  %pn = tile.program_id 1",
         "  %c0 = arith.constant 0 : index", "  %c32 = arith.constant 32 : index",
         "  %c128 = arith.constant 128 : index",
         "  %m0 = arith.muli %pm, %c128 : index", "  %n0 = arith.muli %pn, %c128 : index",
         f"  %sa = tile.alloc : {SA}", f"  %sb = tile.alloc : {SB}",
         f"  %z = tile.fragment_zero : {ACC}",
         f"  %acc = scf.for %k = %c0 to %K step %c32 iter_args(%c = %z) -> ({ACC}) {{",
         f"    %va = tile.view %A[%m0, %k] : {MEM16} -> {GA}",
         f"    %vb = tile.view %B[%k, %n0] : {MEM16} -> {GB}",
         f"    %ta = tile.async_copy %va, %sa pad 0.0 : {GA}, {SA}",
         f"    %tb = tile.async_copy %vb, %sb pad 0.0 : {GB}, {SB}",
         "    tile.wait %ta, %tb",
         f"    %fa = tile.fragment_pack %sa[%c0, %c0] warps [2, 2] : {SA} -> {FA}",
         f"    %fb = tile.fragment_pack %sb[%c0, %c0] warps [2, 2] : {SB} -> {FB}",
         f"    %d = tile.fragment_mma %fa, %fb, %c : {FA}, {FB}, {ACC}",
         f"    scf.yield %d : {ACC}",
         "  }",
         f"  tile.fragment_store %acc, %C[%m0, %n0] warps [2, 2] : {ACC} -> {MEM32}",
         f"  %t = tile.load %A[%m0, %c0] pad -inf : {MEM16} -> {T16}",
         f"  %e0 = tile.convert %t : {T16} -> {T32}"]
    ops = ("exp", "mul", "max", "sub", "tanh", "add")
    for j in range(chain):
        op, prev = ops[j % len(ops)], f"%e{j}"
        rhs = "" if op in ("exp", "tanh") else f", %e{max(j - 1, 0)}"
        L.append(f"  %e{j + 1} = tile.{op} {prev}{rhs} : {T32}")
    L += [f"  %r = tile.reduce max 1 %e{chain} : {T32} -> {ROW}",
          f"  %b = tile.broadcast %r : {ROW} -> {T32}",
          f"  %s = tile.sub %e{chain}, %b : {T32}",
          "  func.return", "}"]
    return L


def count_ops(lines: list[str]) -> int:
    return sum(1 for line in lines if line.strip() != "}")


def generate(n_ops: int = 10_000, chain: int = 24) -> str:
    """Tile IR text with at least `n_ops` ops (the implicit builtin.module counts as one)."""
    lines: list[str] = []
    total, i = 1, 0
    while total < n_ops:
        k = kernel(i, chain)
        lines += k
        total += count_ops(k)
        i += 1
    return "\n".join(lines) + "\n"


def tessera_opt() -> list[str]:
    exe = shutil.which("tessera-opt", path=os.path.dirname(sys.executable)) or shutil.which("tessera-opt")
    return [exe] if exe else [sys.executable, "-c", "import sys; from tessera.cli import opt_main; sys.exit(opt_main())"]


def time_cli(path: str) -> float:
    """Wall time of `tessera-opt FILE -o /dev/null` (process start, parse, verify, print)."""
    start = time.perf_counter()
    proc = subprocess.run([*tessera_opt(), path, "-o", os.devnull], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"tessera-opt failed on the benchmark input:\n{proc.stderr}")
    return elapsed


def time_phases(text: str) -> dict[str, float]:
    """In-process seconds per phase, and the op count (parse_module, verify_module, printing)."""
    from tessera.ir.parse import parse_module
    from tessera.ir.verify import verify_module

    t0 = time.perf_counter()
    module = parse_module(text, "opt_10k.mlir")
    t1 = time.perf_counter()
    verify_module(module)
    t2 = time.perf_counter()
    str(module)
    t3 = time.perf_counter()
    return {"parse": t1 - t0, "verify": t2 - t1, "print": t3 - t2, "ops": sum(1 for _ in module.walk())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--limit", type=float, default=10.0, help="fail (exit 1) above this many seconds")
    ap.add_argument("--keep", help="also write the generated IR here")
    args = ap.parse_args(argv)
    text = generate(args.ops)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or os.path.join(tmp, "opt_10k.mlir")
        with open(path, "w") as f:
            f.write(text)
        elapsed = time_cli(path)
    phases = time_phases(text)
    print(f"tessera-opt parse+verify+print, {phases['ops']} ops ({len(text) / 1e6:.2f} MB): {elapsed:.2f} s "
          f"(limit {args.limit:.1f} s); in process: parse {phases['parse']:.2f} s, verify {phases['verify']:.2f} s, "
          f"print {phases['print']:.2f} s")
    return 0 if elapsed < args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
