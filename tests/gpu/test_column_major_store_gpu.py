"""The emulator tests of tests/unit/test_column_major_store.py on an sm_90 device: the swapped kernel's
column-major C^T (f16, f32, i32; ragged, padded and odd column strides) and an i32 C on the row-major paths
(its pairs move by their bits). numpy arrays: the runtime copies them in and back."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_column_major_store import check_column_major_c, check_i32_row_major_c  # noqa: E402

torch = pytest.importorskip("torch")


pytestmark = pytest.mark.usefixtures("sm90_fresh_cache")  # off sm_90: skipped; an empty cache: default configs


@pytest.mark.parametrize("c_dtype, np_c", [("f16", np.float16), ("f32", np.float32), ("i32", np.int32)])
@pytest.mark.parametrize("M, N, ld", [(136, 40, 136), (128, 48, 130), (128, 48, 129), (4096, 16, 4096)],
                         ids=["ragged", "padded-column-stride", "odd-column-stride", "decode"])
def test_a_column_major_c_is_written_whole_and_right_on_the_gpu(c_dtype, np_c, M, N, ld):
    check_column_major_c(c_dtype, np_c, M, N, ld)


@pytest.mark.parametrize("M, N", [(128, 64), (136, 40), (1024, 512)], ids=["interior", "ragged", "many-tiles"])
def test_an_i32_c_keeps_its_values_on_the_gpu(M, N):
    check_i32_row_major_c(M, N)
