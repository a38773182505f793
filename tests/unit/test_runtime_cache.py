"""Compile cache: keys cover everything that decides the cubin; disk entries are verified, written atomically."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cuda_samples import TINY, VECADD  # noqa: E402

from tessera.target.nvidia.toolchain import CompiledArtifact, toolchain_versions  # noqa: E402
from tessera.runtime import CompileCache, cache_key, default_cache_dir  # noqa: E402


def test_key_covers_text_arch_options_names_and_toolchain():
    base = cache_key(VECADD, "sm_90")
    assert base == cache_key(VECADD, "sm_90", options={}, name_expressions=())
    other_toolchain = (("nvrtc", "99.9"),) + toolchain_versions()[1:]
    variants = [cache_key(VECADD + " ", "sm_90"), cache_key(VECADD, "sm_90a"),
                cache_key(VECADD, "sm_90", options={"lineinfo": True}),
                cache_key(VECADD, "sm_90", name_expressions=["vadd"]),
                cache_key(VECADD, "sm_90", toolchain=other_toolchain),
                cache_key(VECADD, "sm_90", program_name="other.cu")]
    assert len({base, *variants}) == len(variants) + 1
    # option order does not matter: the key uses the canonical (sorted) form
    assert cache_key(VECADD, "sm_90", options={"lineinfo": True, "ftz": True}) == \
        cache_key(VECADD, "sm_90", options=[("ftz", True), ("lineinfo", True)])


def test_memory_then_disk_then_compile(tmp_path):
    cache = CompileCache(tmp_path)
    first = cache.get_or_compile(VECADD, "sm_90")
    assert (cache.stats.misses, cache.stats.memory_hits, cache.stats.disk_hits) == (1, 0, 0)
    assert cache.get_or_compile(VECADD, "sm_90") is first
    assert cache.stats.memory_hits == 1
    fresh = CompileCache(tmp_path)  # a new process: only the disk remains
    again = fresh.get_or_compile(VECADD, "sm_90")
    assert fresh.stats.disk_hits == 1 and fresh.stats.misses == 0
    assert again == first and again.ptx == first.ptx and again.log == first.log
    assert isinstance(again.options, tuple) and again.verify()


def test_options_and_name_expressions_round_trip(tmp_path):
    opts = {"define_macro": ["A=1", "B"], "max_register_count": 64}
    art = CompileCache(tmp_path).get_or_compile(VECADD, "sm_80", options=opts, name_expressions=["vadd"])
    back = CompileCache(tmp_path).get_or_compile(VECADD, "sm_80", options=opts, name_expressions=["vadd"])
    assert back == art and back.options == (("define_macro", ("A=1", "B")), ("max_register_count", 64))
    assert back.symbol_mapping == (("vadd", "vadd"),)


@pytest.mark.parametrize("damage", ["flip_cubin", "flip_header", "truncate", "empty", "garbage"])
def test_corrupted_entry_is_detected_and_recompiled(tmp_path, damage):
    cache = CompileCache(tmp_path)
    good = cache.get_or_compile(TINY, "sm_90")
    key = cache_key(TINY, "sm_90")
    path = cache.path_for(key)
    blob = bytearray(path.read_bytes())
    if damage == "flip_cubin":
        blob[-100] ^= 0xFF
    elif damage == "flip_header":
        blob[80] ^= 0x01
    elif damage == "truncate":
        blob = blob[: len(blob) // 2]
    elif damage == "empty":
        blob = bytearray()
    else:
        blob = bytearray(b"\x00" * 64 + b"\n" + bytes(blob[65:]))
    path.write_bytes(bytes(blob))
    fresh = CompileCache(tmp_path)
    art = fresh.get_or_compile(TINY, "sm_90")
    assert fresh.stats.corrupt == 1 and fresh.stats.misses == 1 and fresh.stats.disk_hits == 0
    assert art.cubin == good.cubin and art.verify()
    assert CompileCache(tmp_path).get(key) == good  # the rewritten entry is whole again


def test_entry_with_a_valid_envelope_but_wrong_cubin_hash_is_rejected(tmp_path):
    """Even a self-consistent file is not trusted if its cubin does not hash to the artifact's sha256."""
    from tessera.runtime.cache import _encode
    cache = CompileCache(tmp_path)
    good = cache.get_or_compile(TINY, "sm_90")
    key = cache_key(TINY, "sm_90")
    forged = replace(good, cubin=good.cubin[:-1] + bytes([good.cubin[-1] ^ 1]))
    cache.path_for(key).write_bytes(_encode(key, forged))
    fresh = CompileCache(tmp_path)
    assert fresh.get(key) is None and fresh.stats.corrupt == 1
    assert not cache.path_for(key).exists()


def test_put_refuses_an_artifact_that_fails_its_hash(tmp_path):
    cache = CompileCache(tmp_path)
    art = cache.get_or_compile(TINY, "sm_90")
    with pytest.raises(ValueError):
        cache.put("k" * 64, replace(art, sha256="0" * 64))


def test_writes_leave_no_temp_files(tmp_path):
    cache = CompileCache(tmp_path)
    cache.get_or_compile(TINY, "sm_90")
    cache.get_or_compile(TINY, "sm_80")
    files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == 2 and all(name.endswith(".cubin-entry") for name in files)


def test_unwritable_directory_still_returns_the_compile(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = CompileCache(blocker / "cache")
    art = cache.get_or_compile(TINY, "sm_90")
    assert art.verify() and cache.stats.write_errors == 1


def test_key_text_keys_the_entry_and_skips_emission_on_a_hit(tmp_path):
    calls = []

    def emit():
        calls.append(1)
        return TINY

    cache = CompileCache(tmp_path)
    ir = "func.func @tiny(...)  // stands for the IR the source is emitted from"
    a = cache.get_or_compile(emit, "sm_90", key_text=ir)
    b = CompileCache(tmp_path).get_or_compile(emit, "sm_90", key_text=ir)
    assert a == b and calls == [1]
    with pytest.raises(TypeError):
        cache.get_or_compile(emit, "sm_90")


def test_cache_dir_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    assert CompileCache().directory == tmp_path / "env"
    monkeypatch.delenv("TESSERA_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "tessera"


def test_memory_only_cache(tmp_path):
    cache = CompileCache(tmp_path, disk=False)
    cache.get_or_compile(TINY, "sm_90")
    assert not any(tmp_path.iterdir())
    assert isinstance(cache.get(cache_key(TINY, "sm_90")), CompiledArtifact)
