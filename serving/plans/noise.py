"""The plan's noise filter: trims code comments and boilerplate from context passages, so an LLM's context
holds what the documents say. Levels:

- `off`: passages as stored.
- `on`: licence and copyright lines, comment-only lines of fenced code blocks and of C-style comments
  (`//`, `/* ... */`), and runs of blank lines.
- `aggressive`: also `#` comment lines outside Markdown headings, lines that are only a URL, HTML tags,
  Markdown images, and a trailing `References:` block.

Citations keep the stored chunk's character span; only the passage text given to the model is trimmed.
"""

from __future__ import annotations

import re

from serving.contract.plan_models import NoiseFilter

_BOILERPLATE = re.compile(
    r"^\W*(copyright\b|\(c\)\s*\d{4}|licensed under\b|spdx-license-identifier\b|all rights reserved\b)", re.I
)
_FENCE = re.compile(r"^\s*(```|~~~)")
# A code line that is only a comment: not a #! shebang, nor a preprocessor or PowerShell directive.
_CODE_COMMENT = re.compile(
    r"^\s*(#(?!!|\s*(include|define|undef|if|ifdef|ifndef|elif|else|endif|pragma|requires|region|endregion)\b)"
    r"|//|--\s|;)"
)
_LINE_COMMENT = re.compile(r"^\s*//")
_BLOCK_OPEN = re.compile(r"^\s*/\*")
_BLOCK_CLOSE = re.compile(r"\*/\s*$")
_HASH_COMMENT = re.compile(r"^\s*#(?!#{0,5}\s+\S)")  # `#` not followed by a Markdown heading's space
_URL_ONLY = re.compile(r"^\s*(?:[-*]\s+)?<?https?://\S+>?\s*$")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>\n]{0,200}>")
_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
_REFERENCES = re.compile(r"^\s*references?:?\s*$", re.I)
_BLANK_RUNS = re.compile(r"\n{3,}")


def trim(text: str, level: NoiseFilter) -> str:
    """The passage without the noise the level names (see the module doc)."""
    if level == "off":
        return text
    aggressive = level == "aggressive"
    kept: list[str] = []
    in_code = in_block = False
    for line in text.splitlines():
        if in_block:  # inside a /* ... */ comment (a Markdown `* item` elsewhere is a list, kept)
            in_block = not _BLOCK_CLOSE.search(line)
            continue
        if _BLOCK_OPEN.match(line):
            in_block = not _BLOCK_CLOSE.search(line)
            continue
        if _FENCE.match(line):
            in_code = not in_code
            kept.append(line)
            continue
        if _BOILERPLATE.match(line):
            continue
        if in_code and _CODE_COMMENT.match(line):
            continue
        if not in_code and _LINE_COMMENT.match(line):
            continue
        if aggressive and not in_code:
            if _REFERENCES.match(line):
                break  # a trailing references block: the citations carry the document's URL
            if _HASH_COMMENT.match(line) or _URL_ONLY.match(line):
                continue
            line = _IMAGE.sub("", _HTML_TAG.sub("", line))
        kept.append(line.rstrip())
    trimmed = _BLANK_RUNS.sub("\n\n", "\n".join(kept)).strip()
    return trimmed or text.strip()  # a passage that was all noise stays as it was, not empty
