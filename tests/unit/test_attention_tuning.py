"""How ops.attention picks its sm_90a config (tessera.ops._hopper_attention), without a GPU: pin > cache > rule.

The tuning measurements themselves run on the GPU (tests/gpu/test_ops_hopper_gpu.py); here a fake
measure fills the cache through the same autotune.tune call under the key ops.attention looks up,
so "a cached winner is used" and "a pin beats the cache" are checked on the real lookup. Every
candidate's compile (HGMMA, no local memory) and emulator numerics are in test_attention_sm90a.py.
"""

from __future__ import annotations

import itertools

import pytest

from tessera.ir.diagnostics import TesseraError
from tessera.ops import _hopper_attention as HA
from tessera.ops import autotune
from tessera.ops.configs import AttentionConfig, attention_config

SHAPE = dict(B=4, H=16, H_kv=16, S_q=4096, S_k=4096, Dh=128, causal=False, dtype="bf16")


@pytest.fixture(autouse=True)
def clean(monkeypatch, tmp_path):
    """A private cache, no environment pin, no self-tuning, no pins left behind."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TESSERA_AUTOTUNE_QUIET", "1")
    for var in ("TESSERA_PIN_ATTENTION_SM90A", "TESSERA_AUTOTUNE"):
        monkeypatch.delenv(var, raising=False)
    yield
    autotune.unpin(HA.OP)


def choose(**changes):
    s = {**SHAPE, **changes}
    return HA.choose(s["B"], s["H"], s["H_kv"], s["S_q"], s["S_k"], s["Dh"], s["causal"], s["dtype"])


def key(**changes):
    s = {**SHAPE, **changes}
    return HA.tune_key(s["B"], s["H"], s["H_kv"], s["S_q"], s["S_k"], s["Dh"], s["causal"], s["dtype"])


def fill_cache(winner: dict, **changes) -> list:
    """Measure every candidate with a fake that makes `winner` fastest, through autotune.tune under the key."""
    calls = []

    def measure(config):
        calls.append(config)
        return 1e-4 if config == winner else 2e-4

    s = {**SHAPE, **changes}
    autotune.tune(HA.OP, key(**changes), HA.candidates(s["Dh"], s["causal"]), measure, progress=False)
    return calls


def test_every_default_is_a_candidate():
    """The rule's picks are among the configs the tuner measures (so each default is tested where they are)."""
    for d in (64, 128, 256):
        picks = {attention_config(rows, d, hopper=True, causal=c)
                 for rows, c in itertools.product((1, 16, 64, 65, 128, 129, 1024, 4096, 16384), (False, True))}
        assert picks <= {HA.config_of(c, Dh=d) for c in HA.candidates(d) + HA.candidates(d, True)}, d
        for c in (False, True):  # and each causal or not pick among that mode's candidates
            rule = {attention_config(rows, d, hopper=True, causal=c) for rows in (16, 4096)}
            assert rule <= {HA.config_of(x, Dh=d) for x in HA.candidates(d, c)}, (d, c)


def test_without_a_pin_or_cache_the_rule_decides():
    assert choose() == (attention_config(4096, 128, hopper=True), "default")
    assert choose(causal=True) == (attention_config(4096, 128, hopper=True, causal=True), "default")
    assert choose(S_q=1, H=32, H_kv=8)[0].BLOCK_M == 64  # decode: 4 query heads packed into 4 rows


def test_a_cached_winner_is_used_for_its_key_only():
    winner = {"BLOCK_M": 128, "BLOCK_N": 64, "stages": 4, "schedule": "cooperative", "tiles": "dynamic"}
    assert len(fill_cache(winner)) == len(HA.candidates(128))
    assert choose() == (AttentionConfig(128, 64, 4, "cooperative", tiles="dynamic"), "cache")
    assert choose(S_q=4000, S_k=3000) == (AttentionConfig(128, 64, 4, "cooperative", tiles="dynamic"),
                                          "cache")  # same buckets
    assert choose(causal=True)[1] == "default"
    assert choose(Dh=64)[1] == "default"
    assert choose(B=64)[1] == "default"  # another column count: another wave shape


def test_gqa_keys_by_the_packed_rows():
    """Non-causal GQA packs the group into rows (ops.attention's view), causal does not."""
    assert key(H=32, H_kv=8, S_q=1)["rows"] == 4 and key(H=32, H_kv=8, S_q=1)["columns"] == 32
    assert key(H=32, H_kv=8, S_q=1, causal=True)["rows"] == 1


def test_a_pin_beats_the_cache_and_the_environment_beats_a_pin(monkeypatch):
    fill_cache({"BLOCK_M": 128, "BLOCK_N": 64, "stages": 4, "schedule": "cooperative", "tiles": "dynamic"})
    autotune.pin(HA.OP, {"BLOCK_M": 64, "BLOCK_N": 128, "stages": 3, "schedule": "cooperative"}, D=128)
    assert choose() == (AttentionConfig(64, 128, 3, "cooperative"), "pinned")
    assert choose(Dh=64)[1] == "default"  # the pin names D=128
    monkeypatch.setenv("TESSERA_PIN_ATTENTION_SM90A", "BLOCK_M=128,BLOCK_N=128,stages=2,schedule=cooperative")
    assert choose() == (AttentionConfig(128, 128, 2, "cooperative"), "pinned")


def test_three_consumer_warpgroups_are_a_head_dim_64_candidate_only(monkeypatch):
    assert {"BLOCK_M": 192, "BLOCK_N": 128, "stages": 2, "schedule": "cooperative", "tiles": "dynamic"} in \
        HA.candidates(64)
    assert all(c["BLOCK_M"] != 192 for c in HA.candidates(128))
    assert all(c["schedule"] == "cooperative" for d in (64, 128) for c in HA.candidates(d, causal=True))
    fill_cache({"BLOCK_M": 192, "BLOCK_N": 128, "stages": 3, "schedule": "pingpong", "tiles": "dynamic"}, Dh=64)
    assert choose(Dh=64) == (AttentionConfig(192, 128, 3, "pingpong", tiles="dynamic"), "cache")
    monkeypatch.setenv("TESSERA_PIN_ATTENTION_SM90A", "BLOCK_M=192,BLOCK_N=128,stages=2,schedule=cooperative")
    assert choose(Dh=64) == (AttentionConfig(192, 128, 2, "cooperative"), "pinned")
    with pytest.raises(TesseraError) as err:  # spills at d = 128
        choose()
    assert err.value.code.name == "OPS_AUTOTUNE_PIN_INVALID" and "head dim 128" in str(err.value)


@pytest.mark.parametrize("pin, words", [
    ("BLOCK_M=96,BLOCK_N=128,stages=2,schedule=cooperative", "BLOCK_M=96"),
    ("BLOCK_M=128,BLOCK_N=128,stages=13,schedule=cooperative", "stages=13"),
    ("BLOCK_M=128,BLOCK_N=128,stages=2,schedule=zigzag", "schedule='zigzag'"),
    ("BLOCK_M=64,BLOCK_N=128,stages=2,schedule=pingpong", "one consumer warpgroup"),
    ("BLOCK_M=128,BLOCK_N=128,stages=2", "names BLOCK_M, BLOCK_N, stages"),
    ("BLOCK_M=128,BLOCK_N=128,stages=2,schedule=pingpong,warps=8", "names BLOCK_M, BLOCK_N, schedule, stages, warps"),
])
def test_a_bad_pin_is_a_coded_error(monkeypatch, pin, words):
    monkeypatch.setenv("TESSERA_PIN_ATTENTION_SM90A", pin)
    with pytest.raises(TesseraError) as err:
        choose()
    assert err.value.code.name == "OPS_AUTOTUNE_PIN_INVALID" and words in str(err.value), str(err.value)
    assert err.value.hint


@pytest.mark.parametrize("kwargs, words", [
    (dict(B=0), "B=0"), (dict(H=6, H_kv=4), "not a multiple"), (dict(Dh=96), "D=96"), (dict(dtype="f32"), "f32"),
])
def test_tune_attention_checks_its_arguments_before_touching_a_gpu(kwargs, words):
    s = {**SHAPE, **kwargs}
    with pytest.raises(TesseraError) as err:
        HA.tune_attention(s["B"], s["H"], s["S_q"], s["S_k"], s["Dh"], H_kv=s["H_kv"], causal=s["causal"],
                          dtype=s["dtype"])
    assert err.value.code.name == "OPS_AUTOTUNE_INPUT" and words in str(err.value), str(err.value)


def test_dynamic_tiles_take_every_multi_consumer_candidate_and_pins_name_either(monkeypatch):
    """Dynamic tiles balance tiles of unequal cost (causal) and cost nothing on equal ones, so every candidate with
    two or more consumers takes them; one-consumer (decode) configs, about a tile per SM, stay static unless they
    split the keys (2-4 programs per tile; causal d = 256 takes one consumer for registers and many tiles, but
    for its decode pick, the rule's static one). A pin
    may name either, or leave tiles out (static); anything else is a coded pin error."""
    decode_256 = {"BLOCK_M": 64, "BLOCK_N": 64, "stages": 2, "schedule": "cooperative"}
    for d in (64, 128, 256):
        for c in HA.candidates(d) + HA.candidates(d, True):
            causal_256 = d == 256 and c in HA.CANDIDATES_D256_CAUSAL and c != decode_256
            many = c["BLOCK_M"] > 64 or c.get("kv_splits", 1) > 1 or causal_256
            assert c.get("tiles", "static") == ("dynamic" if many else "static"), c
    monkeypatch.setenv("TESSERA_PIN_ATTENTION_SM90A", "BLOCK_M=128,BLOCK_N=128,stages=2,schedule=cooperative,tiles=static")
    assert choose() == (AttentionConfig(128, 128, 2, "cooperative", tiles="static"), "pinned")
    monkeypatch.setenv("TESSERA_PIN_ATTENTION_SM90A", "BLOCK_M=128,BLOCK_N=128,stages=2,schedule=cooperative,tiles=greedy")
    with pytest.raises(TesseraError) as err:
        choose()
    assert err.value.code.name == "OPS_AUTOTUNE_PIN_INVALID" and "tiles='greedy'" in str(err.value)
