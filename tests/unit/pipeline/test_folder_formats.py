"""The text of each user-document format, and a clear error for a file that cannot be read."""

from __future__ import annotations

import json

import pytest

from pipeline.folder_formats import extract
from secrag.errors import ParseError


def _pdf(text: str) -> bytes:
    """A one-page PDF with a cross-reference table, built by hand (no PDF writer needed)."""
    stream = f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode()
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 144]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>",
        b"<</Length %d>>stream\n%s\nendstream" % (len(stream), stream),
        b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>",
    ]
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
    assert extract("a/readme.md", b"intro\n# Title here\nbody") == ("Title here", "intro\n# Title here\nbody")
    title, body = extract("p.html", b"<title>T</title><style>x{}</style><p>Hello</p><script>bad()</script>")
    assert title == "T" and body == "T\nHello"
    assert json.loads(extract("d.json", b'{"a": [1]}')[1]) == {"a": [1]}
    assert extract("d.jsonl", b'{"a": 1}\n\n{"b": 2}\n')[1] == '{"a": 1}\n\n{"b": 2}'
    assert extract("c.yaml", b"k: v\n") == ("c", "k: v\n")
    title, body = extract("doc.pdf", MINI_PDF)
    assert title == "doc" and "Isolate host T1059" in body


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
