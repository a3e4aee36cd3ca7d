"""Technique names in a query: the full name brings its id, a sub-technique's full name hides its
parent's, short names and partial words never match."""

from __future__ import annotations

from serving.search.technique_names import MAX_IDS, TechniqueNames, normalise

NAMES = TechniqueNames.from_lookup(
    {
        "T1003": "OS Credential Dumping",
        "T1003.003": "OS Credential Dumping: NTDS",
        "T1036.003": "Masquerading: Rename Legitimate Utilities",
        "T1036": "Masquerading",
        "T1102": "Web Service",
        "T9999": "Hook",  # too short to be matched in prose
    }
)


def test_the_most_specific_name_wins_and_hides_its_parent() -> None:
    assert NAMES.find("OS Credential Dumping: NTDS") == ("T1003.003",)
    assert NAMES.find("detect os credential-dumping via ntdsutil") == ("T1003",)
    assert NAMES.find("Masquerading: rename legitimate utilities") == ("T1036.003",)


def test_several_names_and_whole_words_only() -> None:
    assert NAMES.find("masquerading over a web service") == ("T1036", "T1102")
    assert NAMES.find("web services") == ()  # 'services' is not the name
    assert NAMES.find("hook the api") == ()


def scan_every_name(names: TechniqueNames, query: str) -> tuple[str, ...]:
    """find() as a scan of every name, longest first: what the first-word index must keep."""
    text, found = normalise(query), []
    for name, tid in names.names:
        if name in text:
            found.append(tid)
            text = text.replace(name, " | ")
            if len(found) == MAX_IDS:
                break
    return tuple(found)


def test_the_first_word_index_finds_what_a_scan_of_every_name_finds() -> None:
    lookup = {
        "T1003": "OS Credential Dumping",
        "T1003.003": "OS Credential Dumping: NTDS",
        "T1003.001": "OS Credential Dumping: LSASS Memory",
        "T1036": "Masquerading",
        "T1036.003": "Masquerading: Rename Legitimate Utilities",
        "T1102": "Web Service",
        "T1102.002": "Web Service: Bidirectional Communication",
        "T1071.001": "Application Layer Protocol: Web Protocols",
        "T1071": "Application Layer Protocol",
        "T1505.003": "Server Software Component: Web Shell",
        "T1059": "Command and Scripting Interpreter",
    }
    names = TechniqueNames.from_lookup(lookup)
    words = ["web", "service", "shell", "os", "credential", "dumping", "ntds", "lsass", "memory", "protocol", "and"]
    queries = [f"{a}: {b} {w}" for a in lookup.values() for b in lookup.values() for w in words]
    queries += [" ".join(words[i:] + words[:i]) for i in range(len(words))]
    for query in queries:
        assert names.find(query) == scan_every_name(names, query), query
