"""The one YAML loader of the project: refuses duplicate keys (pure Python, no ROS).

PyYAML keeps the last of two equal keys in a mapping without a word, so a file can say
one thing and run another. Every YAML file the project reads (scenarios, parameter files,
navigation instances, launch files) goes through :func:`load_yaml` or
:func:`compose_yaml`, which refuse a duplicate key with the file, the line and the key.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from smores_assembly.errors import InputError

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlError(InputError):
    """A YAML file that cannot be read, parsed, or has a duplicate key.

    Attributes:
        source: the file (or ``<string>``); line: 1-based line (0 when unknown);
        key: the duplicate key (duplicates only); where: dotted path of the mapping holding
        it (duplicates only, ``""`` at the top level).
    """

    def __init__(self, message: str, source: str = "", line: int = 0, key: Any = None,
                 where: str = "", first_line: int = 0, column: int = 0, problem: str = ""):
        super().__init__(message)
        self.source, self.line, self.key, self.where = source, line, key, where
        self.first_line, self.column, self.problem = first_line, column, problem


class DuplicateKeyError(YamlError):
    """A mapping with two equal keys (``line`` is the second one, ``first_line`` the first)."""


def check_duplicate_keys(node: yaml.Node | None, source: str = "<string>",
                         where: str = "") -> None:
    """Refuse duplicate keys in every mapping below ``node`` (a composed YAML node).

    Merge keys (``<<``) are not duplicates: they are YAML's own override mechanism.

    Raises:
        DuplicateKeyError: ``"<source>:<line>: duplicate key '<key>' in <where> (first at
            line <n>)"``.
    """
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                inside = f" in {where}" if where else ""
                raise DuplicateKeyError(
                    f"{source}:{line}: duplicate key {key!r}{inside} (first at line "
                    f"{seen[key]})", source, line, key, where, seen[key])
            seen[key] = line
            check_duplicate_keys(value_node, source, f"{where}.{key}" if where else str(key))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            check_duplicate_keys(item, source, f"{where}[{i}]")


def _parse_error(exc: yaml.YAMLError, source: str) -> YamlError:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else 0
    at = f":{line}" if mark is not None else ""
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    return YamlError(f"{source}{at}: invalid YAML: {problem}", source, line,
                     column=mark.column + 1 if mark is not None else 0, problem=problem)


def compose_yaml(text: str, source: str = "<string>") -> yaml.Node | None:
    """Parse ``text`` into a YAML node tree (with line marks), duplicate keys refused.

    Raises:
        YamlError: invalid YAML or a duplicate key (message starts with ``source:line``).
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise _parse_error(exc, source) from None
    check_duplicate_keys(node, source)
    return node


def load_yaml(text: str, source: str = "<string>") -> Any:
    """Parse ``text`` (safe YAML types) with duplicate keys refused.

    Raises:
        YamlError: invalid YAML or a duplicate key (message starts with ``source:line``).
    """
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise _parse_error(exc, source) from None
        check_duplicate_keys(node, source)
        if node is None:
            return None
        try:
            return loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise _parse_error(exc, source) from None
    finally:
        loader.dispose()


def read_yaml_file(path: str | Path) -> Any:
    """Read and parse a YAML file with :func:`load_yaml`.

    Raises:
        YamlError: unreadable or non-UTF-8 file, invalid YAML, duplicate key; the message
            starts with the path.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise YamlError(f"{p}: cannot read: {exc.strerror or exc}", str(p)) from None
    except UnicodeDecodeError as exc:
        raise YamlError(f"{p}: cannot read: not UTF-8 text (invalid byte "
                        f"0x{exc.object[exc.start]:02x} at offset {exc.start})",
                        str(p)) from None
    return load_yaml(text, str(p))
