"""The launch-shape record (issue 14): one frozen, validated value carries the pipeline knobs from the caller,
the ops and the autotuner's configs to the named pipeline's options and the compile cache key."""

from __future__ import annotations

from dataclasses import fields

import pytest

import tessera
from tessera.compiler.driver import compile_cached, default_pipeline
from tessera.compiler.launch_shape import LaunchShape
from tessera.ir import diagnostics as D
from tessera.kernels import gemm as G
from tessera.ops._hopper import HOPPER_CANDIDATES, HopperConfig
from tessera.passes import parse_pipeline


@pytest.mark.parametrize("knobs, needle", [
    (dict(stages=0), "stages=0"), (dict(stages=13), "stages=13"), (dict(stages=2.0), "stages=2.0"),
    (dict(schedule="spin"), "schedule='spin'"), (dict(cluster=3), "cluster=3"), (dict(cluster=True), "cluster=True"),
    (dict(splitk=17), "splitk=17"), (dict(multicast="c", cluster=2), "multicast='c'"),
    (dict(multicast="a"), "with cluster=1"), (dict(multicast="k"), "with cluster=1"), (dict(streamk=1), "streamk=1"),
    (dict(multicast="k", cluster=2, splitk=2), "multicast='k' with splitk=2"),
    (dict(multicast="k", cluster=2, streamk=True), "multicast='k' with streamk=True"),
    (dict(streamk=True, splitk=2), "streamk with splitk=2"), (dict(warps=4), "warps=4 must be two positive"),
    (dict(warps=(2,)), "warps=(2,)"), (dict(warps=(0, 4)), "warps=(0, 4)"), (dict(warps=(64, 1)), "1024 threads"),
    (dict(threads=4), "unknown launch-shape knob(s) threads"), (dict(store="regs"), "store='regs'"),
])
def test_a_bad_knob_or_combination_is_refused_on_construction(knobs, needle):
    with pytest.raises(D.TesseraError) as err:
        LaunchShape.of(knobs)
    assert err.value.code is D.COMPILE_LAUNCH_SHAPE_INVALID and needle in str(err.value) and err.value.hint


def test_the_default_shape_is_compiles_default_and_names_only_stages_and_schedule():
    assert LaunchShape() == LaunchShape.of({}) and LaunchShape().stages == 1
    assert default_pipeline("sm_90a") == "tessera-lower-to-nv{arch=sm_90a stages=1 schedule=cooperative}"
    text = LaunchShape(4, "pingpong", 2, 1, "a", False).pipeline("sm_90a")
    assert text == "tessera-lower-to-nv{arch=sm_90a stages=4 schedule=pingpong cluster=2 multicast=a}"
    text = LaunchShape(8, cluster=2, multicast="k").pipeline("sm_90a")  # K split inside the cluster
    assert text == "tessera-lower-to-nv{arch=sm_90a stages=8 schedule=cooperative cluster=2 multicast=k}"


@pytest.mark.parametrize("cfg", HOPPER_CANDIDATES, ids=lambda c: "-".join(map(str, c.values())))
def test_every_candidate_is_a_valid_shape_whose_pipeline_parses(cfg):
    shape = LaunchShape.from_config(cfg)
    hopper = HopperConfig.from_config(cfg)
    assert hopper.shape == shape and hopper.meta() == {k: cfg[k] for k in ("BM", "BN", "BK")}
    assert list(hopper.as_dict().items()) == list(cfg.items())  # the dict format (and order) of pins and entries
    parse_pipeline(shape.pipeline("sm_90a"))  # every knob reaches a pass option the pipeline knows
    for f in fields(LaunchShape):
        if f.name in cfg:
            assert getattr(shape, f.name) == cfg[f.name]


def test_a_hopper_config_is_its_tile_and_a_shape_from_one_dict():
    """HopperConfig.from_config splits the tile from the knobs: a key that is neither is LaunchShape's coded error;
    the knobs read through; as_dict names streamk only where it is on (pins written before it stay valid)."""
    cfg = HopperConfig.from_config({"BM": 128, "BN": 128, "BK": 64, "stages": 6, "schedule": "pingpong",
                                    "cluster": 1, "splitk": 2, "multicast": "b"}, "pinned")
    assert (cfg.BM, cfg.stages, cfg.schedule, cfg.splitk, cfg.streamk, cfg.source) == (128, 6, "pingpong", 2, False,
                                                                                        "pinned")
    assert "streamk" not in cfg.as_dict()
    assert HopperConfig(128, 256, 64, LaunchShape(4, streamk=True)).as_dict()["streamk"] is True
    assert cfg.warps is None  # a knob at its default reads through too
    with pytest.raises(AttributeError):
        cfg.threads
    for bad, code in (({**cfg.as_dict(), "warps": 4}, D.COMPILE_LAUNCH_SHAPE_INVALID),
                      ({**cfg.as_dict(), "splitk": 0}, D.COMPILE_LAUNCH_SHAPE_INVALID),
                      ({"BM": 128, "BN": 128, "stages": 4}, D.OPS_AUTOTUNE_INPUT)):
        with pytest.raises(D.TesseraError) as err:
            HopperConfig.from_config(bad)
        assert err.value.code is code


def test_every_knob_reaches_the_pipeline_text_hence_the_cache_key():
    """Two shapes that differ in any one knob give different pipeline texts (the cache key holds the text)."""
    base = LaunchShape(stages=2, cluster=2)
    others = [LaunchShape(stages=3, cluster=2), LaunchShape(2, "pingpong", 2), LaunchShape(stages=2),
              LaunchShape(stages=2, cluster=2, splitk=2), LaunchShape(stages=2, cluster=2, multicast="a"),
              LaunchShape(stages=2, cluster=2, streamk=True), LaunchShape(stages=2, cluster=2, overlap=False),
              LaunchShape(stages=2, cluster=2, warps=(4, 2)), LaunchShape(stages=2, cluster=2, store="registers"),
              LaunchShape(stages=2, tiles="dynamic"),  # (not with a cluster; differs from stages=2 alone)
              LaunchShape(stages=2, splitk=2, fixup="scatter")]  # (cluster 1; differs from splitk=2 alone)
    texts = {s.pipeline("sm_90a") for s in [base, *others]}
    assert len(texts) == 1 + len(others) == len(fields(LaunchShape)) + 1


def test_compile_takes_a_shape_or_knobs_but_not_both_nor_with_a_pipeline():
    traced = G.gemm.trace(tessera.tensor(("M", "K"), "f32"), tessera.tensor(("K", "N"), "f32"),
                          tessera.tensor(("M", "N"), "f32"), None, None, tessera.scalar("f32"), None, BM=32, BN=32,
                          BK=16)
    for call in (dict(shape=LaunchShape(), stages=2), dict(shape={"stages": 2}),
                 dict(stages=2, pipeline="tessera-lower-to-nv{arch=sm_80}")):
        with pytest.raises(D.TesseraError) as err:
            tessera.compile(traced, "sm_80", **call)
        assert err.value.code is D.COMPILE_LAUNCH_SHAPE_INVALID
    with pytest.raises(D.TesseraError) as err:
        tessera.compile(traced, "sm_80", stages=0)
    assert err.value.code is D.COMPILE_LAUNCH_SHAPE_INVALID


def test_compile_cached_memoises_on_the_shape_not_on_how_it_was_spelled():
    specs = (tessera.tensor(("M", "K"), "f32"), tessera.tensor(("K", "N"), "f32"), tessera.tensor(("M", "N"), "f32"),
             None, None, tessera.scalar("f32"), None)
    meta = dict(BM=32, BN=32, BK=16)
    a = compile_cached(G.gemm, specs, meta, arch="sm_80", stages=2)
    assert compile_cached(G.gemm, specs, meta, arch="sm_80", shape=LaunchShape(stages=2)) is a
    assert compile_cached(G.gemm, specs, meta, arch="sm_80", stages=1) is not a
