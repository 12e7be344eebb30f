"""ROS 2 parameter files read with rcl's own rules (pure Python, no ROS imports).

The one parser of ``--params-file`` YAML in the project: the ``run --params-file`` check
(:mod:`smores_assembly.param_check`), the launch runner and the tests use it, so what is
checked is what the nodes apply. The rules are those of ``rcl_yaml_param_parser`` (the C
parser every rclpy/rclcpp node uses) and of the node-name matching of rclpy/rclcpp:

* Keys above ``ros__parameters`` are node namespace and name parts, joined with ``/``:
  ``/**: {docking_controller: {ros__parameters: ...}}`` is the node pattern
  ``/**/docking_controller``. A pattern matches a node's fully qualified name where
  ``/*`` stands for exactly one name token and ``/**`` for any number (also none), so
  ``/**/docking_controller`` matches ``/docking_controller`` and ``/lab/docking_controller``.
* Below ``ros__parameters``, nested mappings are dotted parameter names (``a: {b: 1}`` is
  ``a.b``); a value is a scalar or a list of scalars of one type (an empty list leaves
  the parameter unset: the node keeps its default).
* Scalars are typed by their text, not by YAML 1.1: quoted (or ``!!str``) is a string;
  ``true/True/TRUE/yes/Yes/YES/y/Y/on/On/ON`` (and the false words) are bools; what C's
  ``strtol(text, 0)`` reads entirely is an integer (so ``0x10`` is 16 and ``010`` is 8);
  what ``strtod`` reads entirely is a double (so ``1e-3``, ``5.``, ``inf`` and ``.nan`` are
  doubles, where YAML 1.1 would give the string ``'1e-3'``); anything else is a string.
* Duplicate keys are refused (:mod:`smores_assembly.yaml_io`): rcl would silently apply
  one of them.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from smores_assembly.errors import ParamsError
from smores_assembly.yaml_io import DuplicateKeyError, YamlError, compose_yaml

PARAMS_KEY = "ros__parameters"

_TRUE = {"Y", "y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
_FALSE = {"N", "n", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
_SPECIAL_FLOATS = {".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan,
                   ".inf": math.inf, ".Inf": math.inf, ".INF": math.inf,
                   "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf}
_STR_TAG = "tag:yaml.org,2002:str"
# strtol(text, &end, 0) consuming the whole text (C whitespace may lead; sign; base prefix)
_INT_RE = re.compile(r"^[ \t\n\v\f\r]*[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$")
# strtod consuming the whole text: decimal (with exponent), hex float, inf/infinity, nan(...)
_FLOAT_RE = re.compile(
    r"^[ \t\n\v\f\r]*[+-]?("
    r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?"
    r"|0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?"
    r"|[iI][nN][fF]([iI][nN][iI][tT][yY])?"
    r"|[nN][aA][nN](\([0-9A-Za-z_]*\))?)$")


class ParamsFileError(ParamsError):
    """A parameter file that rcl would refuse, or that says something the stack would not
    do (duplicate key, a section for no node, unknown parameter...). The message starts
    with ``file:line``."""


@dataclass
class ParamsSection:
    """One ``<node pattern>: {ros__parameters: ...}`` section of a parameter file.

    Attributes:
        pattern: fully qualified node pattern (leading ``/``, may hold ``*`` / ``**``).
        line: 1-based line of the section's innermost node key.
        params: parameter name (dotted) -> value typed as rcl types it.
        lines: parameter name -> 1-based line of its key.
    """

    pattern: str
    line: int
    params: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def matches(self, fqn: str) -> bool:
        """True when this section applies to the node ``fqn`` (see :func:`node_matches`)."""
        return node_matches(self.pattern, fqn)


def node_matches(pattern: str, fqn: str) -> bool:
    """rclpy/rclcpp node matching: does the params-file node ``pattern`` apply to ``fqn``?

    ``/*`` is one name token, ``/**`` any number of them (also none); the rest is literal.
    A missing leading ``/`` is implied on both.
    """
    if not pattern.startswith("/"):
        pattern = "/" + pattern
    if not fqn.startswith("/"):
        fqn = "/" + fqn
    parts = re.split(r"(/\*\*|/\*)", pattern)
    rx = "".join(r"(/\w+)*" if p == "/**" else r"(/\w+)" if p == "/*" else re.escape(p)
                 for p in parts)
    return re.fullmatch(rx, fqn) is not None


def rcl_scalar(text: str, style: str | None = None, tag: str | None = None) -> Any:
    """Type one YAML scalar as ``rcl_yaml_param_parser`` does (see the module docstring).

    Args:
        text: the scalar's text as written (no YAML 1.1 resolution).
        style: the YAML scalar style (``"'"`` or ``'"'`` for quoted, None for plain).
        tag: an explicit tag (``!!str`` forces a string).
    """
    if tag == _STR_TAG or style in ("'", '"'):
        return text
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT_RE.match(text):
        value = _c_int(text)
        if -2**63 <= value < 2**63:  # strtol overflows (ERANGE): then strtod decides
            return value
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if _FLOAT_RE.match(text):
        t = text.strip()
        if re.match(r"^[+-]?0[xX]", t):
            return float.fromhex(t)
        if re.match(r"^[+-]?[nN][aA][nN]", t):
            return math.nan
        return float(t)
    return text


def _c_int(text: str) -> int:
    """C ``strtol(text, &end, 0)`` of a text that :data:`_INT_RE` accepts."""
    t = text.strip()
    sign = -1 if t[0] == "-" else 1
    t = t.lstrip("+-")
    if t[:2] in ("0x", "0X"):
        return sign * int(t[2:], 16)
    if len(t) > 1 and t[0] == "0":
        return sign * int(t, 8)
    return sign * int(t)


def _where(source: str, node: yaml.Node) -> str:
    return f"{source}:{node.start_mark.line + 1}"


def _explicit_tag(node: yaml.ScalarNode) -> str | None:
    """The node's tag when written in the file (``!!str x``), None when PyYAML resolved it
    (rcl never sees YAML 1.1 resolution, only explicit tags)."""
    m = node.start_mark
    buf = getattr(m, "buffer", None)
    if buf is not None and m.pointer < len(buf) and buf[m.pointer] == "!":
        return node.tag
    return None


def _value(node: yaml.Node, source: str, name: str) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return rcl_scalar(node.value, node.style, _explicit_tag(node))
    if isinstance(node, yaml.SequenceNode):
        items = []
        for item in node.value:
            if not isinstance(item, yaml.ScalarNode):
                raise ParamsFileError(f"{_where(source, item)}: parameter {name}: a list "
                                      f"may only hold scalars")
            items.append(rcl_scalar(item.value, item.style, _explicit_tag(item)))
        kinds = {type(v) for v in items}
        if len(kinds) > 1:
            raise ParamsFileError(
                f"{_where(source, node)}: parameter {name}: list items of different types "
                f"{[type(v).__name__ for v in items]} (rcl needs one type: quote strings, "
                f"write 1.0 for a double)")
        return items
    raise ParamsFileError(f"{_where(source, node)}: parameter {name}: expected a value")


def _params(node: yaml.Node, source: str, prefix: str, section: ParamsSection) -> None:
    if not isinstance(node, yaml.MappingNode):
        raise ParamsFileError(f"{_where(source, node)}: {PARAMS_KEY} of {section.pattern}: "
                              f"expected a mapping name: value")
    for key_node, value_node in node.value:
        name = f"{prefix}{key_node.value}"
        if isinstance(value_node, yaml.MappingNode):
            _params(value_node, source, f"{name}.", section)
            continue
        section.params[name] = _value(value_node, source, name)
        section.lines[name] = key_node.start_mark.line + 1


def _sections(node: yaml.Node, source: str, parts: list[str], out: list[ParamsSection]) -> None:
    if not isinstance(node, yaml.MappingNode):
        if not parts:
            raise ParamsFileError(f"{_where(source, node)}: expected a mapping of node names "
                                  f"({{node: {{{PARAMS_KEY}: {{name: value}}}}}})")
        raise ParamsFileError(f"{_where(source, node)}: /{'/'.join(parts)}: expected "
                              f"{{{PARAMS_KEY}: {{name: value}}}} (or nested node names)")
    for key_node, value_node in node.value:
        key = str(key_node.value)
        if key == PARAMS_KEY:
            if not parts:
                raise ParamsFileError(f"{_where(source, key_node)}: {PARAMS_KEY} needs a node "
                                      f"name above it (e.g. '/**:')")
            section = ParamsSection("/" + "/".join(parts), key_node.start_mark.line)
            _params(value_node, source, "", section)
            out.append(section)
            continue
        tokens = [t for t in key.split("/") if t]
        if not tokens:
            raise ParamsFileError(f"{_where(source, key_node)}: {key!r} is not a node name")
        _sections(value_node, source, parts + tokens, out)


def parse_params_text(text: str, source: str = "<string>") -> list[ParamsSection]:
    """Sections of a parameter file given as text (see :func:`parse_params_file`)."""
    try:
        root = compose_yaml(text, source)
    except DuplicateKeyError as exc:
        raise ParamsFileError(str(exc)) from None
    except YamlError as exc:
        raise ParamsFileError(f"{source}: invalid YAML (line {exc.line}): {exc.problem}"
                              ) from None
    if root is None:
        return []
    out: list[ParamsSection] = []
    _sections(root, source, [], out)
    return out


def parse_params_file(path: str | Path) -> list[ParamsSection]:
    """Read a ROS 2 parameter file with rcl's rules, in file order.

    Raises:
        ParamsFileError: unreadable file, invalid YAML, duplicate key, a structure or a
            value rcl would refuse; the message starts with ``file:line``.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParamsFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ParamsFileError(f"{p}: cannot read: not UTF-8 text") from None
    return parse_params_text(text, str(p))


def params_for(sections: Iterable[ParamsSection], fqn: str) -> dict[str, Any]:
    """The parameter values node ``fqn`` gets from ``sections`` (later sections win)."""
    out: dict[str, Any] = {}
    for s in sections:
        if s.matches(fqn):
            out.update(s.params)
    return out


def check_sections_match(sections: Iterable[ParamsSection], fqns: Iterable[str],
                         source: str) -> None:
    """Refuse a section that applies to none of the nodes ``fqns`` that read the file.

    Raises:
        ParamsFileError: ``"<file>:<line>: section '<pattern>' matches no node that reads
            this file (nodes: ...)"``.
    """
    fqns = sorted(set(fqns))
    for s in sections:
        if not any(s.matches(f) for f in fqns):
            raise ParamsFileError(f"{source}:{s.line}: section {s.pattern!r} matches no node "
                                  f"that reads this file (nodes: {', '.join(fqns) or 'none'})")
