"""Configuration files: hardened YAML into a pydantic model, errors naming the file, the line and the field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from secrag.errors import ConfigError

# Hand-written configuration is small; these stop a pasted YAML bomb before it costs memory.
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_ALIASES = 100
MAX_NODES = 100_000
MAX_REPORTED = 5  # validation errors named in one message

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


class ConfigModel(BaseModel):
    """Base of configuration models: unknown keys are errors, values keep their YAML type (no "10" for 10)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class FieldError(ValueError):
    """Raised by a validator about a value below the one it validates; `loc` is relative to that value."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses deep nesting, alias amplification and huge node counts."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._nodes = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: ANN401 - PyYAML's signature
        mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise yaml.MarkedYAMLError(problem=f"more than {MAX_ALIASES} aliases", problem_mark=mark)
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise yaml.MarkedYAMLError(problem=f"more than {MAX_NODES} nodes", problem_mark=mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def read_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """The file's one YAML document and its node tree (which keeps every key's line); ConfigError otherwise."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    if len(text) > MAX_BYTES:
        raise ConfigError(f"{path}: {len(text)} characters exceed the {MAX_BYTES}-character limit")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}{line}: not valid YAML: {problem}") from exc
    finally:
        loader.dispose()


def read_mapping(path: Path) -> tuple[dict[str, Any], yaml.Node | None]:
    """The file's mapping (an empty file is an empty one) and its node tree; ConfigError otherwise."""
    data, node = read_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:{line_of(node, ())}: expected a mapping, found {type(data).__name__}")
    return data, node


def load_model(path: Path, model: type[M], *, context: Mapping[str, Any] | None = None) -> M:
    """Read `path` (an empty file is an empty mapping) and validate it into `model`."""
    data, node = read_mapping(path)
    return validate(path, node, data, model, context=context)


def validate(
    path: Path, node: yaml.Node | None, data: object, model: type[M], *, context: Mapping[str, Any] | None = None
) -> M:
    """`model` from `data` read out of `path`; a ConfigError names `file:line: field: problem` per error."""
    try:
        return model.model_validate(data, context=dict(context or {}))
    except ValidationError as exc:
        problems = [_describe(path, node, error) for error in exc.errors()]
        more = len(problems) - MAX_REPORTED
        text = "; ".join(problems[:MAX_REPORTED]) + (f" (and {more} more)" if more > 0 else "")
        raise ConfigError(text) from exc


def nested_error(exc: ValidationError, prefix: Loc = ()) -> FieldError:
    """The first error of a nested validation as a FieldError at `prefix`, to raise from an outer validator."""
    loc, message = _loc_and_message(exc.errors()[0])
    return FieldError(prefix + loc, message)


def _loc_and_message(error: Mapping[str, Any]) -> tuple[Loc, str]:
    loc: Loc = tuple(error["loc"])
    message = str(error["msg"])
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, FieldError):
        return loc + cause.loc, str(cause)
    return loc, message.removeprefix("Value error, ")


def _describe(path: Path, node: yaml.Node | None, error: Mapping[str, Any]) -> str:
    return located(path, node, *_loc_and_message(error))


def located(path: Path, node: yaml.Node | None, loc: Loc, message: str) -> str:
    """`file:line: field: message`, as a validation error is reported (for checks made after validation)."""
    field = field_path(loc)
    return f"{path}:{line_of(node, loc)}: {field}: {message}" if field else f"{path}:{line_of(node, loc)}: {message}"


def field_path(loc: Sequence[str | int]) -> str:
    """`plans[3].steps[0].k` for ("plans", 3, "steps", 0, "k"); pydantic's `[key]` marker is dropped."""
    out = ""
    for part in loc:
        if part == "[key]":
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def line_of(node: yaml.Node | None, loc: Sequence[str | int]) -> int:
    """1-based line of the deepest key or item of `loc` present in the file (a missing key: its parent's)."""
    if node is None:
        return 1
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(
                (kv for kv in node.value if isinstance(kv[0], yaml.ScalarNode) and kv[0].value == str(part)), None
            )
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line
