"""What a YAML document may be, enforced while it is composed, before anything is built from it.

Every YAML file biaseval reads goes through ``yamlio`` and so through ``LimitedComposer``, which
refuses, naming the line and column:

- a key given twice in one mapping, at any depth (YAML 1.2 says keys are unique; a loader that keeps
  the last one silently drops the first). Keys are compared as values, so ``seed: 1`` and
  ``seed: 0x1`` collide. A merge key ``<<: *defaults`` copies the keys of another mapping; a key
  written beside it overrides the merged one (the point of merging), but ``<<`` itself given twice
  is a duplicate (merge several with ``<<: [*a, *b]``);
- more than ``MAX_NODES`` nodes, counting an alias as every node it stands for: a few hundred bytes of
  aliases of aliases ("billion laughs") otherwise expand to billions of values in the first dump,
  hash or validation of the data;
- nesting deeper than ``MAX_DEPTH`` (composer, constructor and validation all recurse);
- an alias inside the node it names (a cycle: data that can never be dumped or hashed);
- a tag other than those of plain data (``!!python/object``, ``!!binary``, ``!!set``, custom tags):
  a config holds text, numbers, booleans, null, dates, lists and mappings, nothing else.

The file size (``MAX_BYTES``) is checked before the file is parsed (``yamlio.read_yaml``).
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.composer import Composer
from ruamel.yaml.constructor import ConstructorError, SafeConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import AliasEvent, CollectionStartEvent, MappingStartEvent
from ruamel.yaml.nodes import MappingNode, ScalarNode
from ruamel.yaml.scanner import Scanner

# Far above what real files need: a config is 1-5 KB and a few hundred nodes, 6-8 levels deep; the
# largest YAML biaseval ships (datasets.yaml) is 23 KB, the one with most nodes (gender_it.yaml) 918.
# Low enough that the worst document within them is read in about a second by ruamel.yaml's
# pure-Python parser (some 50-80 us a node, some 3 us a byte, on a busy 2-core machine), and that
# its data, aliases expanded, is small for everything after (validation, dumps, the config hash).
# The depth leaves the recursive composer, constructor and validators far from Python's limit.
MAX_BYTES = 256 * 1024
MAX_NODES = 25_000
MAX_DEPTH = 64

_CORE = "tag:yaml.org,2002:"
ALLOWED_TAGS = {"!"} | {_CORE + t for t in ("str", "int", "float", "bool", "null", "timestamp", "seq", "map")}
_MERGE = _CORE + "merge"
_TOO_DEEP = f"YAML too deep: more than {MAX_DEPTH} levels of nesting"


class Refused(Exception):
    """A document outside the limits: ``mark`` is where (0-based line and column), ``message`` why."""

    def __init__(self, mark: Any, message: str):
        super().__init__(message)
        self.mark = mark
        self.message = message


class LimitedScanner(Scanner):
    """ruamel.yaml's scanner, refusing flow collections (``[``, ``{``) nested past ``MAX_DEPTH``. The
    scanner reads up to 1,024 characters ahead of the composer (a ``[`` may start a key), and at each
    token it looks at every open level: without this, 100,000 ``[`` took seconds before the composer
    saw the first one."""

    def fetch_flow_collection_start(self, TokenClass: Any, to_push: Any) -> None:  # noqa: N803 (ruamel's name)
        if self.flow_level >= MAX_DEPTH:
            raise Refused(self.reader.get_mark(), _TOO_DEEP)
        super().fetch_flow_collection_start(TokenClass, to_push)


class PlainConstructor(SafeConstructor):
    """ruamel.yaml's safe constructor, whose failures on a value its tag cannot build (``!!int abc``,
    ``!!bool maybe``, an integer of more digits than Python converts) are YAML errors at the value's
    line and column, not a ValueError or KeyError from deep inside."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, KeyError, IndexError, TypeError, OverflowError) as exc:
            text = node.value if isinstance(node, ScalarNode) else node.id
            shown = text if len(text) <= 40 else text[:37] + "..."
            why = "" if isinstance(exc, (KeyError, IndexError)) else f" ({exc})"
            raise ConstructorError(None, None, f"cannot read {shown!r} as {node.tag.removeprefix(_CORE)}{why}",
                                   node.start_mark) from None


class LimitedComposer(Composer):
    """ruamel.yaml's composer with the limits above checked as each node arrives."""

    def __init__(self, loader: Any = None) -> None:
        super().__init__(loader)
        self.warn_double_anchors = False  # YAML 1.2 allows an anchor to be defined again
        self.nodes = 0
        self.level = 0
        self.sizes: dict[str, int] = {}  # anchor -> nodes its node stands for, aliases expanded
        self.open: set[str] = set()  # anchors of the nodes being composed
        self.path: list[Any] = []  # from the root: key nodes and sequence indices (for messages)
        self.keys: PlainConstructor | None = None  # builds keys to compare them, apart from the document's

    def compose_document(self) -> Any:
        self.sizes, self.open = {}, set()
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.parser.peek_event()
        if isinstance(event, AliasEvent):
            if event.anchor in self.open:
                raise Refused(event.start_mark, f"invalid YAML: alias *{event.anchor} inside the node it names")
            self._count(self.sizes.get(event.anchor, 1), event.start_mark)
            return super().compose_node(parent, index)
        tag = getattr(event, "tag", None)
        if tag is not None and tag not in ALLOWED_TAGS:
            raise Refused(event.start_mark, f"invalid YAML: tag {_written(event)} is not allowed (a YAML file "
                                            f"biaseval reads holds text, numbers, booleans, lists and mappings)")
        nested = isinstance(event, CollectionStartEvent)
        if nested:
            self.level += 1
            if self.level > MAX_DEPTH:
                raise Refused(event.start_mark, _TOO_DEEP)
        before = self.nodes
        self._count(1, event.start_mark)
        if event.anchor is not None:
            self.open.add(event.anchor)
        self.path.append(index)
        node = super().compose_node(parent, index)
        if isinstance(event, MappingStartEvent):
            self._unique_keys(node)
        self.path.pop()
        if event.anchor is not None:
            self.open.discard(event.anchor)
            self.sizes[event.anchor] = self.nodes - before
        if nested:
            self.level -= 1
        return node

    def _count(self, nodes: int, mark: Any) -> None:
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            raise Refused(mark, f"YAML too large: its aliases expand it past {MAX_NODES:,} nodes"
                          if nodes > 1 else f"YAML too large: more than {MAX_NODES:,} nodes")

    def _unique_keys(self, node: MappingNode) -> None:
        seen: dict[Any, ScalarNode] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode):
                continue  # a list or mapping as a key: never the same object twice
            key = self._key(key_node)
            first = seen.setdefault(key, key_node)
            if first is not key_node:
                field = ".".join(_label(i) for i in self.path if i is not None)
                field = f"{field}.{key_node.value}" if field else key_node.value
                raise Refused(key_node.start_mark, f"invalid YAML: {field}: key given twice (lines "
                                                   f"{first.start_mark.line + 1} and {key_node.start_mark.line + 1})")

    def _key(self, key_node: ScalarNode) -> Any:
        """The key as the mapping will hold it (``1`` and ``0x1`` are one key; ``"1"`` another)."""
        if key_node.tag == _MERGE:
            return ("<<",)
        if key_node.tag == _CORE + "str":
            return key_node.value
        if self.keys is None:
            _ = self.loader.constructor  # the document's own constructor is the loader's, made first
            self.keys = PlainConstructor(loader=self.loader)
        try:
            value = self.keys.construct_object(key_node)
        except YAMLError:  # not a value of its tag: the document's constructor says so, with the line
            return (key_node.tag, key_node.value)
        return value if value == value else (key_node.tag, key_node.value)  # NaN is never equal to itself


def _label(index: Any) -> str:
    return str(index.value) if isinstance(index, ScalarNode) else str(index)


def _written(event: Any) -> str:
    """A tag as the file wrote it: ``!!python/object`` rather than its full ``tag:yaml.org,2002:`` name."""
    tag = event.ctag
    handle, suffix = getattr(tag, "handle", None), getattr(tag, "suffix", None)
    return f"{handle}{suffix}" if handle and suffix is not None else str(tag)
