"""GPU tests need a CUDA device: without one every test in this folder is skipped, with the reason.

`sm90_fresh_cache`: a test module that runs the sm_90a kernels uses it (`pytestmark = pytest.mark.usefixtures(
"sm90_fresh_cache")`): skipped off an sm_90 device, and an empty compile and autotune cache per test (default
configs, nothing tuned)."""

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


@pytest.fixture
def sm90_fresh_cache(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 device")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
