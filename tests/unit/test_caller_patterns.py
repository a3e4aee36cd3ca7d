"""Every regular expression of the core and the API (the code that sees callers' text: queries, map texts,
lookups, document passages) runs in time linear in its subject.

Python's `re` backtracks, and a pattern that scans a run to its end and fails from each start position is
quadratic: a 4 KB run of full stops held the process for seconds (issue 43). Time is not asserted here.
Each pattern is run by PCRE2, the same kind of backtracking engine, with its start-up optimisations off and a
callout before every item of the pattern, on adversarial subjects (runs of the pattern's own characters, alone,
interleaved with a letter, and ending in another kind) of three lengths. Its work is counted as the callouts
plus the characters the match moved over between them (a repeat consumes a run between two callouts). The
work must stay within a linear budget, and grow by the same amount from the first length to the second as
from the second to the third: a quadratic pattern's second difference is a fifth of its work at these lengths.
Then `re` itself runs each pattern on 256 KB of the same subjects.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import pcre2
import pytest

PACKAGES = ("secrag", "serving")
# Modules whose patterns read only the project's own files (SQL, migrations, dumps), never a caller's text.
TRUSTED_INPUT = ("secrag.db.",)
LENGTHS = (400, 800, 1200)  # subject lengths for the work counts: past every bounded repeat's reach
STEPS_PER_CHAR = 2000  # a linear budget: more work than this per subject character aborts the match
CURVATURE = 0.01  # the second difference's largest share of the work at the longest length
BIG = 256 * 1024
_AUTO_CALLOUT = 0x4  # PCRE2_AUTO_CALLOUT: the callout runs before every item of the pattern


def _modules() -> Iterator[str]:
    for package in PACKAGES:
        root = importlib.import_module(package)
        yield package
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if not info.name.startswith(TRUSTED_INPUT):
                yield info.name


def _compiled(value: object, depth: int = 0) -> Iterator[re.Pattern[str]]:
    if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
        yield value
    elif depth < 3 and isinstance(value, tuple | list | frozenset | set):
        for item in value:
            yield from _compiled(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            yield from _compiled(item, depth + 1)


_RE_CALLS = {"compile", "search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"}


def _literals(module: str) -> Iterator[re.Pattern[str]]:
    """Patterns written as literals in calls such as re.search(r"...", text) inside functions."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
            and node.func.attr in _RE_CALLS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield re.compile(node.args[0].value)


def _patterns() -> dict[str, re.Pattern[str]]:
    found: dict[tuple[str, int], tuple[str, re.Pattern[str]]] = {}
    for module in _modules():
        loaded = importlib.import_module(module)
        named = [(f"{module}.{name}", p) for name, value in vars(loaded).items() for p in _compiled(value)]
        named += [(f"{module} (literal)", p) for p in _literals(module)]
        for name, pattern in named:
            found.setdefault((pattern.pattern, pattern.flags), (name, pattern))
    return {f"{name}: {pattern.pattern[:60]}": pattern for name, pattern in found.values()}


PATTERNS = _patterns()


def _alphabet(pattern: re.Pattern[str]) -> list[str]:
    """The pattern's own punctuation and symbols, and the kinds of character its classes name."""
    own = {ch for ch in pattern.pattern if not ch.isalnum() and not ch.isspace() and ch != "\\"}
    return sorted(own | {"a", "Z", "1", " ", "\t", "\n", ".", "-", "_", "\\", "/", "T"})


def _subjects(pattern: re.Pattern[str], length: int) -> Iterator[str]:
    for ch in _alphabet(pattern):
        yield ch * length
        if ch != "a":
            yield (ch + "a") * (length // 2)
        yield ch * (length - 1) + ("a" if ch == " " else " ")  # a run that ends in another kind


def _flags(pattern: re.Pattern[str]) -> int:
    flags = pcre2.NOOPT | _AUTO_CALLOUT
    for ours, theirs in (
        (re.IGNORECASE, pcre2.IGNORECASE),
        (re.MULTILINE, pcre2.MULTILINE),
        (re.DOTALL, pcre2.DOTALL),
        (re.VERBOSE, pcre2.VERBOSE),
        (re.ASCII, pcre2.ASCII),
    ):
        if pattern.flags & ours:
            flags |= theirs
    return int(flags)


def _work(pattern: re.Pattern[str], subject: str) -> int:
    """PCRE2's work to find every match of the pattern in the subject: callouts plus the characters moved over
    between them within each attempt (over the linear budget: aborted, so the count ends past it)."""
    budget = STEPS_PER_CHAR * len(subject) + 1000
    state = {"work": 0, "start": -1, "at": 0}

    def step(block: pcre2.CalloutBlock) -> int:
        start, at = block.span(0)
        if start != state["start"]:  # a new attempt: counted from its start position
            state["start"], state["at"] = start, start
        state["work"] += 1 + abs(at - state["at"])
        state["at"] = at
        return int(pcre2.CalloutReturn.ABORT if state["work"] > budget else pcre2.CalloutReturn.PASS)

    engine = pcre2.compile(pattern.pattern.replace(r"\Z", r"\z"), _flags(pattern), jit=False, callout=step)
    try:
        for _ in engine.finditer(subject):
            pass
    except pcre2.LibraryError:  # the callout's abort (PCRE2_ERROR_CALLOUT)
        pass
    return state["work"]


def _linear(pattern: re.Pattern[str], subjects: tuple[str, ...]) -> tuple[bool, tuple[int, ...]]:
    work = tuple(_work(pattern, subject) for subject in subjects)
    first, second, third = work
    within = third <= STEPS_PER_CHAR * len(subjects[-1])
    return within and abs(first - 2 * second + third) <= CURVATURE * third + 200, work


def test_the_patterns_are_found() -> None:
    """The enumeration sees the patterns that read caller input (the map's splitter, the query analysis)."""
    names = "\n".join(PATTERNS)
    assert "serving.mapping.sentences._SENTENCE_END" in names
    assert "serving.search.analysis._ID_PATTERNS" in names
    assert "secrag.enrichment._TECHNIQUE" in names
    assert len(PATTERNS) > 40


@pytest.mark.parametrize(
    ("former", "subject"),
    [
        (r"[.!?…]+[\"'”’)\]]*(?=\s)", "."),  # the map splitter's end of a sentence (issue 43)
        (r"[ \t]*+(?:[-*]|\(?\d{1,3}[.)])[ \t]+", " "),  # a possessive run searched from every position
        (r"(?=[\w.\-]*[\d._-])[A-Za-z0-9][\w.\-]{1,126}", "az"),  # an unbounded lookahead
    ],
)
def test_a_quadratic_pattern_is_caught(former: str, subject: str) -> None:
    """The check itself: patterns that were quadratic here fail it."""
    subjects = tuple(subject * (n // len(subject)) for n in LENGTHS)
    assert not _linear(re.compile(former), subjects)[0]


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_work_grows_linearly(name: str) -> None:
    pattern = PATTERNS[name]
    for subjects in zip(*(_subjects(pattern, n) for n in LENGTHS), strict=True):
        linear, work = _linear(pattern, subjects)
        assert linear, f"{name}: work {work} at {LENGTHS} characters of {subjects[0][:6]!r}..."


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_re_reads_256_kb(name: str) -> None:
    """Python's own engine over 256 KB of each subject: finishes (a quadratic pattern would take hours)."""
    pattern = PATTERNS[name]
    for subject in _subjects(pattern, BIG):
        pattern.search(subject)
        for _ in pattern.finditer(subject):
            pass
