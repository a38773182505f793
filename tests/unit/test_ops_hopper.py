"""Which GEMM ops.gemm runs on Hopper (tessera.ops._hopper): eligibility, the default rule, pins and the cache."""

from __future__ import annotations

import pytest

from tessera.ir.diagnostics import TesseraError
from tessera.compiler.arrays import ArrayView
from tessera.ops import _hopper as H
from tessera.ops import autotune
from _device_arrays import FakeDeviceArray


def view(shape, strides, dtype="bf16", ptr=1 << 20):
    return ArrayView("torch", ptr, shape, strides, dtype, 0, True, False)


A, W = view((4096, 1024), (1024, 1)), view((2048, 1024), (1024, 1))


def test_the_sm90a_kernel_runs_for_tma_readable_operands_in_every_layout_on_sm90_only():
    assert H.eligible("sm_90", A, W, False, True)
    assert not H.eligible("sm_80", A, W, False, True)            # no wgmma
    assert H.eligible("sm_90", A, W, False, False)               # B as [K, N]: read MN-major
    assert H.eligible("sm_90", A, W, True, True)                 # A as [K, M]: read MN-major
    assert H.eligible("sm_90", A, W, True, False)
    assert not H.eligible("sm_90", view((64, 100), (100, 1)), view((64, 100), (100, 1)), False, True)  # 200 B pitch
    assert not H.eligible("sm_90", view((64, 64), (64, 1), ptr=(1 << 20) + 8), W, False, True)       # base % 16
    assert not H.eligible("sm_90", view((64, 64), (1, 64)), W, False, True)                          # column-major
    assert not H.eligible("sm_90", view((64, 64), (64, 1), "f32"), view((64, 64), (64, 1), "f32"), False, True)
    assert not H.eligible("sm_90", view((64, 64), (64, 1), ptr=None), W, False, True)                # host array
    assert not H.eligible("sm_90", view((64, 0), (0, 1)), view((32, 0), (0, 1)), False, True)        # K = 0: no map


def test_default_rule_big_tiles_in_clusters_from_two_waves_one_wave_without_else_split_k_or_pingpong():
    big = {"BM": 128, "BN": 256, "BK": 64, "stages": 4, "schedule": "cooperative", "splitk": 1, "multicast": "b"}
    assert H.default_config(8192, 8192, 8192).as_dict() == {**big, "cluster": 2}
    assert H.default_config(8192, 8192, 1024).as_dict() == {**big, "cluster": 2}  # the TMA store: short K wins too
    assert H.default_config(2048, 2048, 2048).as_dict() == {**big, "cluster": 1}  # 128 big tiles: one wave
    split = {"BM": 128, "BN": 128, "BK": 64, "stages": 5, "schedule": "cooperative", "cluster": 1, "splitk": 2,
             "multicast": "b"}
    # 32 tiles of 128 x 256, K split in 4: 128 units of 4096 K each
    # (each split sums and stores its own columns: fixup=scatter)
    assert H.default_config(1024, 1024, 16384).as_dict() == {**big, "cluster": 1, "splitk": 4, "fixup": "scatter"}
    assert H.default_config(1024, 1024, 16384, reads_tiles=True).as_dict() == split  # 64 tiles, K long: 128 units
    # K too short for 4 splits of SPLITK_MIN_K, or too many big units for a wave: 128 x 128 ping-pong, split 2
    assert H.default_config(1024, 1024, 8192).as_dict() == {**split, "stages": 6, "schedule": "pingpong"}
    assert H.default_config(1152, 896, 16384).as_dict() == {**split, "stages": 6, "schedule": "pingpong"}  # 144 units
    assert H.default_config(1024, 1024, 2048).schedule == "pingpong"  # K short: 128 x 64 tiles instead
    assert H.default_config(128, 8192, 8192).as_dict()["splitk"] == 1  # memory-bound: more tiles beat splits
    assert H.default_config(1024, 1024, 2048, reads_tiles=True).schedule == "cooperative"
    assert all(H.default_config(*s).as_dict() in H.HOPPER_CANDIDATES
               for s in [(1, 1, 8), (128, 8192, 8192), (4000, 4000, 4000), (1024, 1024, 16384), (1024, 1024, 8192)])


def test_default_rule_for_decode_and_for_b_stored_k_by_n():
    """M <= 64: 64-row tiles, K split while the units fill at most half a wave (N = 4096: 32 tiles x 2 splits, the
    H200's tuned winner at M = 64); N = 14336 has 112 tiles already. With B stored [K, N] (NN, TN) 4000^3 keeps 128 x 256 (160 columns would be read
    through the 64-byte swizzle: 0.90x cuBLAS on the H200, against 0.99x)."""
    dec = {"BM": 64, "BN": 128, "BK": 64, "stages": 8, "schedule": "cooperative", "cluster": 1, "multicast": "b"}
    for m in (1, 16, 32):
        assert H.default_config(m, 4096, 4096).as_dict() == {**dec, "splitk": 2}
        assert H.default_config(m, 14336, 4096, layout="NN").as_dict() == {**dec, "splitk": 1}
    m64 = {"BM": 64, "BN": 64, "BK": 128, "stages": 6, "schedule": "cooperative", "cluster": 1, "splitk": 1,
           "multicast": "b"}  # above SWAP_DEFAULT_M: unswapped 64 x 64 tiles, C through TMA boxes
    for m in (33, 64):
        assert H.default_config(m, 4096, 4096).as_dict() == m64 == H.default_config(m, 14336, 4096, layout="NN").as_dict()
    assert m64 in H.HOPPER_CANDIDATES
    assert H.default_config(16, 4096, 1024).splitk == 1  # a split of fewer than 16 K steps is not worth its fixup
    assert H.default_config(4000, 4000, 4000, layout="NN").as_dict()["BN"] == 256
    assert H.default_config(4000, 4000, 4000, layout="TN").as_dict()["BN"] == 256
    assert H.default_config(4000, 4000, 4000, layout="TT").as_dict()["BN"] == 160


def test_default_rule_takes_192x160_tiles_where_their_waves_cost_less():
    """4000^3: 21 x 25 tiles of 192 x 160 (3.98 waves) cost 6% less than 32 x 16 of 128 x 256 (3.88 waves covering
    4096^2); at 4096^3 or 8192^3 the 128 x 256 tiles fit whole and stay."""
    assert H.default_config(4000, 4000, 4000).as_dict() == {"BM": 192, "BN": 160, "BK": 64, "stages": 4,
                                                             "schedule": "cooperative", "cluster": 1, "splitk": 1,
                                                             "multicast": "b"}
    assert [H.default_config(n, n, n).BM for n in (2048, 4096, 8192)] == [128, 128, 128]


def test_pin_then_cache_then_default(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TESSERA_AUTOTUNE", raising=False)
    assert H.gemm_config(4096, 4096, 4096, "bf16").source == "default"
    key = H.tune_key(4096, 4096, 4096, "bf16")
    cands = H.candidates(4096, 4096)  # what tune_gemm measures here (no swapped ones): the cache entry names it
    assert len(cands) < len(H.HOPPER_CANDIDATES)
    autotune.tune(H.OP, key, cands, lambda c: 1e-3 * (len(cands) - cands.index(c)), progress=False)
    got = H.gemm_config(3840, 4096, 3000, "bf16")  # same buckets and alignment: the measured winner, from the cache
    assert got.source == "cache" and got.as_dict() == cands[-1]
    assert H.gemm_config(4000, 4096, 3000, "bf16").source == "default"  # 4000 is not 256-aligned: another key
    monkeypatch.setenv("TESSERA_PIN_GEMM_SM90A", "BM=128,BN=128,BK=64,stages=5,schedule=pingpong,cluster=1,splitk=1,multicast=b")
    got = H.gemm_config(4096, 4096, 4096, "bf16")
    assert got.source == "pinned" and got.as_dict() == H.HOPPER_CANDIDATES[3]


def test_layouts_are_tuned_apart_and_nt_keeps_its_old_key(tmp_path, monkeypatch):
    """An MN-major operand may favour other tiles: NN, TN, TT get their own cache entries; NT's key has no
    layout field, so entries tuned before layouts were keyed still hit."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TESSERA_AUTOTUNE", raising=False)
    assert "layout" not in H.tune_key(4096, 4096, 4096, "bf16") == H.tune_key(4096, 4096, 4096, "bf16", "NT")
    assert H.tune_key(4096, 4096, 4096, "bf16", "NN")["layout"] == "NN"
    cands = H.candidates(4096, 4096)
    autotune.tune(H.OP, H.tune_key(4096, 4096, 4096, "bf16", "NN"), cands,
                  lambda c: 1e-3 * (len(cands) - cands.index(c)), progress=False)
    assert H.gemm_config(4096, 4096, 4096, "bf16", layout="NN").source == "cache"
    for layout in ("NT", "TN", "TT"):
        assert H.gemm_config(4096, 4096, 4096, "bf16", layout=layout).source == "default"
    assert [H.layout_of(a, b) for a in (False, True) for b in (False, True)] == ["NN", "NT", "TN", "TT"]


def test_tune_gemm_refuses_an_unknown_layout():
    with pytest.raises(Exception) as err:
        H.tune_gemm(64, 64, 64, layout="NX")
    assert err.value.code.name == "OPS_AUTOTUNE_INPUT"


def test_a_malformed_pin_is_a_coded_error(monkeypatch):
    monkeypatch.setenv("TESSERA_PIN_GEMM_SM90A", "BM=128,BN=256")
    with pytest.raises(Exception) as err:
        H.gemm_config(4096, 4096, 4096, "bf16")
    assert err.value.code.name == "OPS_AUTOTUNE_PIN_INVALID"


def test_lookup_never_measures(tmp_path):
    assert autotune.lookup("x", {"M": 1}, [{"a": 1}], cache=tmp_path / "t.json") is None


@pytest.mark.parametrize("shape, reads_tiles", [((8192, 8192, 8192), True), ((2048, 2048, 2048), False),
                                                ((2048, 2048, 2048), True)])
def test_every_default_config_compiles_to_hgmma_without_local_memory(shape, reads_tiles):
    """The rule never picks a config that spills, with the heaviest epilogue it can get (C, bias, gelu, residual)."""
    import tessera
    from tessera.target.nvidia.toolchain.sass import has_local_memory
    from tessera.kernels import gemm as G
    from tessera.runtime.cache import CompileCache

    cfg = H.default_config(*shape, reads_tiles)
    T = tessera.tensor
    specs = (T(("M", "K"), "bf16"), T(("N", "K"), "bf16"), T(("M", "N"), "bf16"), T((1, "N"), "f32"),
             T(("M", "N"), "bf16") if reads_tiles else None, tessera.scalar("f32"),
             tessera.scalar("f32") if reads_tiles else None)
    ck = tessera.compile(G.gemm.trace(*specs, **cfg.meta(), TRANS_B=True, ACTIVATION="gelu"), "sm_90a",
                         shape=cfg.shape, cache=CompileCache(disk=False))
    assert "HGMMA" in ck.sass() and not has_local_memory(ck.cubin), cfg


@pytest.mark.parametrize("layout", ["NT", "NN"])
def test_every_tuning_candidate_compiles_to_hgmma_without_local_memory(layout, tmp_path, monkeypatch):
    """What tune_gemm may pick (`compile_plain`, the kernel it times) never spills: the register budget is part
    of a config's correctness. A swapped candidate is compiled as ops runs it, in the other layout."""
    from tessera.target.nvidia.toolchain.sass import has_local_memory

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    flip = {"NT": "NT", "NN": "TT"}  # swapped: b^T a^T, each operand read the other way
    spills = []
    for cfg in H.HOPPER_CANDIDATES:
        ck, _ = H.compile_plain(cfg, "bf16", flip[layout] if cfg.get(H.SWAP) else layout)
        if "HGMMA" not in ck.sass() or has_local_memory(ck.cubin):
            spills.append((cfg, ck.report.registers, ck.report.stack_bytes, ck.report.local_bytes))
    assert not spills, spills


@pytest.mark.parametrize("M", [1, 16, 64])
def test_every_swapped_decode_config_with_a_row_bias_compiles_to_hgmma_without_local_memory(M):
    """The swapped decode kernels as ops builds them for nn.Linear with a bias (BIAS_AXIS="m", register stores,
    both operands' layouts flipped) and a gelu: HGMMA, no local memory."""
    import tessera
    from tessera.kernels import gemm as G
    from tessera.runtime.cache import CompileCache
    from tessera.target.nvidia.toolchain.sass import has_local_memory

    cfg = H.swap_config(M)
    T = tessera.tensor
    specs = (T(("M", "K"), "bf16"), T(("K", "N"), "bf16"), T(("M", "N"), "bf16"), T(("M", "N"), "bf16"), None,
             tessera.scalar("f32"), None)
    traced = G.gemm.trace(*specs, **cfg.meta(), TRANS_A=False, TRANS_B=False, ACTIVATION="gelu", BIAS_AXIS="m")
    ck = tessera.compile(traced, "sm_90a", shape=cfg.shape, cache=CompileCache(disk=False))
    assert "HGMMA" in ck.sass() and not has_local_memory(ck.cubin), cfg


def test_a_bad_bias_axis_is_a_coded_kernel_error():
    import tessera
    from tessera.kernels import gemm as G

    T = tessera.tensor
    specs = (T(("M", "K"), "f32"), T(("K", "N"), "f32"), T(("M", "N"), "f32"), None, None, tessera.scalar("f32"), None)
    with pytest.raises(TesseraError, match="DSL_META_INVALID.*BIAS_AXIS='k'"):
        G.gemm.trace(*specs, BM=32, BN=32, BK=16, BIAS_AXIS="k")


def test_a_tile_constant_shared_by_tl_zeros_and_relu_moves_to_the_epilogue():
    """The tracer shares one 0.0 tile between the accumulator init and relu's maximum: it must not be refused."""
    import tessera
    from tessera.kernels import gemm as G
    from tessera.runtime.cache import CompileCache

    T = tessera.tensor
    specs = (T(("M", "K"), "f16"), T(("N", "K"), "f16"), T(("M", "N"), "f16"), None, None, tessera.scalar("f32"), None)
    traced = G.gemm.trace(*specs, BM=128, BN=128, BK=64, TRANS_B=True, ACTIVATION="relu")
    assert traced.ir_text().count("tile.constant 0.0") == 1
    ck = tessera.compile(traced, "sm_90a", stages=4, cache=CompileCache(disk=False))
    assert "HGMMA.64x128x16.F32" in ck.sass()
    # The epilogue is emitted twice (interior tiles unchecked, edge tiles checked); each copy is mul then max.
    assert [line.rsplit(": ", 1)[-1] for line in ck.source.splitlines() if "// nv.map" in line] == ["mul", "max"] * 2


@pytest.mark.parametrize("reads_c", [False, True])
def test_ops_gemm_takes_the_sm90a_kernel_on_an_emulated_sm90_device(tmp_path, monkeypatch, reads_c):
    """The whole road on the CPU: routing, config, tensor maps, persistent launch, warm path, vs float64."""
    import numpy as np

    import tessera.ops as ops
    from tessera.compiler import testing
    from tessera.kernels import gemm as G
    from tessera.reference.oracles import error_bound, rel_error

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(4)
    M, N, K = 300, 264, 200
    a = rng.standard_normal((M, K)).astype(np.float16)
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float16)
    bias = rng.standard_normal(N).astype(np.float16)
    c = rng.standard_normal((M, N)).astype(np.float16)
    out = np.full((M, N), np.nan, np.float16)
    dest = FakeDeviceArray(out)
    kw = dict(c=dest, beta=0.5) if reads_c else {}  # in place: C = gelu(A @ W^T + 0.5 C + bias)
    with testing.emulate_on_host("sm_90") as host:
        for _ in range(2):  # the second call takes the warm path
            if reads_c:
                out[:] = c
            ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=True, bias=FakeDeviceArray(bias),
                     activation="gelu", out=dest, **kw)
            rec = ops.last_run()
            assert rec.arch == "sm_90a" and rec.config["schedule"] == ("cooperative" if reads_c else "pingpong")
            f = lambda x: x.astype(np.float64)  # noqa: E731
            ref = G.reference_gemm(f(a), f(w), f(c) if reads_c else None, f(bias), None, 1.0,
                                   0.5 if reads_c else None, trans_b=True, activation="gelu")
            assert rel_error(out.astype(np.float64), ref) <= error_bound("f16")
            out[:] = np.nan
    assert host.launches == 2


@pytest.mark.parametrize("pin", ["BM=128,BN=128,BK=64,stages=6,schedule=pingpong,cluster=2,splitk=1,multicast=b",
                                 "BM=128,BN=256,BK=64,stages=4,schedule=cooperative,cluster=2,splitk=1,multicast=b"])
def test_ops_gemm_runs_a_pinned_cluster_config_on_an_emulated_sm90_device(tmp_path, monkeypatch, pin):
    """2-CTA clusters and the TMA store epilogue through ops.gemm: the pin is honoured, named in last_run, and
    the cluster launch (an even persistent grid, both CTAs of a pair at once) matches float64; 300 rows are
    three 128-row tiles, so the second pair has a spare CTA."""
    import numpy as np

    import tessera.ops as ops
    from tessera.compiler import testing
    from tessera.kernels import gemm as G
    from tessera.reference.oracles import error_bound, rel_error
    from tessera.runtime import host_emulator

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TESSERA_PIN_GEMM_SM90A", pin)
    launched, launch = [], testing.HostKernel.launch  # the grid the runtime derives is the one the emulator runs
    monkeypatch.setattr(testing.HostKernel, "launch",
                        lambda self, grid, *a, **k: launched.append(tuple(grid)) or launch(self, grid, *a, **k))
    rng = np.random.default_rng(7)
    M, N, K = 300, 264, 200
    a = rng.standard_normal((M, K)).astype(np.float16)
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float16)
    bias = rng.standard_normal(N).astype(np.float16)
    out = np.full((M, N), np.nan, np.float16)
    with testing.emulate_on_host("sm_90"):
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=True, bias=FakeDeviceArray(bias),
                 activation="relu", out=FakeDeviceArray(out))
    rec = ops.last_run()
    assert rec.arch == "sm_90a" and rec.config["cluster"] == 2 and rec.config["config_source"] == "pinned"
    pairs = host_emulator.PERSISTENT_CLUSTERS  # 3 x 3 (or 3 x 2) tiles: both whole pairs busy
    assert launched == [(2 * pairs, 1, 1)]
    f = lambda x: x.astype(np.float64)  # noqa: E731
    ref = G.reference_gemm(f(a), f(w), None, f(bias), None, 1.0, None, trans_b=True, activation="relu")
    assert rel_error(out.astype(np.float64), ref) <= error_bound("f16")


@pytest.mark.parametrize("pin, M, N", [
    ("BM=128,BN=128,BK=64,stages=4,schedule=cooperative,cluster=1,splitk=3,multicast=b", 300, 200),
    ("BM=128,BN=64,BK=64,stages=4,schedule=pingpong,cluster=2,splitk=2,multicast=a", 300, 200),
    # stream-K: 2 x 2 tiles on the emulated device's 3 SMs, all streamed (tiles cut in two)
    ("BM=128,BN=128,BK=64,stages=6,schedule=pingpong,cluster=1,splitk=1,multicast=b,streamk=true", 200, 200),
    ("BM=128,BN=256,BK=64,stages=4,schedule=cooperative,cluster=1,splitk=1,multicast=b,streamk=true", 200, 264)])
def test_ops_gemm_splits_k_in_one_launch_and_its_scratch_is_ready_for_the_next(tmp_path, monkeypatch, pin, M, N):
    """Split-K (stream-K) through ops.gemm on the emulated device: the runtime supplies the scratch buffer (the
    caller passes nothing extra), each launch leaves its counters at zero, so a second launch on new data is
    right too, and both are bit-identical to a third on the first data (the pieces are added in order, whoever
    finishes last)."""
    import numpy as np

    import tessera.ops as ops
    from tessera.compiler import testing
    from tessera.kernels import gemm as G
    from tessera.reference.oracles import error_bound, rel_error

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TESSERA_PIN_GEMM_SM90A", pin)
    K = 1000  # ragged tiles; 16 K steps over 2 or 3 splits (pieces)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    outs = []
    with testing.emulate_on_host("sm_90") as host:
        for seed in (0, 1, 0):
            data = np.random.default_rng(seed)
            a = data.standard_normal((M, K)).astype(np.float16)
            w = (data.standard_normal((N, K)) / np.sqrt(K)).astype(np.float16)
            bias = data.standard_normal(N).astype(np.float16)
            out = np.full((M, N), np.nan, np.float16)
            ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=True, bias=FakeDeviceArray(bias),
                     activation="relu", out=FakeDeviceArray(out))
            rec = ops.last_run()
            assert rec.arch == "sm_90a" and rec.config["splitk"] == int(pin.split("splitk=")[1][0])
            assert rec.config["streamk"] == ("streamk=true" in pin)
            ref = G.reference_gemm(f(a), f(w), None, f(bias), None, 1.0, None, trans_b=True, activation="relu")
            assert rel_error(f(out), ref) <= error_bound("f16")
            outs.append(out)
    assert host.launches == 3
    assert np.array_equal(outs[0].view(np.uint16), outs[2].view(np.uint16))


def _decode_calls(tmp_path, monkeypatch, M: int, N: int, K: int, ta: bool = False, tb: bool = False):
    """Two decode calls' (rng, a, w) on an emulated sm_90 with a fresh cache, f16: a [M, K] ([K, M] with ta), w
    [K, N] ([N, K] with tb) scaled by 1/sqrt(K); new data each time, so the second call takes the warm path.
    Once both calls are done, checks that each launched once."""
    import numpy as np

    from tessera.compiler import testing

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    with testing.emulate_on_host("sm_90") as host:
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            a = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float16)
            w = (rng.standard_normal((N, K) if tb else (K, N)) / np.sqrt(K)).astype(np.float16)
            yield rng, a, w
    assert host.launches == 2


@pytest.mark.parametrize("M", [1, 16, 30, 64])
@pytest.mark.parametrize("ta, tb", [(False, True), (False, False), (True, True), (True, False)])
def test_decode_gemms_run_swapped_on_an_emulated_sm90_device(tmp_path, monkeypatch, M, ta, tb):
    """M <= 32 with nothing tuned or pinned (issue 16, item 2): ops.gemm computes C^T = op(b)^T op(a)^T with the
    wide operand in wgmma's 64 rows and C's M rows as a wgmma N of 16 or 32, writing C through its transposed
    view with register stores; M = 64 runs the unswapped 64 x 128 default (the H200's tuned winner there); every
    layout, ragged N and K, an activation, and the warm path (a second call with new data) against float64."""
    import numpy as np

    import tessera.ops as ops
    from tessera.kernels import gemm as G
    from tessera.reference.oracles import error_bound, rel_error

    if ta and M % 8:
        pytest.skip("a stored [K, M] with M % 8 != 0 has rows TMA cannot read: the sm_90 kernel runs it")
    N, K = 200, 264
    f = lambda x: x.astype(np.float64)  # noqa: E731
    for _, a, w in _decode_calls(tmp_path, monkeypatch, M, N, K, ta, tb):
        out = np.full((M, N), np.nan, np.float16)
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_a=ta, trans_b=tb, activation="silu",
                 out=FakeDeviceArray(out))
        rec = ops.last_run()
        untuned = H.untuned_config(M, N, K, layout=H.layout_of(ta, tb))  # tune_gemm's baseline is what ran untuned
        assert (rec.config["BM"], rec.config["BN"], rec.config["BK"], rec.config["stages"],
                rec.config.get("swap_ab", False)) == (untuned.BM, untuned.BN, untuned.BK, untuned.stages, untuned.swap)
        if M > H.SWAP_DEFAULT_M:
            tile = H.default_config(M, N, K, layout=H.layout_of(ta, tb))
            assert rec.arch == "sm_90a" and "swap_ab" not in rec.config
            assert (rec.config["BM"], rec.config["BN"], rec.config["BK"]) == (tile.BM, tile.BN, tile.BK)
            assert (rec.config["TRANS_A"], rec.config["TRANS_B"]) == (ta, tb)
        else:
            assert rec.arch == "sm_90a" and rec.config["swap_ab"] is True and rec.config["store"] == "registers"
            assert rec.config["BN"] == H.swap_config(M).BN
            assert (rec.config["TRANS_A"], rec.config["TRANS_B"]) == (not tb, not ta)
        ref = G.reference_gemm(f(a), f(w), None, None, None, 1.0, None, trans_a=ta, trans_b=tb, activation="silu")
        assert rel_error(f(out), ref) <= error_bound("f16")


@pytest.mark.parametrize("M, tb, epilogue", [(16, True, "c"), (32, False, "c_in_place"), (5, True, "residual")])
def test_decode_gemms_reading_c_or_a_residual_run_swapped(tmp_path, monkeypatch, M, tb, epilogue):
    """c (beta, into another out or in place) and a residual swap with the product: read through their
    transposed views as C^T is written, with a bias and a relu; a second call with new data takes the warm
    path. Ragged N and K, against float64."""
    import numpy as np

    import tessera.ops as ops
    from tessera.kernels import gemm as G
    from tessera.reference.oracles import error_bound, rel_error

    N, K = 200, 136
    f = lambda x: x.astype(np.float64)  # noqa: E731
    for rng, a, w in _decode_calls(tmp_path, monkeypatch, M, N, K, tb=tb):
        bias = rng.standard_normal(N).astype(np.float16)
        extra = rng.standard_normal((M, N)).astype(np.float16)
        out = extra.copy() if epilogue == "c_in_place" else np.full((M, N), np.nan, np.float16)
        O = FakeDeviceArray(out)
        if epilogue == "residual":
            ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=tb, bias=FakeDeviceArray(bias),
                     residual=FakeDeviceArray(extra), activation="relu", out=O)
            ref = G.reference_gemm(f(a), f(w), None, f(bias).reshape(1, N), f(extra), 1.0, None, trans_b=tb,
                                   activation="relu")
        else:
            C = O if epilogue == "c_in_place" else FakeDeviceArray(extra)
            ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), C, beta=0.5, trans_b=tb, bias=FakeDeviceArray(bias),
                     activation="relu", out=O)
            ref = G.reference_gemm(f(a), f(w), f(extra), f(bias).reshape(1, N), None, 1.0, 0.5, trans_b=tb,
                                   activation="relu")
        assert ops.last_run().config["swap_ab"] is True
        assert rel_error(f(out), ref) <= error_bound("f16")


@pytest.mark.parametrize("M, tb, rank", [(16, True, 1), (32, False, 2), (5, True, 2)])
def test_decode_gemms_with_a_bias_run_swapped_with_the_bias_along_the_rows(tmp_path, monkeypatch, M, tb, rank):
    """nn.Linear at decode (issue 16): a bias, [N] or [1, N], runs swapped as well, added along C^T's rows
    (kernels.gemm BIAS_AXIS="m": an [N, M] view of column stride 0), before a gelu; a second call with new data
    takes the warm path. Ragged N and K, against float64."""
    import numpy as np

    import tessera.ops as ops
    from tessera.kernels import gemm as G
    from tessera.reference.oracles import error_bound, rel_error

    N, K = 200, 136
    f = lambda x: x.astype(np.float64)  # noqa: E731
    for rng, a, w in _decode_calls(tmp_path, monkeypatch, M, N, K, tb=tb):
        bias = rng.standard_normal(N if rank == 1 else (1, N)).astype(np.float16)
        out = np.full((M, N), np.nan, np.float16)
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=tb, bias=FakeDeviceArray(bias), activation="gelu",
                 out=FakeDeviceArray(out))
        rec = ops.last_run()
        assert rec.config["swap_ab"] is True and rec.config["BIAS_AXIS"] == "m"
        ref = G.reference_gemm(f(a), f(w), None, f(bias).reshape(1, N), None, 1.0, None, trans_b=tb,
                               activation="gelu")
        assert rel_error(f(out), ref) <= error_bound("f16")


def test_decode_gemms_with_a_pin_stay_unswapped_and_with_a_bias_or_c_swap(tmp_path, monkeypatch):
    """A pinned (unswapped) config: the unswapped kernel, as before; a bias (a row of C^T) or c swaps."""
    import numpy as np

    import tessera.ops as ops
    from tessera.compiler import testing

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 128)).astype(np.float16)
    w = rng.standard_normal((256, 128)).astype(np.float16)
    out = FakeDeviceArray(np.zeros((16, 256), np.float16))
    with testing.emulate_on_host("sm_90"):
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=True, bias=FakeDeviceArray(np.ones(256, np.float16)),
                 out=out)
        assert ops.last_run().config["swap_ab"] is True and ops.last_run().config["BIAS_AXIS"] == "m"
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), out, beta=1.0, trans_b=True, out=out)
        assert ops.last_run().config["swap_ab"] is True
        monkeypatch.setenv("TESSERA_PIN_GEMM_SM90A", "BM=64,BN=128,BK=64,stages=8,schedule=cooperative,cluster=1,"
                                                     "splitk=1,multicast=b")
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=True, out=out)
        assert "swap_ab" not in ops.last_run().config and ops.last_run().config["config_source"] == "pinned"


def test_swapped_configs_are_candidates_only_where_a_product_can_swap():
    """The tuner measures the swapped decode configs (issue 16: a tuned decode ran unswapped, slower than the
    rule) for M <= 64 and N >= 128 only; a config dict says swap_ab: True, and round-trips."""
    swapped = [c for c in H.HOPPER_CANDIDATES if c.get("swap_ab")]
    assert [H.HopperConfig.from_config(c).as_dict() for c in swapped] == swapped
    assert {H.swap_config(m).as_dict()["BN"] for m in (1, 16, 32, 64)} == {c["BN"] for c in swapped}
    assert all(H.swap_config(m).as_dict() in swapped for m in (1, 16, 32, 64))
    assert all(c in H.candidates(16, 4096) for c in swapped)
    assert not any(c.get("swap_ab") for c in H.candidates(128, 4096) + H.candidates(16, 64))
    assert len(H.candidates(128, 4096)) == len(H.HOPPER_CANDIDATES) - len(swapped)
    with pytest.raises(TesseraError, match="OPS_AUTOTUNE_INPUT.*swap_ab='yes'"):
        H.HopperConfig.from_config({**swapped[0], "swap_ab": "yes"})


@pytest.mark.parametrize("config", [c for c in H.HOPPER_CANDIDATES if c.get("swap_ab")],
                         ids=lambda c: f"{c['BM']}x{c['BN']}-s{c['stages']}-k{c['splitk']}")
def test_every_swapped_candidate_runs_pinned_through_ops(tmp_path, monkeypatch, config):
    """Each swapped config the tuner may pick, pinned, as ops runs it: b and a swapped into C's transposed view,
    with a bias along C^T's rows; ragged N, a K of 3 steps of 128 (so 4 splits leave one empty), against float64."""
    import numpy as np

    import tessera.ops as ops
    from tessera.kernels import gemm as G
    from tessera.ops import autotune
    from tessera.reference.oracles import error_bound, rel_error

    autotune.pin(H.OP, config)
    try:
        M, N, K = 40, 328, 264
        f = lambda x: x.astype(np.float64)  # noqa: E731
        for rng, a, w in _decode_calls(tmp_path, monkeypatch, M, N, K, tb=True):
            bias = rng.standard_normal(N).astype(np.float16)
            out = np.full((M, N), np.nan, np.float16)
            ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=True, bias=FakeDeviceArray(bias),
                     out=FakeDeviceArray(out))
            rec = ops.last_run()
            assert rec.config["swap_ab"] is True and rec.config["config_source"] == "pinned"
            assert (rec.config["BM"], rec.config["BN"], rec.config["splitk"]) == (config["BM"], config["BN"],
                                                                                 config["splitk"])
            ref = G.reference_gemm(f(a), f(w), None, f(bias).reshape(1, N), None, 1.0, None, trans_b=True)
            assert rel_error(f(out), ref) <= error_bound("f16")
    finally:
        autotune.unpin(H.OP)


def test_a_tuned_swapped_decode_config_runs_swapped_and_gives_way_where_it_cannot(tmp_path, monkeypatch):
    """A cached swapped winner: ops.gemm runs it swapped (its own BN, from the cache), with a bias and with c too;
    where the product cannot swap (N < 128) the rule's unswapped config runs instead of the swapped tile
    unswapped. Against float64."""
    import numpy as np

    import tessera.ops as ops
    from tessera.compiler import testing
    from tessera.kernels import gemm as G
    from tessera.reference.oracles import error_bound, rel_error

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TESSERA_AUTOTUNE", raising=False)
    M, N, K = 16, 256, 192
    winner = next(c for c in H.HOPPER_CANDIDATES if c.get("swap_ab") and c["BN"] == 32)
    cands = H.candidates(M, N)
    autotune.tune(H.OP, H.tune_key(M, N, K, "f16"), cands, lambda c: 1e-3 if c == winner else 2e-3, progress=False)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float16)
    w = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float16)
    bias = rng.standard_normal(N).astype(np.float16)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    with testing.emulate_on_host("sm_90"):
        out = np.full((M, N), np.nan, np.float16)
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=True, out=FakeDeviceArray(out))
        rec = ops.last_run()
        assert rec.config["swap_ab"] is True and rec.config["config_source"] == "cache" and rec.config["BN"] == 32
        assert rel_error(f(out), G.reference_gemm(f(a), f(w), trans_b=True)) <= error_bound("f16")
        out = np.full((M, N), np.nan, np.float16)
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), trans_b=True, bias=FakeDeviceArray(bias),
                 out=FakeDeviceArray(out))
        rec = ops.last_run()
        assert rec.config["swap_ab"] is True and rec.config["config_source"] == "cache" and rec.config["BN"] == 32
        ref = G.reference_gemm(f(a), f(w), None, f(bias).reshape(1, N), trans_b=True)
        assert rel_error(f(out), ref) <= error_bound("f16")
        c = rng.standard_normal((M, N)).astype(np.float16)
        out = np.full((M, N), np.nan, np.float16)
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w), FakeDeviceArray(c), beta=0.5, trans_b=True,
                 out=FakeDeviceArray(out))
        rec = ops.last_run()
        assert rec.config["swap_ab"] is True and rec.config["config_source"] == "cache" and rec.config["BN"] == 32
        ref = G.reference_gemm(f(a), f(w), f(c), None, None, 1.0, 0.5, trans_b=True)
        assert rel_error(f(out), ref) <= error_bound("f16")
        narrow = np.full((M, 96), np.nan, np.float16)  # N = 96 < 128: the product cannot swap
        ops.gemm(FakeDeviceArray(a), FakeDeviceArray(w[:96].copy()), trans_b=True, out=FakeDeviceArray(narrow))
        rec = ops.last_run()
        assert "swap_ab" not in rec.config
        assert rel_error(f(narrow), G.reference_gemm(f(a), f(w[:96]), trans_b=True)) <= error_bound("f16")
