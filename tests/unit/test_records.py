"""Launch records (tessera.compiler.records): a process with a warm disk cache launches the ops' kernels without
tracing, lowering, emitting -- or importing xDSL -- and a record that does not fit is a miss, never a wrong kernel.

The cuda lane runs on the g++ host emulator here (testing.emulate_on_host); each "fresh process" is a
subprocess with its own TESSERA_CACHE_DIR, under a time limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tessera.compiler import record_store as store
from tessera.compiler import records
from tessera.compiler.launch_shape import LaunchShape

ROOT = Path(__file__).resolve().parents[2]

# one sm_90 GEMM (the mma.sync kernel on an emulated device), checked against float64 in the child
_CHILD = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    import numpy as np
    import tessera.ops as ops
    from tessera.compiler import testing
    sys.path.insert(0, {tests!r})
    from _device_arrays import FakeDeviceArray
    rng = np.random.default_rng(3)
    a = rng.standard_normal((48, 40)).astype(np.float32)
    b = rng.standard_normal((40, 24)).astype(np.float32)
    out = np.full((48, 24), np.nan, np.float32)
    with testing.emulate_on_host("sm_89"):
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(b), out=FakeDeviceArray(out))
    err = np.abs(out - a.astype(np.float64) @ b.astype(np.float64)).max()
    heavy = sorted(m for m in sys.modules if m.startswith(("xdsl.dialects", "tessera.dsl", "tessera.passes")))
    print("RESULT", err, ops.last_run().artifact_hash, len(heavy), heavy[:3])
""")


def _run_child(cache: Path) -> tuple[float, str, int]:
    env = {**os.environ, "TESSERA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", _CHILD.format(tests=str(ROOT / "tests" / "unit"))], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT"))
    _, err, artifact, heavy, *_ = line.split(" ", 4)
    return float(err), artifact, int(heavy)


def test_a_warm_process_launches_from_the_record_without_the_compiler(tmp_path):
    """First process: compiles (the tracer, the passes, xDSL load) and writes the record. Second process, same
    cache: the same artifact, the same answer, and no tracer, pass or xDSL dialect module loaded."""
    err, artifact, heavy = _run_child(tmp_path)
    assert err < 1e-3 and heavy > 0
    assert list((tmp_path / "records").rglob("*.json"))
    err2, artifact2, heavy2 = _run_child(tmp_path)
    assert err2 < 1e-3 and artifact2 == artifact and heavy2 == 0


def test_import_tessera_ops_loads_no_compiler():
    """`import tessera.ops` loads the runtime only: xDSL (beyond its exceptions module), the tracer, the passes
    and the emitter wait for the first compile (0.54 s of import before; issue 17 item 7)."""
    code = ("import sys, tessera.ops; print(sorted(m for m in sys.modules if m.startswith(('xdsl.dialects', "
            "'xdsl.ir', 'tessera.dsl', 'tessera.passes', 'tessera.target.nvidia.emit.cuda', 'tessera.kernels.'))))")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['tessera.kernels.epilogues']"


SPECS = (records.tensor(("M", "K"), "f32"), records.tensor(("K", "N"), "f32"), records.tensor(("M", "N"), "f32"),
         None, None, records.scalar("f32"), None)
META = {"BM": 32, "BN": 32, "BK": 16, "TRANS_A": False, "TRANS_B": False, "ACTIVATION": "none"}


def _compile(cache):
    return records.compiled("tessera.kernels.gemm:gemm", SPECS, META, arch="sm_80", shape=LaunchShape(2),
                            cache=cache)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    from tessera.runtime.cache import CompileCache

    monkeypatch.setattr(records, "_memo", {})
    return CompileCache(tmp_path / "cache")


def test_a_restored_kernel_matches_the_compiled_one_and_retraces_on_demand(cache, monkeypatch):
    ck = _compile(cache)
    key = records.record_key("tessera.kernels.gemm:gemm", SPECS, META, "sm_80", LaunchShape(2))
    back = store.load(cache, key, lambda: ck.traced)
    assert back is not None and back is not ck
    assert (back.name, back.block, back.smem_bytes, back.signature, back._decl, back.pipeline, back.artifact_hash,
            back.source) == (ck.name, ck.block, ck.smem_bytes, ck.signature, ck._decl, ck.pipeline,
                             ck.artifact_hash, ck.source)
    assert back._traced is None and back.traced is ck.traced  # made when asked for, by the retrace function
    monkeypatch.setattr(records, "_memo", {})
    again = _compile(cache)  # a new process would read the record: no compile
    assert again.artifact_hash == ck.artifact_hash and again._traced is None


@pytest.mark.parametrize("damage", ["garbage", "other_key", "cubin_gone", "other_sha"])
def test_a_record_that_does_not_fit_is_a_miss_and_is_rewritten(cache, monkeypatch, damage):
    ck = _compile(cache)
    key = records.record_key("tessera.kernels.gemm:gemm", SPECS, META, "sm_80", LaunchShape(2))
    path = next((cache.directory / "records").rglob(f"{key}.json"))
    record = json.loads(path.read_text())
    if damage == "garbage":
        path.write_bytes(b"{not json")
    elif damage == "other_key":
        path.write_text(json.dumps({**record, "key": "0" * 64}))
    elif damage == "other_sha":
        path.write_text(json.dumps({**record, "sha256": "0" * 64}))
    else:
        cache.path_for(record["cache_key"]).unlink()
        cache.clear_memory()
    assert store.load(cache, key, lambda: None) is None
    monkeypatch.setattr(records, "_memo", {})
    again = _compile(cache)  # compiled again (the cubin from NVRTC or the cache), the record rewritten
    assert again.artifact_hash == ck.artifact_hash and again._traced is not None
    assert store.load(cache, key, lambda: None) is not None


def test_every_input_of_the_compile_is_in_the_key(monkeypatch):
    key = lambda **kw: records.record_key(kw.get("kernel", "tessera.kernels.gemm:gemm"), kw.get("specs", SPECS),  # noqa: E731
                                          kw.get("meta", META), kw.get("arch", "sm_80"), kw.get("shape", LaunchShape(2)))
    base = key()
    assert base == key()
    others = [key(kernel="tessera.kernels.gemm:other"), key(arch="sm_90"), key(shape=LaunchShape(3)),
              key(meta={**META, "BK": 32}), key(specs=(records.tensor(("M", "K"), "bf16"),) + SPECS[1:])]
    assert len({base, *others}) == 1 + len(others)
    monkeypatch.setattr(store, "build_id", lambda: "an edited tree")
    assert key() != base
    monkeypatch.undo()
    monkeypatch.setattr(store, "toolchain_id", lambda: "another nvrtc")
    assert key() != base


def test_a_package_whose_sources_cannot_be_listed_shares_no_records(tmp_path, monkeypatch):
    """Installed as a zip, the tree cannot be hashed: each process gets its own build id (no stale kernel)."""
    monkeypatch.setattr(store, "_package_root", lambda: str(tmp_path / "tessera.zip" / "tessera"))
    store.build_id.cache_clear()
    try:
        first = store.build_id()
        store.build_id.cache_clear()
        assert first.startswith("unlisted-") and store.build_id() != first
    finally:
        store.build_id.cache_clear()


def test_the_build_id_changes_when_a_source_file_changes(tmp_path, monkeypatch):
    fake = tmp_path / "tessera"
    (fake / "sub").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "sub" / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(store, "_package_root", lambda: str(fake))
    store.build_id.cache_clear()
    try:
        first = store.build_id()
        store.build_id.cache_clear()
        (fake / "sub" / "m.py").write_text("x = 22\n")
        assert store.build_id() != first
    finally:
        store.build_id.cache_clear()


def test_the_build_id_is_the_contents_not_where_or_when_the_tree_was_written(tmp_path, monkeypatch):
    """A same-size edit is a new build; a copy of the tree at another path with other mtimes (a cache warmed on one
    machine, carried to another) is the same build; a renamed file is not."""
    import os
    import shutil

    def tree(root, body="x = 1\n"):
        (root / "sub").mkdir(parents=True)
        (root / "__init__.py").write_text("")
        (root / "sub" / "m.py").write_text(body)
        return root

    def build_of(root):
        monkeypatch.setattr(store, "_package_root", lambda: str(root))
        store.build_id.cache_clear()
        try:
            return store.build_id()
        finally:
            store.build_id.cache_clear()

    first = build_of(tree(tmp_path / "a" / "tessera"))
    copy = tmp_path / "elsewhere" / "tessera"
    shutil.copytree(tmp_path / "a" / "tessera", copy)
    os.utime(copy / "sub" / "m.py", ns=(1, 1))
    assert build_of(copy) == first
    assert build_of(tree(tmp_path / "b" / "tessera", "x = 2\n")) != first  # same size, other contents
    (copy / "sub" / "m.py").rename(copy / "sub" / "n.py")
    assert build_of(copy) != first


def test_the_toolchain_versions_are_what_importlib_metadata_and_nvrtc_report():
    """Read from dist-info names (no importlib.metadata, no NVRTC import on a warm process's first call), they
    must equal what the slow readers say: a tune key or launch record made either way is the same."""
    from importlib import metadata

    from tessera.target.nvidia.toolchain.nvrtc import _nvrtc, toolchain_versions

    got = dict(toolchain_versions())
    for dist in ("nvidia-cuda-nvrtc", "cuda-bindings", "cuda-core"):
        assert got[dist] == metadata.version(dist)
    _, major, minor = _nvrtc()
    assert got["nvrtc"] == f"{major}.{minor}"


def test_tessera_compile_reads_a_record_keyed_by_the_traced_ir(cache, monkeypatch):
    """Any kernel, not only the ops': `tessera.compile` of an IR it has compiled before (this process or another,
    same cache) takes the launch record and skips lowering and emission; another pipeline, arch or option is
    another key, and a fault-injected compile never reads or writes one."""
    from tessera.compiler import driver, testing

    traced = records.resolve("tessera.kernels.gemm:gemm").trace(*records.specs_of(SPECS), **META)
    first = driver.compile(traced, "sm_80", stages=2, cache=cache)
    lowered = []
    real_lower = driver.lower
    monkeypatch.setattr(driver, "lower", lambda *a: lowered.append(a[1]) or real_lower(*a))
    again = driver.compile(traced, "sm_80", stages=2, cache=cache)
    assert lowered == [] and again is not first and again.traced is traced
    assert (again.artifact_hash, again.source, again.signature, again.pipeline) == \
        (first.artifact_hash, first.source, first.signature, first.pipeline)
    driver.compile(traced, "sm_80", stages=3, cache=cache)
    driver.compile(traced, "sm_80", stages=2, cache=cache, options={"lineinfo": True})
    assert len(lowered) == 2
    with testing.inject_faults(source=lambda s: s + "\n// injected\n"):
        hurt = driver.compile(traced, "sm_80", stages=2, cache=cache)
    assert len(lowered) == 3 and "// injected" in hurt.source
    assert "// injected" not in driver.compile(traced, "sm_80", stages=2, cache=cache).source
