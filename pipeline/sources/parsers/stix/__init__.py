"""STIX 2.0/2.1 bundles (ATT&CK, its procedure examples, its detection strategies and analytics, CAPEC, MBC) to
records; `options.scheme` picks the scheme."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from secrag.errors import ParseError

from ...mitre_lookup import bundle_objects
from ...records import JSON, Record, SourceFile, with_raw
from . import attack, capec, deprecated, detections, mbc, procedures
from .index import BundleIndex, StixObject, skipped

_SCHEMES: dict[str, Callable[[StixObject, BundleIndex, SourceFile], Record | None]] = {
    "attack": attack.record,
    "attack_procedures": procedures.record,
    "attack_detections": detections.record,
    "capec": capec.record,
    "mbc": mbc.record,
}
# The object types each scheme reads; `options.types` may narrow them, never widen.
_DEFAULT_TYPES = {
    "attack": tuple(attack.KINDS),
    "attack_procedures": ("relationship",),
    "attack_detections": detections.TYPES,
    "capec": ("attack-pattern", "course-of-action"),
    "mbc": tuple(mbc.KINDS),
}

# The schemes whose records read the fields ATT&CK spec v4 removes: their outcome names those a bundle lacks.
_ATTACK_SCHEMES = ("attack", "attack_detections")


def parse(file: SourceFile) -> Iterator[Record]:
    """One record per kept, non-retired object of the bundle."""
    scheme = str(file.options.get("scheme", "attack"))
    build = _SCHEMES.get(scheme)
    if build is None:
        raise ParseError(f"unknown stix scheme {scheme!r}; use one of {', '.join(_SCHEMES)}")
    objects = bundle_objects(file.data)
    keep = set(file.options.get("types") or _DEFAULT_TYPES[scheme]) & set(_DEFAULT_TYPES[scheme])
    ix = BundleIndex(objects)
    if scheme in _ATTACK_SCHEMES:
        file.notes[deprecated.NOTE] = deprecated.absent(objects)
    for obj in objects:
        if obj.get("type") in keep and not skipped(obj, file.options):
            record = build(obj, ix, file)
            if record is not None and record.title:
                yield with_raw(record, obj, JSON)  # the STIX object as the bundle holds it
