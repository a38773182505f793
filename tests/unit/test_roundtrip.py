"""Every positive lit fixture survives a true two-process round trip, byte for byte.

tessera-opt prints a module; a second tessera-opt process parses that text and
must print exactly the same bytes, and the printed text must parse back (in
process) to itself. Printing is the interchange format between levels and
tools (DESIGN section 1), so any drift here is a bug in a printer or parser.
"""

from __future__ import annotations

import subprocess

import pytest

from _lit_fixtures import LIT_DIR, positive_fixtures, tessera_opt, uses_split
from tessera.ir.parse import parse_module
from tessera.tools.source import SPLIT_MARKER

POSITIVE = positive_fixtures()


def test_there_are_positive_fixtures_to_round_trip():
    names = {p.name for p in POSITIVE}
    assert {"logical_ops.mlir", "fragment_ops.mlir", "gemm_kloop.mlir"} <= names


@pytest.mark.parametrize("path", POSITIVE, ids=[str(p.relative_to(LIT_DIR)) for p in POSITIVE])
def test_two_process_round_trip(path):
    flags = ["--split-input-file"] if uses_split(path) else []
    first = subprocess.run([*tessera_opt(), *flags, str(path)], capture_output=True, timeout=120)
    assert first.returncode == 0, first.stderr.decode()
    assert first.stderr == b""
    second = subprocess.run([*tessera_opt(), *flags, "-"], input=first.stdout, capture_output=True, timeout=120)
    assert second.returncode == 0, second.stderr.decode()
    assert second.stdout == first.stdout
    for chunk in first.stdout.decode().split(SPLIT_MARKER + "\n"):
        assert str(parse_module(chunk, str(path))) + "\n" == chunk
