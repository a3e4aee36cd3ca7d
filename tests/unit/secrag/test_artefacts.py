"""Artefact normalisation: hashes in any case, Windows names and paths as the sources write them, Unix names
exactly, and the forms a looked-up value is tried in."""

from __future__ import annotations

import re

import pytest

from secrag import artefacts
from secrag.artefacts import Probe

SYSTEM32 = "%system32%\\certutil.exe"


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("41046CE853788277DA0D7E8C4E0A3123", "md5"),
        ("e9bca8f4b8c60688eacc7d18c6ba7777c181bb84", "sha1"),
        (" 090d409f86430e078694e621ad0bd5e458d32aa727f0eb99bda3961577df8d49 ", "sha256"),
    ],
)
def test_a_hash_is_its_algorithm_in_lower_case(value: str, kind: str) -> None:
    found = artefacts.file_hash("SHA", value)
    assert found is not None
    assert (found.kind, found.key, found.folded) == (kind, value.strip().lower(), True)
    assert artefacts.file_hash("Authentihash.SHA1", value, "authentihash").kind == "authentihash"  # type: ignore[union-attr]


@pytest.mark.parametrize("value", ["", "''", "-", "abc", "g" * 32, "a" * 56, None, "a" * 33])
def test_anything_else_is_no_hash(value: str | None) -> None:
    assert artefacts.file_hash("MD5", value) is None


@pytest.mark.parametrize(
    "path",
    [
        "C:\\Windows\\System32\\certutil.exe",
        "c:\\windows\\system32\\CERTUTIL.EXE",
        "C:/Windows/System32/certutil.exe",
        "'C:\\WINDOWS\\System32\\certutil.exe'",
        "%SYSTEM32%\\certutil.exe",
        "%windir%\\system32\\certutil.exe",
        "%SystemRoot%\\System32\\certutil.exe",
        "\\SystemRoot\\System32\\certutil.exe",
        "\\\\?\\C:\\Windows\\System32\\certutil.exe",
        "C:\\Windows\\\\System32\\certutil.exe",
    ],
)
def test_the_ways_sources_write_system32_are_one_path(path: str) -> None:
    assert artefacts.normal_path(path) == SYSTEM32


@pytest.mark.parametrize(
    ("path", "normal"),
    [
        ("C:\\Windows\\SysWOW64\\certutil.exe", "%syswow64%\\certutil.exe"),
        ("%SYSWOW64%", "%syswow64%"),
        ("C:\\Windows\\explorer.exe", "%windir%\\explorer.exe"),
        ("C:\\Windowsold\\x.exe", "c:\\windowsold\\x.exe"),  # a root ends at a separator
        ("C:\\Program Files (x86)\\Foo\\a.exe", "%programfiles%\\foo\\a.exe"),
        ("%ProgramFiles%\\Foo\\a.exe", "%programfiles%\\foo\\a.exe"),
        ("C:\\ProgramData\\Microsoft\\a.exe", "%programdata%\\microsoft\\a.exe"),
        (
            "C:\\Users\\<username>\\AppData\\Local\\Microsoft\\Teams\\update.exe",
            "%localappdata%\\microsoft\\teams\\update.exe",
        ),
        ("C:\\Users\\bob\\AppData\\Roaming\\x.dll", "%appdata%\\x.dll"),
        ("C:\\Users\\bob\\Desktop\\x.dll", "%userprofile%\\desktop\\x.dll"),
        ("D:\\Tools\\x.exe\\", "d:\\tools\\x.exe"),
    ],
)
def test_windows_roots_are_one_variable_each(path: str, normal: str) -> None:
    assert artefacts.normal_path(path) == normal


def test_a_path_with_placeholders_matches_any_value_in_their_place() -> None:
    found = artefacts.windows_path("ExpectedLocations", "%LOCALAPPDATA%\\GitKraken\\app-%VERSION%\\x.dll")
    assert found is not None and found.pattern is not None
    pattern = re.compile(found.pattern)
    assert pattern.match(artefacts.normal_path("C:\\Users\\amy\\AppData\\Local\\GitKraken\\app-9.1.2\\X.DLL"))
    assert not pattern.match(artefacts.normal_path("C:\\Users\\amy\\AppData\\Local\\GitKraken\\app-9\\sub\\x.dll"))
    lolbas = artefacts.windows_path("Full_Path.Path", "C:\\Program Files\\Microsoft SQL Server\\<version>\\DTS\\x.exe")
    assert lolbas is not None and re.match(
        lolbas.pattern or "", "%programfiles%\\microsoft sql server\\150\\dts\\x.exe"
    )
    assert artefacts.windows_path("Full_Path.Path", "C:\\Windows\\System32\\a.exe").pattern is None  # type: ignore[union-attr]


def test_windows_names_fold_and_unix_names_do_not() -> None:
    windows = artefacts.windows_name("Name", "Certutil.exe")
    assert windows is not None and (windows.key, windows.folded, windows.value) == (
        "certutil.exe",
        True,
        "Certutil.exe",
    )
    from_path = artefacts.windows_name("Full_Path.Path", "C:\\Windows\\System32\\Certutil.exe")
    assert from_path is not None and from_path.key == "certutil.exe"
    unix = artefacts.unix_name("name", "R")
    assert unix is not None and (unix.key, unix.folded) == ("R", False)
    assert artefacts.windows_name("Filename", "''") is None and artefacts.unix_name("name", "x\ny") is None


def test_a_hash_is_probed_in_lower_case_only() -> None:
    assert artefacts.probes(" ABCDEF0123456789ABCDEF0123456789 ") == [Probe("abcdef0123456789abcdef0123456789", True)]


def test_a_name_is_probed_as_written_and_folded() -> None:
    assert artefacts.probes("Certutil.exe") == [Probe("Certutil.exe", False), Probe("certutil.exe", True)]
    assert artefacts.probes("bash") == [Probe("bash", False), Probe("bash", True)]


def test_a_path_is_probed_as_a_path_and_by_its_file_name() -> None:
    found = artefacts.probes("C:\\Windows\\System32\\Version.dll")
    assert Probe("%system32%\\version.dll", True, path=True) in found
    assert Probe("version.dll", True) in found and Probe("Version.dll", False) in found
    assert Probe("bash", False) in artefacts.probes("/usr/bin/bash")
    assert artefacts.probes("   ") == [] and artefacts.probes("x" * 1001) == []


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("certutil.exe", True),
        ("ld.so", True),
        ("C:\\Windows\\System32\\version.dll", True),
        ("e9bca8f4b8c60688eacc7d18c6ba7777c181bb84", True),
        ("T1003.001", False),
        ("AML.T0051", False),
        ("CVE-2021-44228", False),
        ("1.2", False),
        ("lsass memory dump", False),
        ("run certutil.exe", False),
        ("mimikatz", False),
        ("e.g.", False),
    ],
)
def test_only_hashes_and_file_names_are_looked_up_by_search(query: str, names: bool) -> None:
    assert artefacts.names_an_artefact(query) is names


def test_repeats_are_dropped_in_order() -> None:
    a = artefacts.windows_name("Tags", "gdrv.sys")
    b = artefacts.windows_name("Tags", "GDRV.SYS")
    c = artefacts.windows_name("OriginalFilename", "gdrv.sys")
    assert artefacts.unique([a, None, b, c]) == (a, c)
