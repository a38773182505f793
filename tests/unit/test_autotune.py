"""tessera.ops.autotune with fake measure functions (no GPU): choice, disk cache, failures, pins, progress.

Each fake counts its calls, so "returned from the cache without measuring"
and "a pin wins over measurement" are checked by the count, not assumed.
"""

from __future__ import annotations

import json
import math

import pytest

from tessera.ir.diagnostics import TesseraError
from tessera.ops import autotune as A

CANDIDATES = [{"BM": 128, "BN": 256, "BK": 64, "stages": 4}, {"BM": 128, "BN": 128, "BK": 64, "stages": 4},
              {"BM": 64, "BN": 256, "BK": 64, "stages": 3}]
KEY = {"M": 8192, "N": 8192, "K": 8192, "dtype": "bf16", "arch": "sm_90a", "toolchain": "tessera 0.1.0 nvrtc 13.0"}


class Fake:
    """measure(config): seconds from a table keyed by BN*BM*stages, or the table's exception."""

    def __init__(self, table: dict):
        self.table, self.calls = table, []

    def __call__(self, config):
        self.calls.append(config)
        found = self.table[(config["BM"], config["BN"], config["stages"])]
        if isinstance(found, BaseException):
            raise found
        return found


def fast_second():
    return Fake({(128, 256, 4): 4.1e-4, (128, 128, 4): 3.9e-4, (64, 256, 3): 5.0e-4})


@pytest.fixture(autouse=True)
def clean(monkeypatch, tmp_path):
    """A private cache directory, no environment pin, no quiet flag, no pins left behind."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("TESSERA_PIN_GEMM", "TESSERA_AUTOTUNE_QUIET"):
        monkeypatch.delenv(var, raising=False)
    yield
    A.unpin("gemm")
    A.unpin("flash-attn")


def cache_file(tmp_path):
    return tmp_path / "cache" / "autotune.json"


def code_of(excinfo) -> str:
    return excinfo.value.code.name


# --- choosing ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, want", [(0, 1), (1, 1), (2, 2), (3, 4), (1000, 1024), (4000, 4096), (4096, 4096),
                                     (4097, 8192), (16384, 16384)])
def test_shape_bucket_is_the_next_power_of_two(n, want):
    assert A.shape_bucket(n) == want


@pytest.mark.parametrize("bad", [-1, 3.5, "8", True, None])
def test_shape_bucket_rejects_what_is_not_a_size(bad):
    with pytest.raises(TesseraError) as err:
        A.shape_bucket(bad)
    assert code_of(err) == "OPS_AUTOTUNE_INPUT"


@pytest.mark.parametrize("n, want", [(0, 256), (1, 1), (6, 2), (4000, 32), (4096, 256), (3840, 256), (128, 128),
                                     (16384, 256), (4001, 1)])
def test_alignment_is_the_largest_power_of_two_up_to_256_dividing_n(n, want):
    """4000 and 4096 share a bucket but not an alignment: tiles fit them differently."""
    assert A.alignment(n) == want


@pytest.mark.parametrize("bad", [-1, 3.5, "8", True, None])
def test_alignment_rejects_what_is_not_a_size(bad):
    with pytest.raises(TesseraError) as err:
        A.alignment(bad)
    assert code_of(err) == "OPS_AUTOTUNE_INPUT"


def test_the_fastest_candidate_wins_and_every_timing_is_recorded():
    fake = fast_second()
    res = A.tune("gemm", KEY, CANDIDATES, fake, progress=False)
    assert (res.config, res.source, res.seconds) == (CANDIDATES[1], "measured", 3.9e-4)
    assert [t.config for t in res.timings] == CANDIDATES and [t.seconds for t in res.timings] == [4.1e-4, 3.9e-4, 5e-4]
    assert fake.calls == CANDIDATES and res.measured_at


def test_a_failing_candidate_is_recorded_with_its_error_and_never_chosen():
    # the failing candidate is listed first and would be "fastest" if its error were read as 0 s
    fake = Fake({(128, 256, 4): RuntimeError("ptxas: 88 bytes spill stores"), (128, 128, 4): 3.9e-4,
                 (64, 256, 3): float("nan")})
    res = A.tune("gemm", KEY, CANDIDATES, fake, progress=False)
    assert res.config == CANDIDATES[1]
    spill, ok, nan = res.timings
    assert spill.seconds is None and "RuntimeError: ptxas: 88 bytes spill stores" in spill.error
    assert nan.seconds is None and "not a positive finite number" in nan.error and ok.error is None


def test_all_candidates_failing_is_a_coded_error_listing_each_and_caches_nothing(tmp_path):
    fake = Fake({(128, 256, 4): RuntimeError("launch failed: too many resources"),
                 (128, 128, 4): ValueError("NV_LOWER_UNSUPPORTED: wgmma B from registers"), (64, 256, 3): -1.0})
    with pytest.raises(TesseraError) as err:
        A.tune("gemm", KEY, CANDIDATES, fake, progress=False)
    assert code_of(err) == "OPS_AUTOTUNE_FAILED"
    text = str(err.value)
    for needle in ("too many resources", "NV_LOWER_UNSUPPORTED", "returned -1.0", "[1] BM=128 BN=256", "[3] BM=64"):
        assert needle in text
    assert "test_autotune.py" in text.splitlines()[0]  # located at the caller's line
    assert [t.error for t in err.value.trials][:2] == ["RuntimeError: launch failed: too many resources",
                                                       "ValueError: NV_LOWER_UNSUPPORTED: wgmma B from registers"]
    assert not cache_file(tmp_path).exists()


@pytest.mark.parametrize("args, what", [
    (("", KEY, CANDIDATES), "op"), (("gemm", [1], CANDIDATES), "key"), (("gemm", KEY, []), "candidates"),
    (("gemm", KEY, [{"BM": [128]}]), "candidate 1"), (("gemm", {"M": float("inf")}, CANDIDATES), "key")])
def test_malformed_arguments_are_coded_errors(args, what):
    with pytest.raises(TesseraError) as err:
        A.tune(*args, fast_second(), progress=False)
    assert code_of(err) == "OPS_AUTOTUNE_INPUT" and what in err.value.message


def test_a_cache_argument_of_another_kind_is_a_coded_error():
    with pytest.raises(TesseraError) as err:
        A.tune("gemm", KEY, CANDIDATES, fast_second(), cache=3, progress=False)
    assert code_of(err) == "OPS_AUTOTUNE_INPUT" and "cache=3" in err.value.message


def test_a_measure_that_is_not_callable_is_a_coded_error():
    with pytest.raises(TesseraError) as err:
        A.tune("gemm", KEY, CANDIDATES, 0.5, progress=False)
    assert code_of(err) == "OPS_AUTOTUNE_INPUT" and "callable" in err.value.message


# --- finalists timed again (the winner's curse) -----------------------------------------------------------

class Sequence:
    """measure(config): the next of that config's times (an exception in the list is raised), and every call kept."""

    def __init__(self, table: dict):
        self.table, self.calls = {k: list(v) for k, v in table.items()}, []

    def __call__(self, config):
        self.calls.append(config)
        found = self.table[(config["BM"], config["BN"], config["stages"])].pop(0)
        if isinstance(found, BaseException):
            raise found
        return found


BIG, MID, SMALL = ((c["BM"], c["BN"], c["stages"]) for c in CANDIDATES)


def test_a_lucky_first_time_loses_to_the_steadier_median():
    # BIG's first time is the least by luck; timed again three times it is the slowest
    fake = Sequence({BIG: [1.0e-4, 3e-4, 3e-4, 3e-4], MID: [2e-4, 2e-4, 2.1e-4, 1.9e-4], SMALL: [5e-4]})
    res = A.tune("gemm", KEY, CANDIDATES, fake, progress=False, finalists=2, rounds=3)
    assert res.config == CANDIDATES[1] and res.seconds == 2e-4 and res.source == "measured"
    # the first pass, then three rounds over the two finalists, each round starting at the next one
    assert fake.calls == CANDIDATES + [CANDIDATES[0], CANDIDATES[1], CANDIDATES[1], CANDIDATES[0], CANDIDATES[0],
                                       CANDIDATES[1]]
    assert [t.config for t in res.confirmations] == fake.calls[3:] and len(res.timings) == 3


def test_the_baseline_is_timed_again_and_kept_unless_beaten_by_the_margin():
    steady = {BIG: [1e-4] * 4, MID: [2e-4] * 4}
    # SMALL (the baseline) is slowest at first, so not a finalist, but it runs in the rounds
    close = Sequence({**steady, SMALL: [5e-4] + [1.005e-4] * 3})
    res = A.tune("gemm", KEY, CANDIDATES, close, progress=False, finalists=1, rounds=3, baseline=CANDIDATES[2])
    assert res.config == CANDIDATES[2] and res.seconds == 1.005e-4  # within 1% of BIG: the baseline stays
    assert sorted(map(str, close.calls[3:])) == sorted(map(str, [CANDIDATES[0], CANDIDATES[2]] * 3))
    beaten = Sequence({**steady, SMALL: [5e-4] + [1.02e-4] * 3})
    res = A.tune("gemm", KEY, CANDIDATES, beaten, cache=False, progress=False, finalists=1, rounds=3,
                 baseline=CANDIDATES[2])
    assert res.config == CANDIDATES[0] and res.seconds == 1e-4


def test_a_finalist_failing_when_timed_again_is_dropped_and_all_failing_is_a_coded_error(tmp_path):
    flaky = Sequence({BIG: [1e-4, RuntimeError("illegal address")], MID: [2e-4] * 4, SMALL: [5e-4]})
    res = A.tune("gemm", KEY, CANDIDATES, flaky, progress=False, finalists=2, rounds=3)
    assert res.config == CANDIDATES[1]
    assert [t.error is not None for t in res.confirmations].count(True) == 1  # BIG is not timed again after it
    assert len(res.confirmations) == 4
    broken = Sequence({BIG: [1e-4, RuntimeError("illegal address")], MID: [2e-4, ValueError("wrong result")],
                       SMALL: [5e-4]})
    with pytest.raises(TesseraError) as err:
        A.tune("gemm", {**KEY, "K": 1024}, CANDIDATES, broken, progress=False, finalists=2, rounds=1)
    assert code_of(err) == "OPS_AUTOTUNE_FAILED" and "illegal address" in err.value.message
    assert "wrong result" in err.value.message and len(err.value.trials) == 5
    assert len(json.loads(cache_file(tmp_path).read_text())["entries"]) == 1  # only the first key's


def test_one_finalist_and_no_baseline_times_nothing_again():
    fake = Sequence({BIG: [1e-4], MID: [2e-4], SMALL: [5e-4]})
    res = A.tune("gemm", KEY, CANDIDATES, fake, progress=False, finalists=1, rounds=3)
    assert res.config == CANDIDATES[0] and fake.calls == CANDIDATES and res.confirmations == ()


def test_confirmations_are_cached_with_the_winner(tmp_path):
    fake = Sequence({BIG: [1.0e-4, 3e-4, 3e-4, 3e-4], MID: [2e-4] * 4, SMALL: [5e-4]})
    first = A.tune("gemm", KEY, CANDIDATES, fake, progress=False, finalists=2, rounds=3)
    again = Sequence({})
    second = A.tune("gemm", KEY, CANDIDATES, again, progress=False, finalists=2, rounds=3)
    assert again.calls == [] and second.source == "cache" and second.config == CANDIDATES[1]
    assert second.confirmations == first.confirmations and second.seconds == 2e-4
    assert A.lookup("gemm", KEY, CANDIDATES).confirmations == first.confirmations
    (entry,) = json.loads(cache_file(tmp_path).read_text())["entries"].values()
    assert entry["winner"] == CANDIDATES[1] and len(entry["confirmations"]) == 6


def test_the_values_the_ops_tuners_pass_time_the_finalists_and_the_baseline():
    """tessera.ops' tuners pass FINALISTS, ROUNDS and their untuned default: every finalist and the baseline run
    ROUNDS more times."""
    many = [{"BM": 64 * i, "BN": 64, "BK": 64, "stages": 1} for i in range(1, 7)]
    times = {(c["BM"], c["BN"], c["stages"]): [1e-4 * (1 + i / 10)] * (1 + A.ROUNDS) for i, c in enumerate(many)}
    fake = Sequence(times)
    res = A.tune("gemm", KEY, many, fake, cache=False, progress=False, finalists=A.FINALISTS, rounds=A.ROUNDS,
                 baseline=many[-1])
    again = fake.calls[len(many):]
    assert len(again) == (A.FINALISTS + 1) * A.ROUNDS and {str(c) for c in again} == {str(c) for c in
                                                                                       many[:A.FINALISTS] + many[-1:]}
    assert res.config == many[0]


@pytest.mark.parametrize("kwargs, what", [({"finalists": 0}, "finalists=0"), ({"rounds": -1}, "rounds=-1"),
                                          ({"finalists": True}, "finalists=True"), ({"rounds": 1.5}, "rounds=1.5"),
                                          ({"baseline": {"BM": 1}}, "is not one of the candidates")])
def test_bad_confirmation_arguments_are_coded_errors(kwargs, what):
    fake = fast_second()
    with pytest.raises(TesseraError) as err:
        A.tune("gemm", KEY, CANDIDATES, fake, progress=False, **kwargs)
    assert code_of(err) == "OPS_AUTOTUNE_INPUT" and what in err.value.message and fake.calls == []


# --- the disk cache ----------------------------------------------------------------------------------------

def test_a_second_call_returns_the_cached_winner_without_measuring(tmp_path):
    first = A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False)
    again = fast_second()
    second = A.tune("gemm", dict(reversed(KEY.items())), CANDIDATES, again, progress=False)  # key order is irrelevant
    assert again.calls == [] and second.source == "cache"
    assert (second.config, second.seconds, second.measured_at) == (first.config, first.seconds, first.measured_at)
    assert list(second.config) == list(CANDIDATES[1])  # the caller's parameter order, not the file's
    assert second.timings == first.timings
    data = json.loads(cache_file(tmp_path).read_text())
    (entry,) = data["entries"].values()
    assert entry["winner"] == CANDIDATES[1] and entry["key"] == KEY and len(entry["timings"]) == 3
    assert entry["measured_at"] == first.measured_at and entry["tessera"]
    assert [p.name for p in cache_file(tmp_path).parent.iterdir()] == ["autotune.json"]  # no temp file left


@pytest.mark.parametrize("change", [{"dtype": "f16"}, {"toolchain": "tessera 0.1.0 nvrtc 13.1"}, {"K": 1024}])
def test_another_key_is_measured_and_kept_beside_the_first(tmp_path, change):
    A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False)
    other = fast_second()
    res = A.tune("gemm", {**KEY, **change}, CANDIDATES, other, progress=False)
    assert res.source == "measured" and len(other.calls) == 3
    assert len(json.loads(cache_file(tmp_path).read_text())["entries"]) == 2


def test_a_changed_candidate_list_is_measured_again():
    A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False)
    fake = fast_second()
    res = A.tune("gemm", KEY, CANDIDATES[:2], fake, progress=False)
    assert res.source == "measured" and fake.calls == CANDIDATES[:2]


def test_cache_false_true_and_an_explicit_file(tmp_path):
    A.tune("gemm", KEY, CANDIDATES, fast_second(), cache=False, progress=False)
    assert not cache_file(tmp_path).exists()
    A.tune("gemm", {**KEY, "M": 1}, CANDIDATES, fast_second(), cache=True, progress=False)
    assert len(json.loads(cache_file(tmp_path).read_text())["entries"]) == 1
    path = tmp_path / "elsewhere" / "tune.json"
    A.tune("gemm", KEY, CANDIDATES, fast_second(), cache=path, progress=False)
    fake = fast_second()
    assert A.tune("gemm", KEY, CANDIDATES, fake, cache=A.TuneCache(path), progress=False).source == "cache"
    assert fake.calls == [] and len(json.loads(cache_file(tmp_path).read_text())["entries"]) == 1  # untouched


@pytest.mark.parametrize("content", ["{not json", '{"format": "other", "entries": {}}', "[1, 2]", "\udcff"])
def test_a_corrupt_cache_file_is_a_warning_then_measured_and_rewritten(tmp_path, content):
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    fake = fast_second()
    with pytest.warns(RuntimeWarning, match="OPS_AUTOTUNE_CACHE_CORRUPT"):
        res = A.tune("gemm", KEY, CANDIDATES, fake, progress=False)
    assert res.source == "measured" and len(fake.calls) == 3
    assert json.loads(path.read_text())["format"] == A.FORMAT  # rewritten whole
    assert A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False).source == "cache"


def test_a_malformed_entry_is_a_warning_and_measured_again(tmp_path):
    A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False)
    path = cache_file(tmp_path)
    data = json.loads(path.read_text())
    (name,) = data["entries"]
    data["entries"][name]["timings"] = [{"config": {}, "bogus": 1}]
    path.write_text(json.dumps(data))
    fake = fast_second()
    with pytest.warns(RuntimeWarning, match="OPS_AUTOTUNE_CACHE_CORRUPT.*malformed entry"):
        res = A.tune("gemm", KEY, CANDIDATES, fake, progress=False)
    assert res.source == "measured" and len(fake.calls) == 3


def test_an_unwritable_cache_is_a_warning_and_the_result_still_comes_back(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise PermissionError(13, "read-only file system")
    monkeypatch.setattr(A.os, "replace", refuse)
    with pytest.warns(RuntimeWarning, match="cannot write"):
        res = A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False)
    assert res.config == CANDIDATES[1]
    assert list(cache_file(tmp_path).parent.iterdir()) == []  # the temp file was removed


# --- pins ---------------------------------------------------------------------------------------------------

def test_a_pin_wins_over_the_cache_and_measurement():
    A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False)  # caches CANDIDATES[1]
    A.pin("gemm", CANDIDATES[2], dtype="bf16")
    fake = fast_second()
    res = A.tune("gemm", KEY, CANDIDATES, fake, progress=False)
    assert (res.config, res.source, fake.calls) == (CANDIDATES[2], "pinned", [])
    assert "dtype='bf16'" in res.pinned_by
    assert A.tune("gemm", {**KEY, "dtype": "f16"}, CANDIDATES, fake, progress=False).source == "measured"
    A.unpin("gemm")
    assert A.tune("gemm", KEY, CANDIDATES, fake, progress=False).source == "cache"


def test_the_most_specific_pin_wins_then_the_latest():
    A.pin("gemm", CANDIDATES[0])
    A.pin("gemm", CANDIDATES[2], dtype="bf16", arch="sm_90a")
    A.pin("gemm", CANDIDATES[1], dtype="bf16")
    assert A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False).config == CANDIDATES[2]
    assert A.tune("gemm", {**KEY, "arch": "sm_90"}, CANDIDATES, fast_second(), progress=False).config == CANDIDATES[1]
    A.pin("gemm", CANDIDATES[0], dtype="bf16")
    assert A.tune("gemm", {**KEY, "arch": "sm_90"}, CANDIDATES, fast_second(), progress=False).config == CANDIDATES[0]


def test_the_environment_pin_wins_over_pin_for_every_key(monkeypatch):
    A.pin("gemm", CANDIDATES[1], dtype="bf16")
    monkeypatch.setenv("TESSERA_PIN_GEMM", " BM=64, BN=256,BK=64,stages=3 ")
    for key in (KEY, {**KEY, "dtype": "f16", "M": 128}):
        res = A.tune("gemm", key, CANDIDATES, fast_second(), progress=False)
        assert (res.config, res.source) == (CANDIDATES[2], "pinned") and "TESSERA_PIN_GEMM" in res.pinned_by


def test_env_pin_names_and_values():
    assert A.pin_env_var("flash-attn") == "TESSERA_PIN_FLASH_ATTN"
    assert A.parse_pin("BM=128,scale=0.5,ACTIVATION=gelu,SWIZZLE=true") == \
        {"BM": 128, "scale": 0.5, "ACTIVATION": "gelu", "SWIZZLE": True}


@pytest.mark.parametrize("text, problem", [("BM", "has no '='"), ("BM=", "has no value"), ("=128", "has no name"),
                                           ("BM=128,,BN=256", "item 2"), ("BM=128,BM=64", "repeats BM"),
                                           ("1BM=128", "not an identifier"), ("BM=128,", "is empty")])
def test_a_malformed_env_pin_is_a_coded_error_showing_the_format(monkeypatch, text, problem):
    monkeypatch.setenv("TESSERA_PIN_GEMM", text)
    fake = fast_second()
    with pytest.raises(TesseraError) as err:
        A.tune("gemm", KEY, CANDIDATES, fake, progress=False)
    assert code_of(err) == "OPS_AUTOTUNE_PIN_INVALID" and problem in err.value.message and fake.calls == []
    assert "TESSERA_PIN_GEMM=BM=128,BN=256,BK=64,stages=4" in err.value.hint


@pytest.mark.parametrize("how", ["env", "code"])
def test_a_pin_naming_parameters_no_candidate_has_is_refused(monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("TESSERA_PIN_GEMM", "BMM=128,BN=256,BK=64,stages=4")
    else:
        A.pin("gemm", {"BM": 128, "BN": 256})
    with pytest.raises(TesseraError) as err:
        A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False)
    assert code_of(err) == "OPS_AUTOTUNE_PIN_INVALID" and "BK, BM, BN, stages" in err.value.message


@pytest.mark.parametrize("config, subset", [({}, {}), ({"BM": (128,)}, {}), ({"BM": 128}, {"dtype": ["bf16"]})])
def test_pin_rejects_malformed_configs(config, subset):
    with pytest.raises(TesseraError) as err:
        A.pin("gemm", config, **subset)
    assert code_of(err) == "OPS_AUTOTUNE_PIN_INVALID"


# --- progress -----------------------------------------------------------------------------------------------

def test_progress_prints_one_line_per_candidate_to_stderr(capsys):
    fake = Fake({(128, 256, 4): 4.12e-4, (128, 128, 4): RuntimeError("CODEGEN_COMPILE_FAILED: ptxas\nlog"),
                 (64, 256, 3): 3.0e-4})
    A.tune("gemm", KEY, CANDIDATES, fake)
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 4
    assert lines[0] == ("autotune gemm bf16 sm_90a 8192x8192x8192 [1/3] BM=128 BN=256 BK=64 stages=4: "
                        "0.412 ms (best so far)")
    assert lines[1] == ("autotune gemm bf16 sm_90a 8192x8192x8192 [2/3] BM=128 BN=128 BK=64 stages=4: "
                        "failed: RuntimeError: CODEGEN_COMPILE_FAILED: ptxas")
    assert lines[2].endswith("[3/3] BM=64 BN=256 BK=64 stages=3: 0.300 ms (best so far)")
    assert "chose BM=64 BN=256 BK=64 stages=3" in lines[3] and "(1 failed)" in lines[3]
    A.tune("gemm", KEY, CANDIDATES, fake)
    assert "cached BM=64 BN=256 BK=64 stages=3: 0.300 ms" in capsys.readouterr().err


def test_progress_is_silenced_by_the_flag_or_the_environment(capsys, monkeypatch):
    A.tune("gemm", KEY, CANDIDATES, fast_second(), cache=False, progress=False)
    monkeypatch.setenv("TESSERA_AUTOTUNE_QUIET", "1")
    A.tune("gemm", KEY, CANDIDATES, fast_second(), cache=False)
    assert capsys.readouterr().err == ""
    A.tune("gemm", KEY, CANDIDATES, fast_second(), cache=False, progress=True)  # an explicit True wins
    assert capsys.readouterr().err.count("\n") == 4
    monkeypatch.setenv("TESSERA_AUTOTUNE_QUIET", "0")
    A.tune("gemm", KEY, CANDIDATES, fast_second(), cache=False)
    assert capsys.readouterr().err.count("\n") == 4


def test_result_as_dict_is_json_ready():
    res = A.tune("gemm", KEY, CANDIDATES, fast_second(), progress=False)
    data = json.loads(json.dumps(res.as_dict()))
    assert data["config"] == CANDIDATES[1] and data["source"] == "measured" and len(data["timings"]) == 3
    assert math.isclose(data["seconds"], 3.9e-4) and data["timings"][0]["config"] == CANDIDATES[0]
