"""The sentences of a text and their offsets (serving/mapping/sentences.py), on the shapes threat reports take."""

from __future__ import annotations

import pytest

from serving.mapping.sentences import MAX_CHARS, split


def texts(text: str) -> list[str]:
    found = split(text)
    for s in found:  # every offset points at its sentence in the text as given
        assert text[s.start : s.end] == s.text
    return [s.text for s in found]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "The actor ran cmd.exe with /c whoami. It then used rundll32.exe to load a DLL.",
            ["The actor ran cmd.exe with /c whoami.", "It then used rundll32.exe to load a DLL."],
        ),
        (  # abbreviations, dotted or not, and initials do not end a sentence
            "Tools, e.g. Mimikatz or i.e. its clones, dump credentials. J. Smith et al. saw it in the U.S. "
            "Banks were hit too.",
            [
                "Tools, e.g. Mimikatz or i.e. its clones, dump credentials.",
                "J. Smith et al. saw it in the U.S. Banks were hit too.",
            ],
        ),
        (  # IPs, versions, defanged domains and paths hold dots without a space after them
            "It beacons to 192.168.10.5 and evil[.]com over HTTPS. Version 2.3.1 writes to C:\\Users\\Public\\a.dat. "
            "The payload v4.0 is packed with UPX.",
            [
                "It beacons to 192.168.10.5 and evil[.]com over HTTPS.",
                "Version 2.3.1 writes to C:\\Users\\Public\\a.dat.",
                "The payload v4.0 is packed with UPX.",
            ],
        ),
        (  # a dot before a lower-case word is not an end; ? and ! are ("Yes!" alone is too short to keep)
            'It ran "whoami." then exited. Did it persist? Yes! It added a Run key.',
            ['It ran "whoami." then exited.', "Did it persist?", "It added a Run key."],
        ),
    ],
)
def test_sentence_ends(text: str, expected: list[str]) -> None:
    assert texts(text) == expected


def test_bullets_headings_and_wrapped_lines() -> None:
    text = (
        "Initial Access\n"
        "The group sent spearphishing emails with malicious Word attachments to the finance staff of the\n"
        "victim organisation.\n"
        "\n"
        "Observed behaviour:\n"
        "- creates a scheduled task named Updater for persistence\n"
        "* deletes volume shadow copies with vssadmin\n"
        "  2) exfiltrates archives over an FTP channel\n"
        "(b) uses certutil to download the second stage\n"
    )
    assert texts(text) == [
        "The group sent spearphishing emails with malicious Word attachments to the finance staff of the\n"
        "victim organisation.",
        "creates a scheduled task named Updater for persistence",
        "deletes volume shadow copies with vssadmin",
        "exfiltrates archives over an FTP channel",
        "uses certutil to download the second stage",
    ]
    # The headings "Initial Access" and "Observed behaviour:" are too short to keep; a query is on one line.
    assert split(text)[0].query.endswith("finance staff of the victim organisation.")


def test_fragments_are_dropped_and_offsets_count_code_points() -> None:
    text = "Figure 3\r\n\r\nIOCs:\r\n😈 The implant — written in Go — reads /etc/passwd.\r\nOK."
    found = split(text)
    assert [s.text for s in found] == ["😈 The implant — written in Go — reads /etc/passwd."]
    assert found[0].start == text.index("😈")  # Python indices: the emoji is one code point


def test_long_runs_are_cut_at_a_space() -> None:
    ioc = " ".join(f"hash{i:04d}" for i in range(200))
    found = split(f"Hashes {ioc} were seen.")
    assert len(found) > 1 and all(len(s.text) <= MAX_CHARS for s in found)
    assert " ".join(s.text for s in found) == f"Hashes {ioc} were seen."


def test_nothing_to_map() -> None:
    assert split("") == [] and split("   \n\n  ") == [] and split("Hi.") == []
