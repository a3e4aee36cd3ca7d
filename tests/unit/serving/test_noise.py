"""The plan's noise filter: off, on, aggressive."""

from __future__ import annotations

from serving.plans.noise import trim

PASSAGE = """## Detection

Copyright (c) 2024 Example Corp. All rights reserved.
SPDX-License-Identifier: MIT
The rule flags lsass access.

```powershell
# dump the process
rundll32.exe comsvcs.dll, MiniDump 624 C:\\temp\\lsass.dmp full
// trailing note
```

#TODO a stray comment line
<b>bold</b> text with ![diagram](https://example.org/d.png)
https://example.org/only-a-url



References:
https://attack.mitre.org/techniques/T1003/001/
"""


def test_off_keeps_the_passage() -> None:
    assert trim(PASSAGE, "off") == PASSAGE


def test_on_drops_boilerplate_and_code_comments() -> None:
    text = trim(PASSAGE, "on")
    assert "Copyright" not in text and "SPDX" not in text and "# dump the process" not in text
    assert "// trailing note" not in text and "\n\n\n" not in text
    assert "rundll32.exe comsvcs.dll" in text and text.startswith("## Detection")  # headings and code stay
    assert "#TODO a stray comment line" in text and "References:" in text  # only `aggressive` goes further


def test_aggressive_also_drops_comments_urls_markup_and_references() -> None:
    text = trim(PASSAGE, "aggressive")
    assert "## Detection" in text and "rundll32.exe" in text and "bold text with" in text
    for gone in ("#TODO a stray comment", "<b>", "![diagram]", "only-a-url", "References:", "attack.mitre.org"):
        assert gone not in text


def test_lists_directives_and_block_comments() -> None:
    text = "Steps:\n* open the console\n* run the tool\n/* a block\n * comment\n */\n```c\n#include <x.h>\n# note\n```"
    trimmed = trim(text, "on")
    assert "* open the console" in trimmed and "* run the tool" in trimmed  # a Markdown list stays
    assert "#include <x.h>" in trimmed and "# note" not in trimmed
    assert "a block" not in trimmed and "comment" not in trimmed


def test_a_passage_that_is_all_noise_is_kept() -> None:
    assert trim("Copyright 2024 Example", "on") == "Copyright 2024 Example"
