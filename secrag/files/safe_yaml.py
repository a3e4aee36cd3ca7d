"""YAML loading with size, alias and depth limits (no YAML bombs, no arbitrary tags).

With libyaml (PyYAML's C extension, present in its wheels) the limits are enforced on the C parser's
event stream and the documents are then built by the C safe loader, which constructs only standard
tags (every YAML file of the snapshot: 64.7 s in pure Python, 9.6 s so). Without libyaml, or for a file
libyaml refuses but PyYAML reads, a pure-Python safe loader enforces the same limits while it composes.
"""

from __future__ import annotations

import logging
from typing import Any

import yaml

from secrag.errors import ParseError

log = logging.getLogger(__name__)

MAX_BYTES = 5 * 1024 * 1024
MAX_DEPTH = 64
MAX_ALIASES = 100
MAX_NODES = 500_000


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader that refuses deep nesting and alias amplification."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: ANN401
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise ParseError(f"YAML uses more than {MAX_ALIASES} aliases (possible YAML bomb)")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise ParseError(f"YAML has more than {MAX_NODES} nodes")
        depth = getattr(self, "_depth", 0) + 1
        if depth > MAX_DEPTH:
            raise ParseError(f"YAML nests deeper than {MAX_DEPTH} levels")
        self._depth = depth
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth = depth - 1


_C_LOADER: type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None) if yaml.__with_libyaml__ else None


def _enforce_limits(text: str, loader: type[yaml.CSafeLoader]) -> None:
    """Refuse deep nesting, alias amplification and too many nodes, from the C parser's events."""
    depth = aliases = nodes = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            nodes += 1
            if aliases > MAX_ALIASES:
                raise ParseError(f"YAML uses more than {MAX_ALIASES} aliases (possible YAML bomb)")
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
        elif isinstance(event, yaml.CollectionStartEvent):
            nodes += 1
            depth += 1
            if depth > MAX_DEPTH:
                raise ParseError(f"YAML nests deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if nodes > MAX_NODES:
            raise ParseError(f"YAML has more than {MAX_NODES} nodes")


def _documents(text: str) -> list[Any]:
    if _C_LOADER is not None:
        try:
            _enforce_limits(text, _C_LOADER)
            return [doc for doc in yaml.load_all(text, Loader=_C_LOADER) if doc is not None]
        except yaml.YAMLError:
            # libyaml refuses a few files PyYAML reads (e.g. ForensicArtifacts' unix_common.yaml, "found
            # unexpected ':'"): such a file gets the pure-Python reader, so results equal the old path's.
            log.debug("libyaml could not read a YAML file; reading it with the pure-Python loader")
    loader = _LimitedLoader(text)
    try:
        docs = []
        while loader.check_data():  # type: ignore[no-untyped-call]  # PyYAML's loader is untyped
            doc = loader.get_data()
            if doc is not None:
                docs.append(doc)
        return docs
    finally:
        loader.dispose()


def _check_size(text: str | bytes) -> str:
    if len(text) > MAX_BYTES:
        raise ParseError(f"YAML file of {len(text)} bytes exceeds the {MAX_BYTES}-byte limit")
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig")
    return text


def load(text: str | bytes) -> Any:  # noqa: ANN401
    """One YAML document, safely; raises ParseError with the reason."""
    docs = load_all(text)
    if len(docs) != 1:
        raise ParseError(f"expected one YAML document, found {len(docs)}")
    return docs[0]


def load_all(text: str | bytes) -> list[Any]:
    """Every non-empty document of a multi-document YAML file, safely."""
    text = _check_size(text)
    try:
        return _documents(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParseError(f"invalid YAML{where}: {problem}") from exc
