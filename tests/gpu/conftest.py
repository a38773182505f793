"""GPU tests need a CUDA device: without one every test in this folder is skipped, with the reason."""

from pathlib import Path

import pytest

from tessera.runtime import has_gpu, why_no_gpu

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA device ({why_no_gpu()})")
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(skip)
