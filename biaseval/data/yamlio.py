"""YAML files that fail well: parse errors and validation errors name the file, line and field.

Every YAML document biaseval reads — configs, template suites, word data, the package's own data
files — is read here (``read_yaml`` for a user's file, ``package_yaml`` for the package's), by
ruamel.yaml (YAML 1.2: ``no`` is a string, not false) within the limits of ``yaml_limits``: no key
twice, at most ``MAX_BYTES`` bytes, ``MAX_NODES`` nodes with aliases expanded and ``MAX_DEPTH``
levels, plain data only. A document outside them is a ConfigError naming the file, line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, SequenceNode
from ruamel.yaml.reader import ReaderError

from biaseval.data.yaml_limits import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    LimitedComposer,
    LimitedScanner,
    PlainConstructor,
    Refused,
)
from biaseval.errors import BiasevalError, ConfigError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "YamlDoc", "format_errors", "package_yaml", "parse_yaml",
           "read_yaml", "where"]

M = TypeVar("M", bound=BaseModel)


# a message that starts with a config field's dotted path: "systems.nllb.options.model: ..."
_FIELD = re.compile(r"^([A-Za-z_][\w-]*(?:\.[^\s:.]+)+): ")


@dataclass(frozen=True)
class YamlDoc:
    """A parsed YAML file and its node tree (for line numbers)."""

    path: Path
    data: Any
    node: Node | None

    def where(self, field: tuple) -> str:
        return where(self.path, self.node, field)

    def fail(self, field: tuple, message: str) -> ConfigError:
        return ConfigError(f"{self.where(field)}: {'.'.join(map(str, field))}: {message}")

    def locate(self, exc: BiasevalError) -> BiasevalError:
        """An error of a later check (datasets, recorded files, models) placed in this file: at the line
        of the field its message starts with (``systems.x.options.model: ...``), else at the file."""
        message = str(exc)
        if message.startswith(str(self.path)):
            return exc
        field = _FIELD.match(message)
        at = self.where(tuple(field.group(1).split("."))) if field else str(self.path)
        located = type(exc).__new__(type(exc))
        BiasevalError.__init__(located, f"{at}: {message}")
        return located

    def validate(self, model: type[M], value: Any = None, prefix: tuple = ()) -> M:
        """``model`` validated from ``value`` (default: the whole document); errors name file:line."""
        try:
            return model.model_validate(self.data if value is None else value)
        except ValidationError as exc:
            raise ConfigError(format_errors(self.path, self.node, exc, prefix)) from None


def read_yaml(path: str | Path, what: str = "file") -> YamlDoc:
    """A user's YAML file, whose top level must be a mapping; a ConfigError names file:line:column."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)  # never more: a huge file (or /dev/zero) is refused unread
            size = path.stat().st_size if len(raw) > MAX_BYTES and path.is_file() else None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"{path}: YAML too large: {f'{size:,}' if size else f'over {MAX_BYTES:,}'} bytes; "
                          f"biaseval reads YAML files of at most {MAX_BYTES:,} bytes")
    data, node = parse_yaml(_decode(path, raw, what), path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return YamlDoc(path, data, node)


def package_yaml(name: str) -> Any:
    """``biaseval/<name>``, a YAML file of the package's own, read by the same loader as a user's."""
    source = Path("biaseval") / name
    return parse_yaml(_decode(source, resources.files("biaseval").joinpath(name).read_bytes()), source)[0]


def parse_yaml(text: str, source: str | Path) -> tuple[Any, Node | None]:
    """The data of one YAML document and its node tree, within the limits of ``yaml_limits``;
    anything else is a ConfigError naming ``source``:line:column."""
    if len(text) > MAX_BYTES and len(text.encode("utf-8")) > MAX_BYTES:
        raise ConfigError(f"{source}: YAML too large: over {MAX_BYTES:,} bytes; biaseval reads YAML files "
                          f"of at most {MAX_BYTES:,} bytes")
    loader = YAML(typ="safe", pure=True)
    loader.Composer, loader.Scanner, loader.Constructor = LimitedComposer, LimitedScanner, PlainConstructor
    try:
        node = loader.compose(text)
        data = None if node is None else loader.constructor.construct_document(node)
    except Refused as exc:
        raise ConfigError(f"{source}:{exc.mark.line + 1}:{exc.mark.column + 1}: {exc.message}") from None
    except ReaderError as exc:  # a character YAML does not allow (a control character)
        raise ConfigError(f"{_at(source, text, exc.position)}: invalid YAML: character "
                          f"U+{_code(exc.character):04X} is not allowed ({exc.reason})") from None
    except YAMLError as exc:
        mark = exc.problem_mark if isinstance(exc, MarkedYAMLError) else None
        at = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else str(source)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{at}: invalid YAML: {problem}") from None
    return data, node


def _decode(path: Path, data: bytes, what: str = "file") -> str:
    """A YAML file's text; bytes that are not UTF-8 are a ConfigError naming the line and column."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(data[start:exc.start].decode("utf-8", errors="replace")) + 1
        raise ConfigError(f"{path}:{line}:{column}: {what} is not valid UTF-8 (byte 0x{data[exc.start]:02x}: "
                          f"{exc.reason}); save it as UTF-8") from None


def _at(path: str | Path, text: str, position: int) -> str:
    """``file:line:column`` of a character offset into ``text``."""
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"{path}:{line}:{column}"


def _code(character: str | int) -> int:
    return ord(character) if isinstance(character, str) else character


def format_errors(path: Path, node: Node | None, exc: ValidationError, prefix: tuple = ()) -> str:
    lines = []
    for err in exc.errors():
        field = prefix + tuple(err["loc"])
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{where(path, node, field)}: {'.'.join(map(str, field))}: {message}")
    return "\n".join(lines)


def where(path: Path, node: Node | None, field: tuple) -> str:
    """``file:line`` of the deepest YAML node on ``field``'s path (the key itself when it is unknown).
    A key that a merge (``<<: *defaults``) supplied is found where the merged mapping wrote it."""
    line = None
    for key in field:
        if isinstance(node, MappingNode):
            # the last match: after merging, a mapping's own keys follow (and override) the merged ones
            match = next(((k, v) for k, v in reversed(node.value) if k.value == str(key)), None)
            if match is None:
                break
            line = match[0].start_mark.line + 1
            node = match[1]
        elif isinstance(node, SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return f"{path}:{line}" if line else str(path)
