"""CUDA for the dynamic tile scheduler's ops (`ir/sched_ops.py`) and for scf.while, the loop it runs in.

`nv.tile_fetch` adds 1 to the u32 counter COUNTER_BYTES before `tsr_scratch` (atom.acq_rel.gpu) and resets it
when it hands out the launch's last tile; `nv.smem_put` / `nv.smem_get` are st.shared / ld.shared of one word.
The helpers they call are the split-K and Hopper preludes' (the host emulator defines its own).
"""

from __future__ import annotations

from xdsl.dialects import scf

from tessera.target.nvidia.ir.sched_ops import SmemGetOp, SmemPutOp, TileFetchOp


def emit_tile_fetch(e, op: TileFetchOp) -> None:
    total, ctas = e[op.total], e[op.ctas]
    old = e.fresh("fetched")
    e.comment(op, "the next tile from the launch's counter")
    e.line(f"const unsigned {old} = tsr_atom_add_u32(reinterpret_cast<unsigned*>(tsr_scratch - "
           f"{op.COUNTER_BYTES}), 1u);")
    e.line(f"if ({old} + 1u == (unsigned)({total})) "
           f"tsr_st_u32_relaxed(reinterpret_cast<unsigned*>(tsr_scratch - {op.COUNTER_BYTES}), 0u);  "
           "// the launch's last fetch: ready for the next launch")
    e.line(f"const int {e.define(op.result)} = (int){old} + (int)({ctas});")


def emit_smem_put(e, op: SmemPutOp) -> None:
    e.line(f"tsr_st_shared_u32(tsr_sbase + {op.base.value.data}u + 4u * (unsigned)({e[op.slot]}), "
           f"(unsigned)({e[op.value]}));  // {op.name}")


def emit_smem_get(e, op: SmemGetOp) -> None:
    e.line(f"const int {e.define(op.result)} = (int)tsr_ld_shared_u32(tsr_sbase + "
           f"{op.base.value.data}u + 4u * (unsigned)({e[op.slot]}));  // {op.name}")


def emit_while(e, op: scf.WhileOp) -> None:
    """scf.while as `while (true) { before; if (!cond) break; after; }`: the carried values are variables
    declared before the loop (the before block's arguments), the results are the condition's values at exit."""
    from tessera.target.nvidia.emit.scalar import _yield, copy, declare

    before, after = op.before_region.block, op.after_region.block
    cond = before.last_op
    if not isinstance(cond, scf.ConditionOp) or len(cond.args) != len(after.args):
        from tessera.ir import diagnostics as D

        raise D.TesseraError(D.EMIT_UNSUPPORTED, "scf.while whose before region does not end in scf.condition "
                                                 "passing the after region's arguments", op=op)
    e.comment(op, f"{len(op.arguments)} loop-carried value(s)")
    carried = []
    for arg, init in zip(before.args, op.arguments):
        name = e.fresh(arg.name_hint or "carried")
        declare(e, arg.type, name)
        copy(e, arg.type, name, e[init])
        e.define(arg, name)
        carried.append((name, arg))
    outs = []  # (name, result, exit value) of the results something reads
    for res, v in zip(op.results, cond.args):
        if res.uses:
            name = e.fresh(res.name_hint or "while_out")
            declare(e, res.type, name)
            e.define(res, name)
            outs.append((name, res, v))
    with e.block("while (true) "):
        e.emit_ops([inner for inner in before.ops if inner is not cond])
        with e.block(f"if (!{e[cond.condition]}) "):
            for name, res, v in outs:
                copy(e, res.type, name, e[v])
            e.line("break;")
        for arg, v in zip(after.args, cond.args):
            e.define(arg, e[v])
        e.emit_ops([inner for inner in after.ops if not isinstance(inner, scf.YieldOp)])
        _yield(e, after.last_op, carried)


EMITTERS = {"nv.tile_fetch": emit_tile_fetch, "nv.smem_put": emit_smem_put, "nv.smem_get": emit_smem_get,
            "scf.while": emit_while}
