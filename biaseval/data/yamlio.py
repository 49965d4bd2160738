"""YAML files that fail well: parse errors and validation errors name the file, line and field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from biaseval.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class YamlDoc:
    """A parsed YAML file and its node tree (for line numbers)."""

    path: Path
    data: Any
    node: yaml.Node | None

    def where(self, field: tuple) -> str:
        return where(self.path, self.node, field)

    def fail(self, field: tuple, message: str) -> ConfigError:
        return ConfigError(f"{self.where(field)}: {'.'.join(map(str, field))}: {message}")

    def validate(self, model: type[M], value: Any = None, prefix: tuple = ()) -> M:
        """``model`` validated from ``value`` (default: the whole document); errors name file:line."""
        try:
            return model.model_validate(self.data if value is None else value)
        except ValidationError as exc:
            raise ConfigError(format_errors(self.path, self.node, exc, prefix)) from None


def read_yaml(path: str | Path, what: str = "file") -> YamlDoc:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what} ({exc.strerror})") from None
    text = _decode(path, raw, what)
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow (a control character)
            raise ConfigError(f"{_at(path, text, exc.position)}: invalid YAML: character "
                              f"U+{_code(exc.character):04X} is not allowed ({exc.reason})") from None
        mark = getattr(exc, "problem_mark", None)
        at = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{at}: invalid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return YamlDoc(path, data, node)


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


def _at(path: Path, text: str, position: int) -> str:
    """``file:line:column`` of a character offset into ``text``."""
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"{path}:{line}:{column}"


def _code(character: str | int) -> int:
    return ord(character) if isinstance(character, str) else character


def format_errors(path: Path, node: yaml.Node | None, exc: ValidationError, prefix: tuple = ()) -> str:
    lines = []
    for err in exc.errors():
        field = prefix + tuple(err["loc"])
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{where(path, node, field)}: {'.'.join(map(str, field))}: {message}")
    return "\n".join(lines)


def where(path: Path, node: yaml.Node | None, field: tuple) -> str:
    """``file:line`` of the deepest YAML node on ``field``'s path (the key itself when it is unknown)."""
    line = None
    for key in field:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == str(key)), None)
            if match is None:
                break
            line = match[0].start_mark.line + 1
            node = match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return f"{path}:{line}" if line else str(path)
