"""CISA Known Exploited Vulnerabilities feed (JSON) to one record per CVE."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from secrag.errors import ParseError
from secrag.identifiers import is_cve_id

from .. import normalize
from ..records import JSON, Record, SourceFile, with_raw

DEFAULT_RECORD_URL = "https://www.cisa.gov/known-exploited-vulnerabilities-catalog?search_api_fulltext={cve}"
_URL = re.compile(r"https?://\S+")


def _field(vuln: Mapping[str, Any], key: str) -> str:
    """A stripped string field; empty when missing or null."""
    return str(vuln.get(key) or "").strip()


def _line(label: str, value: str) -> str | None:
    return f"{label}: {value}" if value else None


def _record(file: SourceFile, vuln: Mapping[str, Any]) -> Record | None:
    cve = _field(vuln, "cveID").upper()
    if not is_cve_id(cve):
        return None
    vendor, product, name = _field(vuln, "vendorProject"), _field(vuln, "product"), _field(vuln, "vulnerabilityName")
    ransomware, notes = _field(vuln, "knownRansomwareCampaignUse"), _field(vuln, "notes")
    cwes = [str(c).strip() for c in normalize.as_list(vuln.get("cwes")) if str(c).strip()]
    links = [u.rstrip(";,.") for u in _URL.findall(notes)]
    body = normalize.join_text(
        f"{cve}: {name}" if name else cve,
        f"Vendor: {vendor}\nProduct: {product}",
        vuln.get("shortDescription"),
        _line("Required action", _field(vuln, "requiredAction")),
        _line("Known ransomware campaign use", ransomware),
        _line("CWEs", ", ".join(cwes)),
        _line("Notes", notes),
    )
    template = str(file.options.get("record_url", DEFAULT_RECORD_URL))
    metadata = {
        "vendor": vendor,
        "product": product,
        "date_added": vuln.get("dateAdded"),
        "due_date": vuln.get("dueDate"),
        "known_ransomware_use": ransomware,
        "cwes": cwes,
        "references": links[:10],
    }
    return Record(
        source=file.source,
        upstream_id=cve,
        title=name or f"{vendor} {product} {cve}".strip(),
        body=body,
        url=template.format(cve=quote(cve)),
        path=file.rel,
        tags=normalize.tags([vendor, product, *cwes, "ransomware" if ransomware == "Known" else None]),
        metadata={k: v for k, v in metadata.items() if v not in (None, "", [])},
    )


def parse(file: SourceFile) -> Iterator[Record]:
    """One record per entry of `vulnerabilities`.

    The catalog version stays out of the records: it changes daily and would change every hash.
    """
    try:
        feed = json.loads(file.text())
    except ValueError as exc:
        raise ParseError(f"invalid JSON: {exc}") from exc
    if not isinstance(feed, Mapping) or not isinstance(feed.get("vulnerabilities"), list):
        raise ParseError("not a KEV feed (no vulnerabilities list)")
    for vuln in feed["vulnerabilities"]:
        if isinstance(vuln, Mapping):
            record = _record(file, vuln)
            if record is not None:
                yield with_raw(record, dict(vuln), JSON)
