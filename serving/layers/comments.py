"""A technique's comment in a result layer: one operand's comments merged once, cut at a cap that says so."""

from __future__ import annotations

COMMENT_CAP = 1000  # characters of a result technique's comment, both operands' lines together
LINE_CAP = COMMENT_CAP // 2 - 1  # one operand's line: both lines and the line break stay within COMMENT_CAP
_CUT = " … (cut: {total:,} characters)"


def cut(text: str, cap: int) -> str:
    """The text, or its start within `cap` characters ending with a note of how long it was."""
    if len(text) <= cap:
        return text
    note = _CUT.format(total=len(text))
    return text[: max(0, cap - len(note))] + note
