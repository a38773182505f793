"""The pass registry and the pipeline parser behind `tessera-opt --pass-pipeline`.

Passes are xDSL `ModulePass` frozen dataclasses: the kebab-case `name` is the
CLI name, the fields are the options (see `tessera.passes.options`) and the
first docstring line is the one-line purpose `--help` shows. A pass module
registers its passes with `@register_pass`; every module of the
`tessera.passes` package is imported before the registry is read, so adding
a pass is adding a file. Named pipelines (`register_pipeline`) are usable
wherever a pass name is, and options given to one are forwarded to each of its
passes that has an option of that name.

Pipelines are written the MLIR way, `builtin.module(pass-a{opt=v},pass-b)`,
or flat, `pass-a{opt=v},pass-b` (xDSL's spelling). xDSL's own lexer parses
each pass; this module adds the wrapper, positions, and coded errors: xDSL
reports a malformed pipeline with `ArgSpecParseError`, a `BaseException`
that `except Exception` misses, and bad options with anonymous ValueErrors
(DESIGN section 8).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from dataclasses import dataclass

from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import ArgSpec, PipelineLexer, SpecTokenKind
from xdsl.utils.arg_spec import parse_pipeline as parse_xdsl_specs
from xdsl.utils.exceptions import ArgSpecParseError

from tessera.ir import diagnostics as D
from tessera.passes.options import OptionInfo, OptionValueError, format_value, option_infos


@dataclass(frozen=True)
class PassInfo:
    name: str
    cls: type[ModulePass]
    summary: str
    options: tuple[OptionInfo, ...]

    def option(self, field: str) -> OptionInfo | None:
        return next((o for o in self.options if o.field == field), None)


_PASSES: dict[str, PassInfo] = {}
NAMED_PIPELINES: dict[str, str] = {}
"""Named pipeline -> pipeline text; use `register_pipeline` to add one with its summary."""
_PIPELINE_SUMMARIES: dict[str, str] = {}
_discovered = False


def register_pass(cls: type[ModulePass] | None = None, *, summary: str | None = None):
    """Register a ModulePass under its `name`: `@register_pass` or `register_pass(Cls, summary=...)`.

    `summary` defaults to the first line of the class docstring. Options are
    checked here, so a pass whose fields no pipeline could set fails at import.
    """
    def add(c: type[ModulePass]) -> type[ModulePass]:
        doc = (c.__doc__ or "").strip()
        text = summary or (doc.splitlines()[0] if doc else "")
        if not text:
            raise TypeError(f"pass {c.__name__} needs a docstring or summary= (its one-line purpose for --help)")
        if c.name in NAMED_PIPELINES:
            raise TypeError(f"pass name '{c.name}' is already a named pipeline")
        _PASSES[c.name] = PassInfo(c.name, c, text.strip(), option_infos(c))
        return c

    return add(cls) if cls is not None else add


def register_pipeline(name: str, text: str, summary: str) -> None:
    """Name a pipeline, e.g. `register_pipeline("tessera-lower-to-nv", "tile-to-fragments,...", "...")`."""
    if name in _PASSES:
        raise TypeError(f"pipeline name '{name}' is already a pass")
    NAMED_PIPELINES[name] = text
    _PIPELINE_SUMMARIES[name] = summary


def available_passes() -> dict[str, PassInfo]:
    """Every registered pass by name, after importing every module of `tessera.passes` and of each target's
    `passes` package (found by name through `tessera.target.pass_modules`, never imported statically)."""
    global _discovered
    if not _discovered:
        _discovered = True
        import tessera.passes as package

        modules = [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)
                   if not m.name.startswith("_")]
        for name in sorted(modules) + importlib.import_module("tessera.target").pass_modules():
            importlib.import_module(name)
    return dict(_PASSES)


def named_pipelines() -> dict[str, tuple[str, str]]:
    """Named pipeline -> (pipeline text, summary)."""
    available_passes()
    return {n: (t, _PIPELINE_SUMMARIES.get(n, "")) for n, t in NAMED_PIPELINES.items()}


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), 127]} | {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}


def _error(code: D.Code, message: str, col: int) -> D.TesseraError:
    # Messages quote the pipeline text: a newline in it would break the one-line `file:line:col: error:` format.
    return D.TesseraError(code, message.translate(_CONTROL)).with_location(f"<pass-pipeline>:1:{col}")


def _strip_wrapper(text: str) -> tuple[str, int]:
    """`builtin.module(X)` -> (X, offset of X); a flat pipeline is returned as is."""
    lead = len(text) - len(text.lstrip())
    body = text.strip()
    if not body.startswith("builtin.module"):
        return text, 0
    rest = body[len("builtin.module"):]
    if not rest.startswith("(") or not rest.endswith(")"):
        raise _error(D.OPT_PIPELINE_SYNTAX, "expected 'builtin.module(' ... ')' around the pass list", lead + 1)
    return rest[1:-1], lead + len("builtin.module(")


def _split(text: str, offset: int) -> list[tuple[str, int]]:
    """Top-level comma-separated elements with their 1-based columns (commas in {...} are list values)."""
    elements, depth, quote, start = [], [], False, 0
    for i, ch in enumerate(text + ","):
        if quote:
            quote = ch != '"' or text[i - 1] == "\\"
        elif ch == '"':
            quote = True
        elif ch in "{(":
            depth.append(ch)
        elif ch in "})":
            if not depth or depth.pop() != {"}": "{", ")": "("}[ch]:
                raise _error(D.OPT_PIPELINE_SYNTAX, f"unbalanced '{ch}'", offset + i + 1)
        elif ch == "," and not depth:
            piece = text[start:i]
            lead = len(piece) - len(piece.lstrip())
            elements.append((piece.strip(), offset + start + lead + 1))
            start = i + 1
    if quote or depth:
        raise _error(D.OPT_PIPELINE_SYNTAX, "unterminated string" if quote else f"unclosed '{depth[-1]}'",
                     offset + len(text) + 1)
    if len(elements) == 1 and not elements[0][0]:
        return []
    for piece, col in elements:
        if not piece:
            raise _error(D.OPT_PIPELINE_SYNTAX, "empty pass name (a stray comma?)", col)
    return elements


def _parse_element(piece: str, col: int) -> ArgSpec:
    head = piece.split("{", 1)[0]
    if "(" in head:
        anchor = head.split("(", 1)[0].strip()
        raise _error(D.OPT_PIPELINE_SYNTAX, f"nested pipeline '{anchor}(...)' is not supported: Tessera passes run "
                                            "on the whole module, so list them at the top level", col)
    try:
        specs = list(parse_xdsl_specs(piece))
    except ArgSpecParseError as err:  # a BaseException: `except Exception` would miss it
        lines = str(err).strip().splitlines()
        raise _error(D.OPT_PIPELINE_SYNTAX, f"in '{piece}': {lines[-1].strip('^ ') if lines else err}", col) from None
    if len(specs) != 1:
        raise _error(D.OPT_PIPELINE_SYNTAX, f"expected one pass in '{piece}'", col)
    keys = _option_keys(piece)
    for key in keys:
        if keys.count(key) > 1:
            raise _error(D.OPT_OPTION_INVALID, f"pass '{specs[0].name}' option '{key}' is given more than once", col)
    return specs[0]


def _option_keys(piece: str) -> list[str]:
    """Option names in `name{k1=v k2}` in order, repeats kept (xDSL keeps only the last of a repeat)."""
    lexer, keys, prev = PipelineLexer(piece), [], None
    while (tok := lexer.lex()).kind is not SpecTokenKind.EOF:
        if tok.kind is SpecTokenKind.IDENT and prev in (SpecTokenKind.L_BRACE, SpecTokenKind.SPACE):
            keys.append(tok.span.text.replace("-", "_"))
        prev = tok.kind
    return keys


@dataclass
class _Item:
    spec: ArgSpec
    col: int
    via: str | None = None  # the named pipeline it came from

    def where(self) -> str:
        return f"pass '{self.spec.name}'" + (f" (in pipeline '{self.via}')" if self.via else "")


def _expand(text: str, col0: int = 0, stack: tuple[str, ...] = ()) -> list[_Item]:
    body, offset = _strip_wrapper(text)
    items: list[_Item] = []
    for piece, col in _split(body, offset):
        col = col0 or col
        spec = _parse_element(piece, col)
        if spec.name in _PASSES:
            items.append(_Item(spec, col, stack[0] if stack else None))
        elif spec.name in NAMED_PIPELINES:
            if spec.name in stack:
                raise _error(D.OPT_PIPELINE_SYNTAX, f"named pipeline '{spec.name}' includes itself", col)
            inner = _expand(NAMED_PIPELINES[spec.name], col, stack + (spec.name,))
            items += _forward(spec, inner, col)
        else:
            known = [*_PASSES, *NAMED_PIPELINES]
            close = difflib.get_close_matches(spec.name, known, n=1)
            guess = f"; did you mean '{close[0]}'?" if close else ""
            raise _error(D.OPT_PASS_UNKNOWN, f"unknown pass '{spec.name}'{guess}", col)
    return items


def _forward(spec: ArgSpec, inner: list[_Item], col: int) -> list[_Item]:
    """Give each option of `name{opt=v}` to every pass of the named pipeline that has `opt`."""
    for key, value in spec.parameters.items():
        field = key.replace("-", "_")
        takers = [it for it in inner if _PASSES[it.spec.name].option(field) is not None]
        if not takers:
            names = ", ".join(dict.fromkeys(it.spec.name for it in inner)) or "none"
            raise _error(D.OPT_OPTION_UNKNOWN, f"pipeline '{spec.name}' has no option '{key}' "
                                               f"(none of its passes takes it: {names})", col)
        for it in takers:
            params = {k: v for k, v in it.spec.parameters.items() if k.replace("-", "_") != field}
            params[field] = value
            it.spec = ArgSpec(it.spec.name, params)
    return inner


def _instantiate(item: _Item) -> ModulePass:
    info = _PASSES[item.spec.name]
    given = dict(item.spec.parameters)
    kwargs = {}
    for key in given:
        if info.option(key.replace("-", "_")) is None:
            have = ", ".join(o.name for o in info.options) or "none"
            raise _error(D.OPT_OPTION_UNKNOWN, f"{item.where()} has no option '{key}' (its options: {have})", item.col)
    values = {k.replace("-", "_"): v for k, v in given.items()}
    for opt in info.options:
        if opt.field not in values:
            if opt.required:
                raise _error(D.OPT_OPTION_MISSING, f"{item.where()} requires option '{opt.name}' ({opt.type_name})",
                             item.col)
            continue
        try:
            kwargs[opt.field] = opt.convert(values[opt.field])
        except OptionValueError as err:
            raise _error(D.OPT_OPTION_INVALID, f"{item.where()} option '{opt.name}': {err}", item.col) from None
    try:
        return info.cls(**kwargs)
    except (ValueError, TypeError, D.TesseraError) as err:
        shown = " ".join(f"{k}={format_value(v)}" for k, v in kwargs.items())
        raise _error(D.OPT_OPTION_INVALID, f"{item.where()} rejected options {{{shown}}}: {err}", item.col) from None


def parse_pipeline(text: str) -> PassPipeline:
    """Parse `builtin.module(a{x=1},b)` or `a{x=1},b` into an xDSL PassPipeline of configured passes.

    Raises a TesseraError located at `<pass-pipeline>:1:COL` with code
    OPT_PIPELINE_SYNTAX, OPT_PASS_UNKNOWN, OPT_OPTION_UNKNOWN,
    OPT_OPTION_INVALID or OPT_OPTION_MISSING. An empty pipeline is valid.
    """
    available_passes()
    return PassPipeline(tuple(_instantiate(item) for item in _expand(text)))


def pipeline_text(pipeline: PassPipeline) -> str:
    """The canonical spelling of a parsed pipeline, every option explicit (e.g. for cache keys)."""
    return "builtin.module(" + ",".join(str(p.spec(include_default=True)) for p in pipeline.passes) + ")"


def _forwarded_options(name: str) -> list[str]:
    """`--help` lines for the options a named pipeline forwards to its passes."""
    try:
        items = _expand(NAMED_PIPELINES[name], 1, (name,))
    except D.TesseraError as err:
        return [f"(does not parse: {err.code.name}: {err.message})"]
    fields: dict[str, list[tuple[_Item, OptionInfo]]] = {}
    for it in items:
        for opt in _PASSES[it.spec.name].options:
            fields.setdefault(opt.field, []).append((it, opt))
    lines = []
    for users in fields.values():
        opt = users[0][1]
        set_in = [format_value(it.spec.parameters[k]) for it, _ in users for k in it.spec.parameters
                  if k.replace("-", "_") == opt.field]
        if set_in:
            tail = f"default: {set_in[0]}, as written in the pipeline"
        else:
            tail = "required" if any(o.required for _, o in users) else \
                "default: " + ("none" if opt.default is None else format_value(opt.default))
        passes = ", ".join(dict.fromkeys(it.spec.name for it, _ in users))
        lines.append(f"{opt.name}: {opt.type_name} ({tail}) -> {passes}")
    return lines


def describe_passes() -> str:
    """The pass and named-pipeline list shown by `tessera-opt --help`."""
    passes = available_passes()
    width = max([len(n) for n in [*passes, *NAMED_PIPELINES]] + [10]) + 2
    lines = ["passes:"]
    for name in sorted(passes):
        info = passes[name]
        lines.append(f"  {name:<{width}}{info.summary}")
        lines += [f"  {'':<{width}}  {opt.describe()}" for opt in info.options]
    lines.append("named pipelines:")
    for name, (text, summary) in sorted(named_pipelines().items()):
        lines.append(f"  {name:<{width}}{summary}")
        lines.append(f"  {'':<{width}}  = {text}")
        lines += [f"  {'':<{width}}  {line}" for line in _forwarded_options(name)]
    if not NAMED_PIPELINES:
        lines.append("  (none registered)")
    return "\n".join(lines)
