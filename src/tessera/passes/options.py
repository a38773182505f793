"""Typed pass options: what each field of a pass dataclass accepts, and the conversion of pipeline values.

A pass is a frozen dataclass whose fields are its options (STYLE rule 2).
xDSL parses `pass{opt=v}` into raw values (int, float, bool, identifier
string, or a tuple of them) and converts them with a bare `ValueError` that
names neither the pass nor the expected type. Here each field becomes an
`OptionInfo` once, at registration, so the pipeline parser can say exactly
which option of which pass got which bad value and what it takes, and
`--help` can print the same description.

Conventions:
* a field named `arch` is a target arch (`sm_80` ... `sm_90a`) and is always
  required: it must have no default (DESIGN section 3, lesson 3);
* `field(metadata={"choices": ("a", "b")})` restricts a value to a set;
* `field(metadata={"help": "..."})` adds a phrase to `--help`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any

from tessera.target.arch import ARCH_NAMES, parse_arch

_SCALARS = {int: "int", float: "float", bool: "bool", str: "string"}


class OptionValueError(ValueError):
    """A value an option does not accept; the message says what it expects."""


@dataclass(frozen=True)
class OptionInfo:
    """One pass option: CLI name, dataclass field, accepted values and default."""

    name: str  # CLI spelling: kebab-case
    field: str  # dataclass field name: snake_case
    scalar: type  # int, float, bool or str (of the whole value, or of each element of a list)
    is_list: bool
    optional: bool  # `X | None`: may be given without a value
    required: bool
    default: Any
    choices: tuple | None
    help: str

    @property
    def type_name(self) -> str:
        """The accepted values as shown in --help and in OPT_OPTION_INVALID."""
        if self.field == "arch":
            base = "one of " + "|".join(ARCH_NAMES)
        elif self.choices is not None:
            base = "one of " + "|".join(str(c) for c in self.choices)
        else:
            base = _SCALARS[self.scalar]
        return f"comma-separated list of {base}" if self.is_list else base

    def describe(self) -> str:
        if self.required:
            tail = "required"
        elif self.default is None:
            tail = "default: none"
        else:
            tail = "default: " + format_value(self.default)
        text = f"{self.name}: {self.type_name} ({tail})"
        return f"{text} - {self.help}" if self.help else text

    def convert(self, values: tuple) -> Any:
        """Pipeline values (as xDSL's lexer gives them) -> the field value, or OptionValueError."""
        if not values:
            if self.scalar is bool and not self.is_list:
                return True  # `pass{flag}` sets a flag, as in MLIR
            if self.optional:
                return None
            raise OptionValueError(f"needs a value ({self.type_name})")
        if not self.is_list and len(values) != 1:
            raise OptionValueError(f"takes one value, not a list of {len(values)}")
        items = tuple(self._convert_one(v) for v in values)
        return items if self.is_list else items[0]

    def _convert_one(self, value: Any) -> Any:
        shown = format_value(value)
        if self.scalar is bool:
            ok = isinstance(value, bool)
        elif self.scalar is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif self.scalar is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
        else:  # strings: an identifier, a quoted string, or a number written where text is expected
            ok = True
            value = format_value(value) if not isinstance(value, str) else value
        if not ok:
            raise OptionValueError(f"'{shown}' is not a valid {self.type_name}")
        if self.field == "arch":
            try:
                parse_arch(value)
            except ValueError:
                raise OptionValueError(f"'{shown}' is not a supported arch: expected {self.type_name}") from None
        if self.choices is not None and value not in self.choices:
            raise OptionValueError(f"'{shown}' is not {self.type_name}")
        return value


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(format_value(v) for v in value)
    return str(value)


def option_infos(cls: type) -> tuple[OptionInfo, ...]:
    """The options of a pass dataclass; TypeError for a field no pipeline could set."""
    hints = typing.get_type_hints(cls)
    infos = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name == "name":
            continue
        scalar, is_list, optional = _unpack_type(cls, f.name, hints[f.name])
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        if f.name == "arch" and (has_default or optional or scalar is not str or is_list):
            raise TypeError(f"{cls.__name__}.arch must be a required `arch: str` field with no default: "
                            "the target arch is never assumed")
        choices = f.metadata.get("choices")
        infos.append(OptionInfo(
            name=f.name.replace("_", "-"), field=f.name, scalar=scalar, is_list=is_list, optional=optional,
            required=not (has_default or optional), default=default,
            choices=tuple(choices) if choices is not None else None, help=f.metadata.get("help", "")))
    return tuple(infos)


def _unpack_type(cls: type, name: str, hint: Any) -> tuple[type, bool, bool]:
    """`int`, `str | None`, `tuple[int, ...]` -> (scalar, is_list, optional)."""
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) == 1:
            hint = args[0]
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALARS:
            return args[0], True, optional
    elif hint in _SCALARS:
        return hint, False, optional
    raise TypeError(f"{cls.__name__}.{name}: option type {hint!r} is not int, float, bool, str, "
                    "tuple[X, ...] of those, or one of them | None")
