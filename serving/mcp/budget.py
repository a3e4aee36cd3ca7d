"""Fit a tool's JSON answer into a response budget in characters: the most useful fields first, the cuts said.

The budget counts the characters (code points) of the answer as compact JSON, the text an MCP client
reads. A tool's Priority lists, as data, what goes first when the answer is over budget: fields left
out whole (`omit`), text fields shortened (`shorten`, never below TEXT_FLOOR before the fallback) and
lists or maps trimmed from the end (`trim`, after the omits and shortens), in that tool's order. After the
first step that makes the answer fit, the trimmed lists and shortened texts get back whatever room a later
step freed, the last cut first. An answer still over budget then has every string shortened and, last, its
top-level fields left out from the end. What was cut is said under NOTE_KEY; an answer within its budget is
returned untouched. An answer that pages (a Priority's `resume`) whose items were trimmed gets a cursor after the
last item kept, so that its next page starts with the first one left out.

Fitting is linear in the answer's size: the answer is serialised once and copied once, each value a step
removes or trims is measured once when the step reaches it, and each step finds its cap or count by
arithmetic over those sizes (serving/mcp/budget_tree.py), never by serialising the answer again; the fitted
answer is serialised once more to check it.

Paths name fields by key, `[]` for every item of a list and `*` for every value of a map:
`results[].snippet`, `techniques[].*.top`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from serving.contract.mcp_budget import DEFAULT_MCP_CHARS, MAX_CHARS, MIN_CHARS
from serving.mcp.budget_paths import ELLIPSIS, compact
from serving.mcp.budget_tree import NOTE_KEY, Resume, Work

TEXT_FLOOR = 40  # a declared text field keeps at least this many characters before the fallback

__all__ = [
    "DEFAULT_MCP_CHARS",
    "ELLIPSIS",
    "MAX_CHARS",
    "MIN_CHARS",
    "NOTE_KEY",
    "TEXT_FLOOR",
    "Resume",
    "compact",
    "fit",
    "size",
]
RESUME_ROOM = 32  # kept free for a cursor naming the last item kept (a technique id where null was)

Action = Literal["omit", "shorten", "trim"]


@dataclass(frozen=True)
class Step:
    action: Action
    path: str


def omit(path: str) -> Step:
    """Leave the field out whole (a map key; bulky extras such as a Navigator layer)."""
    return Step("omit", path)


def shorten(path: str) -> Step:
    """Shorten the strings at path."""
    return Step("shorten", path)


def trim(path: str) -> Step:
    """Keep the first items of the lists (or the first entries of the maps) at path."""
    return Step("trim", path)


@dataclass(frozen=True)
class Priority:
    """What a tool gives up first when its answer is over budget, in order: omits and shortens before trims (a
    trimmed item given back comes back as it was trimmed); and, for an answer that pages, how to resume it."""

    steps: tuple[Step, ...] = ()
    resume: Resume | None = None

    def __post_init__(self) -> None:
        actions = [s.action for s in self.steps]
        if "trim" in actions and any(a != "trim" for a in actions[actions.index("trim") :]):
            raise ValueError(f"trims come after the omits and shortens: {[s.path for s in self.steps]}")


def size(value: Any) -> int:  # noqa: ANN401 - any JSON value
    """The answer's length in characters as compact JSON (what the budget counts)."""
    return len(compact(value))


def fit(answer: dict[str, Any], max_chars: int, priority: Priority, text: str | None = None) -> dict[str, Any]:
    """The answer within max_chars characters of compact JSON (`text`, when the caller has it), what was cut
    said under NOTE_KEY."""
    text = compact(answer) if text is None else text
    if len(text) <= max_chars:
        return answer
    work = Work(text, max_chars, RESUME_ROOM if priority.resume and priority.resume.cursor in answer else 0)
    done: list[Step] = []
    for step in priority.steps:
        if step.action == "omit":
            work.omit(step.path)
        elif step.action == "shorten":
            work.shorten(step.path, TEXT_FLOOR)
        else:
            work.trim(step.path)
        done.append(step)
        if work.fits():
            break
    for step in reversed(done):  # give back the room later steps freed, to the last cut first
        if step.action == "shorten":
            work.lengthen(step.path)
        elif step.action == "trim":
            work.untrim(step.path)
    if not work.fits():
        work.shorten_every_text()
    while not work.fits() and work.drop_last_key():
        pass
    if priority.resume is not None:
        work.resume(priority.resume)
    fitted = work.answer()
    if size(fitted) > max_chars:  # only a note naming many paths can still be over: say less
        fitted = {NOTE_KEY: {"max_chars": max_chars, "omitted": ["*"]}}
    return fitted
