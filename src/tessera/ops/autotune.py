"""Pick a kernel configuration by measuring the candidates, remember the winner on disk, let people pin one.

    from tessera.ops.autotune import tune, pin, shape_bucket
    key = {"M": shape_bucket(M), "N": shape_bucket(N), "K": shape_bucket(K), "dtype": "bf16",
           "arch": "sm_90a", "toolchain": "tessera 0.1.0 nvrtc 13.0"}
    res = tune("gemm", key, [{"BM": 128, "BN": 256, "BK": 64, "stages": 4}, ...], measure)
    res.config, res.source          # the winner; "pinned" | "cache" | "measured"

Why it is shaped this way:
* Generic: the caller owns compiling and timing. `measure(config)` returns
  seconds (the caller's median over runs) or raises; any exception (compile
  error, spill, launch failure, a wrong result) marks that candidate failed,
  with its text, and it is never chosen -- the Triton habit of scoring an
  out-of-resources config as infinity instead of crashing. If every candidate
  fails, OPS_AUTOTUNE_FAILED lists each one's error.
* No per-call state on shared objects: a tune is one function call; the only
  module state is the pin table (what people asked for).
* Winner's curse: the least of many noisy first-pass times is often luck
  (or a cooler GPU early in the pass). With `finalists`/`rounds` the fastest
  few, and the `baseline` (the caller's untuned default), are timed again in
  interleaved rounds and chosen by their median; the baseline is kept unless
  a finalist beats it by BASELINE_MARGIN, so tuning does not trade the tested
  default for noise.
* Precedence: a pin beats the cache and measurement. The environment pin
  TESSERA_PIN_<OP> beats a pin() made in code (the person running the
  program overrides the program); among code pins the most specific
  key_subset wins, then the latest.
* The disk cache (tessera.ops._tune_cache) is one JSON file, `autotune.json` under $TESSERA_CACHE_DIR
  (else ~/.cache/tessera), written to a temp file and renamed into place so
  a reader never sees half a file. Entries are keyed by op + the canonical
  (sorted) key + the tessera version; put the toolchain string in the key
  yourself. An entry also records a hash of the candidate list: a changed
  list re-measures. A corrupt file or entry is a warning (code
  OPS_AUTOTUNE_CACHE_CORRUPT) and is ignored; an unwritable cache is a
  warning too. Two processes tuning at once may each write; the last rename
  wins and both results stay valid.
"""

from __future__ import annotations

import datetime
import math
import os
import re
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from tessera import __version__
from tessera.ir import diagnostics as D
from tessera.ops._common import OpsError
from tessera.ops._tune_cache import FILE_NAME, FORMAT, TuneCache, _candidates_sha, _store, _warn, entry_name  # noqa: F401

QUIET_ENV = "TESSERA_AUTOTUNE_QUIET"
PIN_ENV_PREFIX = "TESSERA_PIN_"
_SCALARS = (str, int, float, bool)
FINALISTS, ROUNDS = 3, 3  # what tessera.ops' tuners pass to `tune` (see the module docstring: winner's curse)
BASELINE_MARGIN = 0.01  # a finalist replaces the baseline only when its confirmed median is this much less
_pins: list[tuple[str, dict, dict]] = []  # (op, key_subset, config), in pin() order
generation = 0  # bumped whenever a choice may change (pin, unpin, a new measurement): warm calls re-choose


def _changed() -> None:
    global generation
    generation += 1


@dataclass(frozen=True)
class Trial:
    """One candidate's outcome: seconds when it ran, else the error text."""

    config: dict
    seconds: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class TuneResult:
    """The chosen config and where it came from: source is "pinned", "cache" or "measured".

    timings: every candidate's Trial (from the cache entry on a hit, empty
    when pinned); seconds: the winner's time (None when pinned; its
    confirmed median when finalists were timed again); measured_at: ISO time
    of the measurement; pinned_by: which pin; confirmations: the finalists'
    Trials of the interleaved rounds, in the order they ran.
    """

    op: str
    key: dict
    config: dict
    source: str
    timings: tuple[Trial, ...] = ()
    seconds: float | None = None
    measured_at: str | None = None
    pinned_by: str | None = None
    confirmations: tuple[Trial, ...] = ()

    def as_dict(self) -> dict:
        return asdict(self)


def shape_bucket(n: int) -> int:
    """The next power of two >= n (>= 1).

    Tuning keys use buckets, not exact sizes, so that a handful of tunes (and
    compiles) cover every shape, and the choice for 4000 and 4096 is the same
    one instead of flipping between near-equal configs on timing noise.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise OpsError(D.OPS_AUTOTUNE_INPUT, "autotune.shape_bucket", f"n={n!r} is not an int >= 0")
    return 1 << max(0, n - 1).bit_length()


def alignment(n: int, most: int = 256) -> int:
    """The largest power of two <= `most` that divides n (`most` for 0).

    Beside the bucket in GEMM tuning keys: how whole tiles cover a dimension decides the winner as much as its
    size does (4096 in 128 x 256 tiles is 16 x 16 whole tiles; 4000 wastes 4.6% of them, where cuBLAS's
    192 x 160 tiles waste 0.8%), so 4000 and 4096 share a bucket but not an alignment.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise OpsError(D.OPS_AUTOTUNE_INPUT, "autotune.alignment", f"n={n!r} is not an int >= 0")
    return most if n == 0 else min(most, n & -n)


# --- pins ------------------------------------------------------------------------------------------------

def pin(op: str, config: dict, **key_subset) -> None:
    """Make `tune(op, key, ...)` return `config` for every key whose entries include all of key_subset.

    pin("gemm", {"BM": 128, "BN": 256, "BK": 64, "stages": 4}, dtype="bf16") pins bf16 GEMMs; no
    key_subset pins every key. The environment's TESSERA_PIN_<OP> still wins over this.
    """
    _check_op(op, "autotune.pin")
    _check_config(config, "autotune.pin", D.OPS_AUTOTUNE_PIN_INVALID, "the pinned config")
    _check_config(key_subset, "autotune.pin", D.OPS_AUTOTUNE_PIN_INVALID, "the key subset", empty_ok=True)
    _pins.append((op, dict(key_subset), dict(config)))
    _changed()


def unpin(op: str) -> None:
    """Drop every pin() made for `op` (the environment pin, if set, stays)."""
    _pins[:] = [p for p in _pins if p[0] != op]
    _changed()


def pin_env_var(op: str) -> str:
    """TESSERA_PIN_<OP>: the op name upper-cased, characters other than letters and digits as '_'."""
    return PIN_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", op).upper()


def parse_pin(text: str, var: str = "TESSERA_PIN_<OP>") -> dict:
    """"BM=128,BN=256,BK=64,stages=4" -> dict; ints, floats, true/false, else strings (ACTIVATION=gelu)."""
    example = f"{var}=BM=128,BN=256,BK=64,stages=4"
    config: dict = {}
    for i, item in enumerate(text.split(",")):
        name, eq, value = (s.strip() for s in item.partition("="))
        problem = ("is empty" if not item.strip() else "has no '='" if not eq else "has no name" if not name
                   else f"name {name!r} is not an identifier" if not name.isidentifier()
                   else "has no value" if not value else f"repeats {name}" if name in config else None)
        if problem:
            raise OpsError(D.OPS_AUTOTUNE_PIN_INVALID, "autotune", f"{var}={text!r}: item {i + 1} ({item!r}) {problem}",
                           hint=f"write NAME=VALUE pairs separated by commas, e.g. {example}")
        config[name] = _value(value)
    return config


def _value(text: str):
    for convert in (int, float):
        try:
            value = convert(text)
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    return {"true": True, "false": False}.get(text.lower(), text)


def _pinned(op: str, key: dict, candidates: list) -> tuple[dict, str] | None:
    var = pin_env_var(op)
    env = os.environ.get(var, "").strip()
    if env:
        found = (parse_pin(env, var), f"{var}={env}")
    else:
        matching = [(len(sub), i, cfg) for i, (o, sub, cfg) in enumerate(_pins)
                    if o == op and all(k in key and key[k] == v for k, v in sub.items())]
        if not matching:
            return None
        _, i, cfg = max(matching, key=lambda m: (m[0], m[1]))
        found = (dict(cfg), "pin(" + ", ".join([repr(op), _fmt(cfg)] + [f"{k}={v!r}" for k, v in _pins[i][1].items()])
                 + ")")
    names = [sorted(c) for c in candidates]
    if sorted(found[0]) not in names:
        raise OpsError(D.OPS_AUTOTUNE_PIN_INVALID, "autotune", f"{found[1]} names {', '.join(sorted(found[0]))}; "
                       f"the {op} candidates take {', '.join(names[0])}",
                       hint=f"pin every parameter a candidate has, e.g. {var}={_fmt(candidates[0], ',')}")
    return found


# --- reading a cache entry ---------------------------------------------------------------------------------

def _cached(entry, candidates: list, where: Path) -> tuple[dict, float, str, tuple, tuple] | None:
    """(winner, seconds, measured_at, trials, confirmations) of an entry measured over these candidates, else None
    (a miss).

    A missing entry or one over another candidate list is a plain miss; a malformed one is also reported.
    """
    if entry is None:
        return None
    try:
        if entry["candidates_sha256"] != _candidates_sha(candidates):
            return None
        winner, seconds, when = entry["winner"], entry["seconds"], entry["measured_at"]
        trials = tuple(Trial(**t) for t in entry["timings"])
        confirmations = tuple(Trial(**t) for t in entry.get("confirmations", ()))
        if winner in candidates and float(seconds) > 0 and isinstance(when, str):
            return dict(candidates[candidates.index(winner)]), float(seconds), when, trials, confirmations
    except (TypeError, KeyError, ValueError):
        pass
    _warn(f"{where}: a malformed entry; re-measuring")
    return None


# --- tuning ----------------------------------------------------------------------------------------------

def tune(op: str, key: dict, candidates: list[dict], measure: Callable[[dict], float], *, cache=None,
         progress: bool | None = None, finalists: int = 1, rounds: int = 0,
         baseline: dict | None = None) -> TuneResult:
    """The best of `candidates` for `op` at `key`: pinned, else cached, else measured (then cached).

    key: JSON scalars naming the problem (shape buckets, dtype, arch, toolchain string).
    candidates: configs (dicts of JSON scalars); measure(config) -> seconds, or raises.
    cache: None or True (the default file), False (no disk cache), a TuneCache, or a file path.
    progress: one line per candidate to stderr; None means on unless TESSERA_AUTOTUNE_QUIET=1.
    finalists, rounds, baseline: after the first pass, the `finalists` fastest candidates and `baseline` (one of
    the candidates: the caller's untuned default) are measured `rounds` more times, interleaved; the least
    median wins, the baseline unless beaten by BASELINE_MARGIN. A finalist failing there is dropped. The
    defaults (1, 0, None) keep the first pass's fastest.
    Errors: OPS_AUTOTUNE_INPUT (malformed arguments), OPS_AUTOTUNE_PIN_INVALID (bad pin),
    OPS_AUTOTUNE_FAILED (every candidate failed; nothing is cached; its `.trials` hold the whole errors).
    """
    _check_op(op, "autotune.tune")
    _check_config(key, "autotune.tune", D.OPS_AUTOTUNE_INPUT, "the key", empty_ok=True)
    if not isinstance(candidates, (list, tuple)) or not candidates:
        raise OpsError(D.OPS_AUTOTUNE_INPUT, "autotune.tune", f"candidates must be a non-empty list of configs, "
                                                              f"got {candidates!r:.80}")
    for i, c in enumerate(candidates):
        _check_config(c, "autotune.tune", D.OPS_AUTOTUNE_INPUT, f"candidate {i + 1}")
    if not callable(measure):
        raise OpsError(D.OPS_AUTOTUNE_INPUT, "autotune.tune", f"measure is a {type(measure).__name__}, not a callable")
    for name, value, least in (("finalists", finalists, 1), ("rounds", rounds, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise OpsError(D.OPS_AUTOTUNE_INPUT, "autotune.tune", f"{name}={value!r}: an int >= {least}")
    if baseline is not None and baseline not in candidates:
        raise OpsError(D.OPS_AUTOTUNE_INPUT, "autotune.tune", f"baseline {baseline!r:.120} is not one of the "
                                                              "candidates", hint="pass the untuned default, which "
                                                                                 "the candidates must hold")
    candidates = [dict(c) for c in candidates]
    key = dict(key)
    say = _printer(progress, f"autotune {op} {describe(key)}")
    found = _pinned(op, key, candidates)
    if found is not None:
        say(f"pinned {_fmt(found[0])} ({found[1]})")
        return TuneResult(op, key, found[0], "pinned", pinned_by=found[1])
    store = _store(cache)
    name = entry_name(op, key)
    hit = _cached(store.entries().get(name), candidates, store.path) if store is not None else None
    if hit is not None:
        winner, seconds, when, trials, confirmations = hit
        say(f"cached {_fmt(winner)}: {seconds * 1e3:.3f} ms (measured {when})")
        return TuneResult(op, key, winner, "cache", trials, seconds, when, confirmations=confirmations)
    trials, best = [], None
    for i, config in enumerate(candidates):
        trial = _run(measure, config)
        trials.append(trial)
        if trial.error is None and (best is None or trial.seconds < best.seconds):
            best = trial
            note = " (best so far)"
        else:
            note = ""
        what = f"failed: {_first_line(trial.error)}" if trial.error else f"{trial.seconds * 1e3:.3f} ms{note}"
        say(f"[{i + 1}/{len(candidates)}] {_fmt(config)}: {what}")
    if best is None:
        listing = "; ".join(f"[{i + 1}] {_fmt(t.config)}: {_first_line(t.error)}" for i, t in enumerate(trials))
        error = OpsError(D.OPS_AUTOTUNE_FAILED, "autotune", f"all {len(trials)} {op} candidates failed at "
                                                           f"{describe(key)}: {listing}")
        error.trials = tuple(trials)  # each candidate's whole error text, for the caller's records
        raise error
    winner, seconds, confirmations = best.config, best.seconds, ()
    if rounds:
        winner, seconds, confirmations = _confirm(measure, trials, finalists, rounds, baseline, say)
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    result = TuneResult(op, key, dict(winner), "measured", tuple(trials), seconds, when,
                        confirmations=confirmations)
    if store is not None:
        store.put(name, {"op": op, "key": key, "tessera": __version__, "candidates_sha256": _candidates_sha(candidates),
                         "winner": winner, "seconds": seconds, "measured_at": when,
                         "timings": [asdict(t) for t in trials],
                         **({"confirmations": [asdict(t) for t in confirmations]} if confirmations else {})})
    _changed()
    failed = sum(t.error is not None for t in trials)
    say(f"chose {_fmt(winner)}: {seconds * 1e3:.3f} ms of {len(trials)} ({failed} failed)")
    return result


def _confirm(measure, trials: list[Trial], finalists: int, rounds: int, baseline: dict | None,
             say) -> tuple[dict, float, tuple[Trial, ...]]:
    """(winner, its median, the rounds' Trials): the fastest `finalists` of the first pass and the baseline (if
    it ran) timed `rounds` more times, each round in a rotated order so no config always runs first."""
    ran = sorted((t for t in trials if t.error is None), key=lambda t: t.seconds)
    pool = [t.config for t in ran[:finalists]]
    if baseline is not None and baseline not in pool and any(t.config == baseline for t in ran):
        pool.append(dict(baseline))
    if len(pool) == 1:
        return ran[0].config, ran[0].seconds, ()
    times: list[list[float]] = [[] for _ in pool]
    failed: set[int] = set()
    confirmations = []
    for r in range(rounds):
        for i in [(r + j) % len(pool) for j in range(len(pool))]:
            if i in failed:
                continue
            trial = _run(measure, pool[i])
            confirmations.append(trial)
            if trial.error is not None:
                failed.add(i)
                say(f"finalist {_fmt(pool[i])} failed when timed again: {_first_line(trial.error)}")
            else:
                times[i].append(trial.seconds)
    medians = {i: statistics.median(ts) for i, ts in enumerate(times) if i not in failed}
    if not medians:  # every finalist failed once measured again: none is trusted
        error = OpsError(D.OPS_AUTOTUNE_FAILED, "autotune", "every finalist failed when timed again: " + "; ".join(
            f"{_fmt(t.config)}: {_first_line(t.error)}" for t in confirmations if t.error))
        error.trials = tuple(trials) + tuple(confirmations)
        raise error
    best = min(medians, key=medians.get)
    base = pool.index(baseline) if baseline in pool else None
    if base in medians and medians[best] > (1 - BASELINE_MARGIN) * medians[base]:
        best = base  # within the margin of the tested default: keep it
    for i, m in medians.items():
        say(f"finalist {_fmt(pool[i])}: median {m * 1e3:.3f} ms of {len(times[i])}"
            f"{' (baseline)' if i == base else ''}")
    return pool[best], medians[best], tuple(confirmations)


def lookup(op: str, key: dict, candidates: list[dict], *, cache=None) -> TuneResult | None:
    """The pinned or cached winner for `op` at `key` without measuring anything, or None (nothing known yet)."""
    candidates = [dict(c) for c in candidates]
    found = _pinned(op, dict(key), candidates)
    if found is not None:
        return TuneResult(op, dict(key), found[0], "pinned", pinned_by=found[1])
    store = _store(cache)
    if store is None:
        return None
    hit = _cached(store.entries(report=False).get(entry_name(op, dict(key))), candidates, store.path)
    if hit is None:
        return None
    winner, seconds, when, trials, confirmations = hit
    return TuneResult(op, dict(key), winner, "cache", trials, seconds, when, confirmations=confirmations)


def _run(measure, config: dict) -> Trial:
    try:
        seconds = measure(dict(config))
    except Exception as err:  # noqa: BLE001 - any failure marks this candidate, never the whole tune
        return Trial(config, error=f"{type(err).__name__}: {err}"[:2000])
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds <= 0:
        return Trial(config, error=f"measure returned {seconds!r}, not a positive finite number of seconds")
    return Trial(config, float(seconds))


def describe(key: dict) -> str:
    """Short text for a key: short strings (dtype, arch) in order, then the int entries joined by 'x'."""
    words = [v for v in key.values() if isinstance(v, str) and len(v) <= 12 and " " not in v]
    dims = [str(v) for v in key.values() if isinstance(v, int) and not isinstance(v, bool)]
    return " ".join(words + (["x".join(dims)] if dims else []))


def _printer(progress, prefix: str) -> Callable[[str], None]:
    quiet = os.environ.get(QUIET_ENV, "").strip() not in ("", "0")
    if progress is False or (progress is None and quiet):
        return lambda line: None
    return lambda line: print(f"{prefix} {line}", file=sys.stderr, flush=True)


def _fmt(config: dict, sep: str = " ") -> str:
    return sep.join(f"{k}={v}" for k, v in config.items())


def _first_line(text: str | None) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "(no message)"
    return line if len(line) <= 160 else line[:157] + "..."


def _check_op(op, where: str) -> None:
    if not isinstance(op, str) or not op.strip():
        raise OpsError(D.OPS_AUTOTUNE_INPUT, where, f"op must be a non-empty string such as 'gemm', got {op!r}")


def _check_config(d, where: str, code: D.Code, what: str, empty_ok: bool = False) -> None:
    """A config or key: a dict of str names to JSON scalars (so it round-trips through the cache file)."""
    if not isinstance(d, dict) or (not d and not empty_ok):
        raise OpsError(code, where, f"{what} must be a {'' if empty_ok else 'non-empty '}dict, got {d!r:.80}")
    for k, v in d.items():
        if not isinstance(k, str) or not isinstance(v, _SCALARS) or (isinstance(v, float) and not math.isfinite(v)):
            raise OpsError(code, where, f"{what} has {k!r}: {v!r}; names are strings and values str, int, "
                                        "finite float or bool")
