"""The MCP response budget (serving/mcp/budget.py) and the per-tool priorities it reads."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from serving.mcp.budget import ELLIPSIS, MIN_CHARS, NOTE_KEY, Priority, fit, omit, size, trim
from serving.mcp.priorities import COVERAGE, PRIORITIES, SEARCH


def search_answer(n: int = 10, text: int = 600) -> dict[str, Any]:
    return {
        "results": [
            {
                "doc_id": f"sigma:rule-{i}",
                "chunk_id": f"sigma:rule-{i}#0",
                "source": "sigma",
                "title": f"Rule {i}",
                "url": f"https://example.org/{i}",
                "score": 1 - i / 100,
                "exact": False,
                "scores": {"fts": {"score": 0.5, "rank": i + 1}, "vector": {"score": 0.7, "rank": i + 1}},
                "techniques": ["T1003", "T1003.001"],
                "platforms": ["windows"],
                "snippet": "lsass " * (text // 6),
                "text": None,
                "metadata": {"level": "high", "status": "stable", "author": "x" * 80},
                "location": {"char_start": 0, "char_end": 500, "heading": None, "pages": None, "media_type": None},
            }
            for i in range(n)
        ],
        "query_type": "default",
        "enriched_query": "lsass memory credential dumping " * 5,
        "model": "all-MiniLM-L6-v2",
        "corrections": {},
        "took_ms": 12.5,
        "truncated": False,
        "vector_threshold": None,
        "below_vector_threshold": 0,
    }


def test_an_answer_within_its_budget_is_untouched() -> None:
    answer = search_answer(2, 50)
    assert fit(answer, size(answer), SEARCH) is answer


def test_search_keeps_ids_titles_scores_and_says_what_was_cut() -> None:
    answer = search_answer()
    fitted = fit(answer, 2000, SEARCH)
    assert size(fitted) <= 2000
    note = fitted[NOTE_KEY]
    kept = fitted["results"]
    assert kept and [r["doc_id"] for r in kept] == [r["doc_id"] for r in answer["results"][: len(kept)]]
    for result in kept:
        assert {"doc_id", "chunk_id", "title", "score", "source", "url"} <= result.keys()
        assert "scores" not in result and "metadata" not in result
    assert note["max_chars"] == 2000
    assert note["dropped"] == {"results": 10 - len(kept)}
    assert "results[].scores" in note["omitted"] and "results[].metadata" in note["omitted"]
    cap = note["shortened"]["results[].snippet"]
    assert all(len(r["snippet"]) <= cap + len(ELLIPSIS) for r in kept)
    assert kept[0]["snippet"].endswith(ELLIPSIS)


def test_room_freed_by_a_trim_goes_back_to_the_shortened_texts() -> None:
    fitted = fit(search_answer(3, 3000), 3000, SEARCH)
    assert size(fitted) <= 3000
    assert size(fitted) > 2700  # the texts were lengthened again after the trim, not left at the floor


def test_trim_and_omit_reach_nested_lists_and_map_values() -> None:
    answer = {
        "techniques": [
            {"id": f"T{i}", **{k: {"count": 9, "top": list(range(30))} for k in ("a", "b")}} for i in range(5)
        ],
        "layer": {"x": "y" * 5000},
    }
    fitted = fit(answer, 900, Priority((omit("layer"), trim("techniques[].*.top"), trim("techniques"))))
    assert size(fitted) <= 900 and "layer" not in fitted
    assert fitted[NOTE_KEY]["omitted"] == ["layer"]
    assert len(fitted["techniques"]) == 5  # the items went before the techniques
    assert {len(t[k]["top"]) for t in fitted["techniques"] for k in "ab"} == {
        30 - fitted[NOTE_KEY]["dropped"]["techniques[].*.top"] // 10
    }


def _random_json(rng: random.Random, depth: int = 0) -> Any:  # noqa: ANN401
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice([rng.random(), rng.randint(0, 10**6), None, True, "ü" * rng.randint(0, 900)])
    if roll < 0.65:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 12))]
    return {f"k{i}": _random_json(rng, depth + 1) for i in range(rng.randint(0, 10))}


@pytest.mark.parametrize("tool", sorted(PRIORITIES))
def test_any_answer_fits_any_budget(tool: str) -> None:
    rng = random.Random(tool)
    for _ in range(6):
        answer = {"results": _random_json(rng), "text": "x" * rng.randint(0, 3000), "more": _random_json(rng)}
        for budget in (MIN_CHARS, 1500, 3000):
            assert size(fit(answer, budget, PRIORITIES[tool])) <= budget


def coverage_answer(techniques: int) -> dict[str, Any]:
    """A coverage-shaped answer: per technique its kinds' items, analytics with log sources, and a layer."""

    def technique(i: int) -> dict[str, Any]:
        items = [{"doc_id": f"sigma:r-{i}-{j}", "title": f'Rule {j} "of" {i}\n' + "x" * 40} for j in range(3)]
        refs = [{"name": "WinEventLog:Sysmon", "channel": f"EventCode={j}"} for j in range(4)]
        need = {"analytic_id": f"AN{i:04d}", "log_sources": refs}
        return {
            "technique_id": f"T{1000 + i}",
            **{
                k: {"count": 12, "by_source": {"sigma": 9, "elastic": 3}, "top": items} for k in ("detections", "tests")
            },
            "telemetry": [{"logsource": {"product": "windows"}, "schemas": ["ossem:x"]}] * 3,
            "analytics": [{"platform": p, "analytics": [need] * 3} for p in ("Windows", "Linux")],
        }

    layer = [{"techniqueID": f"T{1000 + i}", "comment": "z" * 120} for i in range(techniques)]
    return {"techniques": [technique(i) for i in range(techniques)], "layer": {"techniques": layer}}


@pytest.mark.parametrize("budget", [MIN_CHARS, 20_000])
def test_fitting_serialises_a_bounded_multiple_of_the_answer_whatever_its_size(
    monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """Linear: the characters serialised while fitting, per character of the answer, do not grow with the answer
    (a search over caps that re-serialised the answer at each probe grew with the log of its size, and more)."""
    dumps = json.dumps
    serialised: list[int] = []

    def counting(value: Any, **kwargs: Any) -> str:  # noqa: ANN401
        text = dumps(value, **kwargs)
        serialised.append(len(text))
        return text

    monkeypatch.setattr(json, "dumps", counting)
    per_char = []
    for techniques in (20, 160, 1280):  # about 50 KB, 400 KB and 3.2 MB
        answer = coverage_answer(techniques)
        whole = size(answer)
        serialised.clear()
        fitted = fit(answer, budget, COVERAGE)
        assert size(fitted) <= budget and fitted[NOTE_KEY]["omitted"][0] == "layer"
        per_char.append(sum(serialised) / whole)
    assert max(per_char) < 6  # the answer once to measure it, its parts as each step reaches them, the fitted once
    assert per_char[-1] <= per_char[0] * 1.1


def test_a_paged_answer_trimmed_resumes_after_the_last_item_kept() -> None:
    answer = {**coverage_answer(40), "total": 90, "truncated": True, "next_cursor": "T1039"}
    fitted = fit(answer, 4000, COVERAGE)
    kept = fitted["techniques"]
    assert size(fitted) <= 4000 and 0 < len(kept) < 40
    assert fitted[NOTE_KEY]["dropped"]["techniques"] == 40 - len(kept)
    assert fitted["next_cursor"] == kept[-1]["technique_id"] and fitted["truncated"] is True
    last_page = {**coverage_answer(40), "total": 40, "truncated": False, "next_cursor": None}
    fitted = fit(last_page, 4000, COVERAGE)
    assert fitted["next_cursor"] == fitted["techniques"][-1]["technique_id"] and fitted["truncated"] is True
    whole = fit(last_page, size(last_page), COVERAGE)
    assert whole["next_cursor"] is None and whole["truncated"] is False


def test_a_priority_trims_after_it_omits_and_shortens() -> None:
    with pytest.raises(ValueError, match="trims come after"):
        Priority((trim("results"), omit("layer")))
