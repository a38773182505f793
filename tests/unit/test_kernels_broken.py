"""Deliberately broken kernels must fail the numeric check the shipped kernels pass.

Each mutant is a copy of a shipped kernel module with one piece of code
changed (the change is spelled out below and must match the kernel source
exactly once, so a mutant cannot silently stop being one when the kernel is
edited). Mutants run through the very runners and `compare`/`check` of the
positive tests: the failure must be a relative error above the bound (with
every element written, no NaN), and `check` must raise. A GEMM that stores
each tile one row down shows the written-everywhere half of the check fails
too (NaN left from the poison; stale input where C is also read). An
unmutated copy loaded the same way passes, so the loading is not what breaks
the mutants.

Mutants: GEMM whose mma drops the carried accumulator or re-zeroes it each K
step; flash attention traced non-causal against the causal oracle, and with
the causal-mask line removed; linear attention whose state is never carried,
or restarts every chunk.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys

import pytest
from _kernel_check import check, compare, fresh_seed
from test_kernels_numerics_attention import attention_outputs
from test_kernels_numerics_attention import case_name as attention_case
from test_kernels_numerics_gemm import BETA, FULL, PLAIN, SMALL, check_gemm
from test_kernels_numerics_linear import case_name as linear_case
from test_kernels_numerics_linear import linear_outputs

from tessera.kernels import flash_attention as F
from tessera.kernels import gemm as G
from tessera.kernels import linear_attention as L

GEMM_MUTANTS = {
    # The accumulator is not threaded: each K step's product replaces the sum so far (only the last step survives).
    "mma-without-acc": [("        acc = tl.dot(a, b, acc)\n", "        acc = tl.dot(a, b)\n")],
    # The accumulator is re-zeroed at the top of every K step.
    "acc-rezeroed": [("    for k in tl.range(0, K, BK):\n",
                      "    for k in tl.range(0, K, BK):\n        acc = tl.zeros((BM, BN), tl.f32)\n")],
}
CAUSAL_MASK = [("            if CAUSAL:\n                visible = cols <= rows if EVEN_N else (cols < S_k) & (cols <= rows)\n"
                "            else:\n                visible = cols < S_k\n", "            visible = cols < S_k\n")]
LINEAR_MUTANTS = {
    # The state is never updated, so nothing is carried from chunk to chunk.
    "state-never-carried": [
        ("            S = tl.dot(k.T, v, S)\n", ""),
        ("            S = tl.dot((k.to(tl.f32) * w).to(k.dtype).T, v, S * tl.exp(g * n.to(tl.f32)))\n", ""),
    ],
    # The state update drops the incoming state: only the previous chunk is carried (no-decay branch).
    "state-restarts": [("            S = tl.dot(k.T, v, S)\n", "            S = tl.dot(k.T, v)\n")],
}


@pytest.fixture
def mutant(tmp_path, monkeypatch):
    """mutant(module, [(old, new), ...]): a copy of a kernel module with each `old` (present once) made `new`."""

    def make(module, edits):
        source = inspect.getsource(module)
        for old, new in edits:
            assert source.count(old) == 1, f"{module.__name__} no longer holds exactly one {old!r}: update the mutant"
            source = source.replace(old, new)
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]
        name = f"mutant_{module.__name__.rsplit('.', 1)[-1]}_{digest}"
        path = tmp_path / f"{name}.py"  # a real file: the tracer reads kernel source with inspect
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        copy = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, copy)
        spec.loader.exec_module(copy)
        return copy

    return make


def expect_numeric_failure(*wrong: str):
    """A `check_fn` for the runners: the shared check must find a rel error above the bound in each of `wrong`.

    No output may hold NaN: the mutants write every element, just wrongly.
    (A wrong in-out element may equal its input by chance; `compare` says so too.)
    """

    def judge(case, seed, dtypes, outputs):
        case = f"BROKEN {case}"
        outcome = compare(case, seed, dtypes, outputs)
        assert set(wrong) <= set(outcome.too_inaccurate), f"the broken kernel passed: {outcome.line()}"
        assert not any("NaN" in p for p in outcome.problems), outcome.problems  # every element written: just wrong
        with pytest.raises(AssertionError, match="rel error"):
            check(case, seed, dtypes, outputs)
        return outcome

    return judge


@pytest.mark.parametrize("name", GEMM_MUTANTS)
@pytest.mark.parametrize("shape,dtype,variant", [((128, 96, 64), "f32", PLAIN), ((257, 129, 65), "bf16", FULL),
                                                  ((100, 37, 53), "f16", BETA)])
def test_gemm_that_drops_the_accumulator_is_caught(mutant, name, shape, dtype, variant):
    broken = mutant(G, GEMM_MUTANTS[name]).gemm
    check_gemm(shape, dtype, dtype, (False, True), variant, SMALL, kernel=broken,
               check_fn=expect_numeric_failure("C"))


@pytest.mark.parametrize("dtype,S,d,heads", [("f32", 63, 64, "gqa"), ("bf16", 128, 128, "mha"),
                                             ("f32", 200, 64, "mha")])
def test_non_causal_trace_against_the_causal_oracle_is_caught(dtype, S, d, heads):
    seed = fresh_seed()
    outputs = attention_outputs(F.flash_attention, dtype, S, d, heads, True, seed, trace_causal=False)
    case = attention_case(dtype, S, d, heads, True) + " traced non-causal"
    expect_numeric_failure("O", "LSE")(case, seed, dtype, outputs)


@pytest.mark.parametrize("dtype,S,d,heads", [("f32", 63, 64, "gqa"), ("bf16", 200, 128, "gqa"),
                                             ("f32", 128, 64, "mha")])
def test_flash_attention_without_the_causal_mask_line_is_caught(mutant, dtype, S, d, heads):
    broken = mutant(F, CAUSAL_MASK).flash_attention
    seed = fresh_seed()
    outputs = attention_outputs(broken, dtype, S, d, heads, True, seed)
    expect_numeric_failure("O")(attention_case(dtype, S, d, heads, True) + " mask line removed", seed, dtype, outputs)


@pytest.mark.parametrize("name,decay", [("state-never-carried", False), ("state-never-carried", True),
                                        ("state-restarts", False)])
@pytest.mark.parametrize("dtype,steps,d", [("f32", 100, 64), ("bf16", 256, 128)])
def test_linear_attention_without_the_carried_state_is_caught(mutant, name, decay, dtype, steps, d):
    broken = mutant(L, LINEAR_MUTANTS[name]).linear_attention
    seed = fresh_seed()
    outputs = linear_outputs(broken, dtype, steps, d, decay, seed)
    expect_numeric_failure("O")(f"{linear_case(dtype, steps, d, decay)} {name}", seed, dtype, outputs)


def expect_unwritten(problem: str):
    """A `check_fn`: the shared check must report elements the kernel left unwritten (`problem` names how)."""

    def judge(case, seed, dtypes, outputs):
        outcome = compare(f"BROKEN {case}", seed, dtypes, outputs)
        assert any(problem in p for p in outcome.problems), f"unwritten elements went unnoticed: {outcome.problems}"
        with pytest.raises(AssertionError, match=problem):
            check(f"BROKEN {case}", seed, dtypes, outputs)
        return outcome

    return judge


# Each tile is stored one row down: row 0 of every row of tiles is never written.
SHIFTED_STORE = [("    tl.store(C, [m0, n0], acc.to(C.dtype))\n", "    tl.store(C, [m0 + 1, n0], acc.to(C.dtype))\n")]


@pytest.mark.parametrize("variant,problem", [(PLAIN, "are NaN"), (BETA, "still hold their input value")],
                         ids=["poisoned-C", "in-out-C"])
def test_gemm_that_misses_elements_is_caught(mutant, variant, problem):
    """Unwritten elements are caught: as NaN left from the poison, or (C read with beta) as stale input values."""
    broken = mutant(G, SHIFTED_STORE).gemm
    check_gemm((100, 37, 53), "f32", "f32", (False, False), variant, SMALL, kernel=broken,
               check_fn=expect_unwritten(problem))


def test_unmutated_copies_pass(mutant):
    """The control: copies loaded the same way as the mutants, with no edit, pass the same checks."""
    check_gemm((257, 129, 65), "bf16", "bf16", (True, False), FULL, SMALL, kernel=mutant(G, []).gemm)
    seed = fresh_seed()
    check("copy of " + attention_case("f32", 63, 64, "gqa", True), seed, "f32",
          attention_outputs(mutant(F, []).flash_attention, "f32", 63, 64, "gqa", True, seed))
    seed = fresh_seed()
    check("copy of " + linear_case("f32", 100, 64, True), seed, "f32",
          linear_outputs(mutant(L, []).linear_attention, "f32", 100, 64, True, seed))
