"""Technique names in a query: the full name brings its id, a sub-technique's full name hides its
parent's, short names and partial words never match."""

from __future__ import annotations

from serving.search.technique_names import TechniqueNames

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
