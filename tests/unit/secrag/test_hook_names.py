"""Webhook names: a repository's owner/name (any case, as GitHub's) or a feed source's name; the registry's
sources on one repository share its hook (ATT&CK's domains, procedures and detections on attack-stix-data)."""

from __future__ import annotations

import pytest

from pipeline.pokes import hooks_of
from pipeline.sources.registry import default_registry
from secrag.hook_names import hook_name, repository_of


@pytest.mark.parametrize(
    ("raw", "name"),
    [("SigmaHQ/sigma", "sigmahq/sigma"), ("mitre-attack/attack-stix-data", "mitre-attack/attack-stix-data"),
     (" cisa_kev ", "cisa_kev"), ("LOLBAS-Project/LOLBAS", "lolbas-project/lolbas")],
)  # fmt: skip
def test_hook_names_are_lower_case(raw: str, name: str) -> None:
    assert hook_name(raw) == name


@pytest.mark.parametrize("raw", ["", "a/b/c", "/sigma", "sigma/", "../etc", "owner/..", "_feed", "a b", "x" * 101])
def test_what_names_no_hook_is_refused(raw: str) -> None:
    with pytest.raises(ValueError, match="names no webhook"):
        hook_name(raw)


@pytest.mark.parametrize(
    ("url", "hook"),
    [("https://github.com/SigmaHQ/sigma.git", "sigmahq/sigma"), ("https://github.com/mitre/cti", "mitre/cti"),
     ("https://git.example.org/mirrors/detection/SigmaHQ/sigma.git/", "sigmahq/sigma"),
     ("file:///srv/git/sigma.git", "git/sigma"), ("https://example.org/feed.json", None)],
)  # fmt: skip
def test_a_repository_s_hook_is_its_url_s_owner_and_name(url: str, hook: str | None) -> None:
    assert repository_of(url) == hook


def test_every_source_on_a_repository_reads_its_hook_and_its_own_name() -> None:
    registry = default_registry()
    on_attack = sorted(n for n, s in registry.items() if "mitre-attack/attack-stix-data" in hooks_of(s))
    assert len(on_attack) >= 7 and {"mitre_attack", "mitre_attack_ics", "mitre_attack_detections"} <= set(on_attack)
    assert hooks_of(registry["sigma"]) == ["sigma", "sigmahq/sigma"]
    assert hooks_of(registry["cisa_kev"]) == ["cisa_kev"]  # a feed: its own name only
    for spec in registry.values():
        assert all(hook_name(h) == h for h in hooks_of(spec))
