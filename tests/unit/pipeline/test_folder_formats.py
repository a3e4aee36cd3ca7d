"""The text of each user-document format, and a clear error for a file that cannot be read."""

from __future__ import annotations

import json

import pytest

from pipeline.folder_formats import extract
from secrag.errors import ParseError


def _pdf(*pages: str) -> bytes:
    """A PDF with one page per text (an empty text: a page without text) and a cross-reference table,
    built by hand (no PDF writer needed)."""
    first_page = 4
    kids = " ".join(f"{first_page + 2 * i} 0 R" for i in range(len(pages)))
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[%s]/Count %d>>" % (kids.encode(), len(pages)),
        b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>",
    ]
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode() if text else b""
        contents = first_page + 2 * i + 1
        objects.append(
            b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 144]/Contents %d 0 R/Resources<</Font<</F1 3 0 R>>>>>>"
            % contents
        )
        objects.append(b"<</Length %d>>stream\n%s\nendstream" % (len(stream), stream))
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


MINI_PDF = _pdf("Isolate host T1059")


def test_every_supported_format_becomes_text():
    assert extract("a/readme.md", b"intro\n# Title here\nbody")[:2] == ("Title here", "intro\n# Title here\nbody")
    title, body, _ = extract("p.html", b"<title>T</title><style>x{}</style><p>Hello</p><script>bad()</script>")
    assert title == "T" and body == "T\nHello"
    assert json.loads(extract("d.json", b'{"a": [1]}')[1]) == {"a": [1]}
    assert extract("d.jsonl", b'{"a": 1}\n\n{"b": 2}\n')[1] == '{"a": 1}\n\n{"b": 2}'
    assert extract("c.yaml", b"k: v\n") == ("c", "k: v\n", ())
    title, body, pages = extract("doc.pdf", MINI_PDF)
    assert title == "doc" and "Isolate host T1059" in body and pages == ((1, 0),)


def test_a_pdf_says_where_each_page_starts() -> None:
    title, body, pages = extract("doc.pdf", _pdf("First page text", "", "Third page text"))
    assert [n for n, _ in pages] == [1, 3]  # the empty second page has no text to cite
    assert body[pages[0][1] :].startswith("First page") and body[pages[1][1] :].startswith("Third page")


@pytest.mark.parametrize(
    "rel, data, reason",
    [
        ("x.json", b"{", "invalid JSON"),
        ("x.jsonl", b'{"a":1}\nnope\n', "line 2"),
        ("x.yaml", b"a: [", "invalid YAML"),
        ("x.txt", b"\xff\xfe\xfa", "not UTF-8"),
        ("x.pdf", b"%PDF-1.4 garbage", "unreadable PDF"),
    ],
)
def test_bad_files_raise_parse_errors(rel: str, data: bytes, reason: str):
    with pytest.raises(ParseError, match=reason):
        extract(rel, data)
