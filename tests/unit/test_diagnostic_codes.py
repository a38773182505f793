"""Every registered diagnostic code is documented and exercised by a test that expects it.

Codes are the public contract users and tests match on (diagnostics.py), so
each must carry a message and a hint, and each must be *produced* somewhere
in the test suite, not just declared:

* codes tessera-opt can emit (IR_*, TILE_*, OPT_*, and any new family by
  default) need a negative lit fixture under tests/lit: one whose RUN lines
  expect failure (`not tessera-opt`, `--verify-diagnostics`) and which
  names the code in an `expected-error {{...}}` annotation or a
  `CHECK...: error: CODE` line;
* codes of the Python-API-only layers (the tracing DSL, the reference
  interpreter, NVRTC codegen and CUDA emission, the CUDA runtime, the
  compile driver and tessera.ops), which no tessera-opt input can reach, need
  a unit or GPU test that names the code instead.

lit reads "UNSUPPORTED:" anywhere in a fixture as its own directive, so
fixtures spell such codes `X_{{UNSUPPORTED}}:` or `X_UNSUPPORTED{{:}}`; both
count here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _lit_fixtures import LIT_DIR, negative_fixtures
from tessera.ir import diagnostics as D

TESTS_DIR = Path(__file__).resolve().parents[1]
API_ONLY_PREFIXES = {
    "DSL_": "raised while tracing Python kernels (tessera.dsl)",
    "REF_": "raised by the reference interpreter (tessera.reference)",
    "CODEGEN_": "raised by NVRTC compilation and SASS inspection (tessera.target.nvidia.toolchain)",
    "RUNTIME_": "raised by kernel loading and launch (tessera.runtime)",
    "EMIT_": "raised by CUDA C++ emission (tessera.target.nvidia.emit.cuda)",
    "COMPILE_": "raised by the compile driver (tessera.compile)",
    "OPS_": "raised by the user-facing ops (tessera.ops)",
    "BENCH_": "raised by the timing and perf-report helpers (tessera.testing)",
}
CODES = sorted(D.all_codes())


_ANNOTATED = re.compile(r"expected-error(?:@[+-]\d+)?\s*\{\{\s*([A-Z][A-Z0-9_]+)\b")
_CHECKED = re.compile(r"error: ([A-Z][A-Z0-9_]+)\b")
# FileCheck spellings that split a code so lit does not read "UNSUPPORTED:" as its own directive:
# NV_ARCH_{{UNSUPPORTED}}: ... or TILE_FRAGMENT_UNSUPPORTED{{:}} ...
_SPLIT_CODE = re.compile(r"\{\{([A-Z0-9_:]*)\}\}")


def _lit_expectations() -> dict[str, list[str]]:
    """Code -> negative fixtures that expect it."""
    found: dict[str, list[str]] = {}
    for path in negative_fixtures():
        text = path.read_text(errors="replace")
        codes = set(_ANNOTATED.findall(text)) | set(_CHECKED.findall(_SPLIT_CODE.sub(r"\1", text)))
        for code in codes:
            found.setdefault(code, []).append(str(path.relative_to(LIT_DIR)))
    return found


def _api_tests_naming(code: str) -> list[str]:
    here = Path(__file__).resolve()
    hits = []
    for path in [*TESTS_DIR.glob("unit/test_*.py"), *TESTS_DIR.glob("gpu/test_*.py")]:
        if path.resolve() != here and re.search(rf"\b{code}\b", path.read_text(errors="replace")):
            hits.append(path.name)
    return hits


LIT = _lit_expectations()


@pytest.mark.parametrize("name", CODES)
def test_code_has_a_message_and_a_hint(name):
    code = D.all_codes()[name]
    assert code.name == name and re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+", name)
    assert len(code.summary.split()) >= 3, f"{name}: the message should name the problem"
    assert len(code.hint.split()) >= 3, f"{name}: the hint should say what to do"
    assert code.summary.strip() != code.hint.strip()


@pytest.mark.parametrize("name", CODES)
def test_code_is_expected_by_a_negative_test(name):
    prefix = next((p for p in API_ONLY_PREFIXES if name.startswith(p)), None)
    if prefix is None:
        assert name in LIT, (f"{name} has no negative lit fixture: add one under tests/lit that expects it "
                             "(// expected-error {{" + name + "}} with --verify-diagnostics, or "
                             "`not tessera-opt ... 2>&1 | FileCheck` with a CHECK line '...: error: " + name + "')")
    else:
        assert name in LIT or _api_tests_naming(name), (
            f"{name} is {API_ONLY_PREFIXES[prefix]}: name it in a test under tests/unit or tests/gpu that triggers it")


def test_every_code_a_fixture_expects_is_registered():
    unknown = {code: paths for code, paths in LIT.items() if code not in D.all_codes()}
    assert not unknown, f"fixtures expect unregistered codes (typo or a renamed code): {unknown}"


def test_the_classification_sees_the_fixtures():
    # guards the two tests above against a silently empty search
    assert len(negative_fixtures()) >= 20
    assert {"TILE_FRAGMENT_BARE", "OPT_OPTION_MISSING", "IR_PARSE"} <= set(LIT)
