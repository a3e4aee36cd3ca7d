"""D3FEND ontology (Turtle, JSON-LD or RDF/XML) to one record per technique with an id and a definition."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath

import rdflib
from rdflib.namespace import OWL, RDFS
from rdflib.term import BNode, Literal, Node, URIRef

from secrag.errors import ParseError

from .. import normalize
from ..records import TURTLE, Record, SourceFile, with_raw

DEFAULT_NAMESPACE = "http://d3fend.mitre.org/ontologies/d3fend.owl#"
DEFAULT_SITE = "https://d3fend.mitre.org"
_FORMATS = {
    ".ttl": "turtle",
    ".json": "json-ld",
    ".jsonld": "json-ld",
    ".owl": "xml",
    ".rdf": "xml",
    ".xml": "xml",
    ".nt": "nt",
}
_MAX_ANCESTORS = 50
_MAX_ARTICLE_CHARS = 20_000


def _remote_contexts(node: object) -> bool:
    """True when a JSON-LD document names a context by URL (rdflib would fetch it: no network here)."""
    if isinstance(node, dict):
        ctx = node.get("@context")
        if isinstance(ctx, str) or (isinstance(ctx, list) and any(isinstance(c, str) for c in ctx)):
            return True
        return any(_remote_contexts(v) for k, v in node.items() if k != "@context")
    if isinstance(node, list):
        return any(_remote_contexts(v) for v in node)
    return False


def _graph(file: SourceFile) -> rdflib.Graph:
    suffix = PurePosixPath(file.rel).suffix.lower()
    fmt = str(file.options.get("rdf_format") or _FORMATS.get(suffix, ""))
    if not fmt:
        raise ParseError(f"no RDF format known for {suffix or 'a file without suffix'}")
    if fmt == "json-ld":
        try:
            doc = json.loads(file.data)
        except ValueError as exc:
            raise ParseError(f"invalid JSON-LD: {exc}") from exc
        if _remote_contexts(doc):
            raise ParseError("JSON-LD with a remote @context is refused (parsing would fetch it)")
    graph = rdflib.Graph()
    try:
        graph.parse(data=file.data, format=fmt)
    except Exception as exc:  # noqa: BLE001 - rdflib raises many unrelated types for bad input
        raise ParseError(f"invalid {fmt}: {type(exc).__name__}: {str(exc)[:200]}") from exc
    return graph


class _Ontology:
    """Lookups over the D3FEND graph: labels, ids, parents, restrictions, display base URLs."""

    def __init__(self, graph: rdflib.Graph, namespace: str) -> None:
        self.g = graph
        self.ns = rdflib.Namespace(namespace)

    def text(self, node: Node, prop: str | URIRef) -> str:
        value = self.g.value(node, prop if isinstance(prop, URIRef) else self.ns[prop])
        return str(value).strip() if isinstance(value, Literal) else ""

    def texts(self, node: Node, prop: str) -> list[str]:
        return sorted({str(v).strip() for v in self.g.objects(node, self.ns[prop]) if isinstance(v, Literal)})

    def label(self, node: Node) -> str:
        return self.text(node, RDFS.label) or str(node).rsplit("#", 1)[-1]

    def parents(self, node: Node) -> list[URIRef]:
        return sorted(p for p in self.g.objects(node, RDFS.subClassOf) if isinstance(p, URIRef))

    def restrictions(self, node: Node) -> list[tuple[str, URIRef]]:
        """(property local name, class) of the `someValuesFrom` restrictions on the class."""
        out = []
        for sup in self.g.objects(node, RDFS.subClassOf):
            if isinstance(sup, BNode):
                prop, target = self.g.value(sup, OWL.onProperty), self.g.value(sup, OWL.someValuesFrom)
                if isinstance(prop, URIRef) and isinstance(target, URIRef):
                    out.append((str(prop).rsplit("#", 1)[-1], target))
        return sorted(out)

    def ancestors(self, node: Node) -> Iterator[URIRef]:
        """Superclasses breadth-first (bounded: ontologies can have cycles)."""
        queue, seen = self.parents(node), set[URIRef]()
        while queue and len(seen) < _MAX_ANCESTORS:
            current = queue.pop(0)
            if current not in seen:
                seen.add(current)
                yield current
                queue.extend(self.parents(current))

    def tactic(self, node: Node) -> str:
        for cls in (node, *self.ancestors(node)):
            for prop, target in self.restrictions(cls):
                if prop == "enables" and self.text(target, RDFS.label) and target != self.ns.DefensiveTactic:
                    return self.label(target)
        return ""

    def base_url(self, node: Node) -> str:
        for cls in (node, *self.ancestors(node)):
            base = self.text(cls, "display-baseurl")
            if base:
                return base
        return "/technique/"


def _compact(metadata: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in metadata.items() if v not in (None, "", [], {})}


def _line(label: str, values: list[str]) -> str | None:
    return f"{label}: {', '.join(values)}" if values else None


def _relations(onto: _Ontology, node: URIRef) -> tuple[dict[str, list[str]], list[str]]:
    """(property -> labels of the classes it relates to, ATT&CK ids among them); `enables` is the tactic."""
    relations: dict[str, list[str]] = {}
    attack: list[str] = []
    for prop, target in onto.restrictions(node):
        if prop == "enables":
            continue
        attack_id = onto.text(target, "attack-id")
        if attack_id:
            attack.append(attack_id)
        relations.setdefault(prop, []).append(onto.label(target))
    return relations, attack


def _record(file: SourceFile, onto: _Ontology, node: URIRef, d3_id: str, definition: str) -> Record:
    title = onto.label(node)
    local = str(node).rsplit("#", 1)[-1]
    parents = [p for p in onto.parents(node) if onto.text(p, "d3fend-id")]
    parent_names = [f"{onto.label(p)} ({onto.text(p, 'd3fend-id')})" for p in parents]
    tactic = onto.tactic(node)
    relations, attack = _relations(onto, node)
    synonyms = onto.texts(node, "synonym")
    body = normalize.join_text(
        definition,
        _line("Tactic", [tactic] if tactic else []),
        _line("Parent", parent_names),
        _line("Synonyms", synonyms),
        "\n".join(f"{prop}: {', '.join(targets)}" for prop, targets in relations.items()),
        onto.text(node, "kb-article")[:_MAX_ARTICLE_CHARS],
    )
    site = str(file.options.get("site_url", DEFAULT_SITE)).rstrip("/")
    metadata = {
        "kind": "analytic-technique" if d3_id.startswith("D3A-") else "technique",
        "class": local,
        "tactic": tactic,
        "parents": [onto.text(p, "d3fend-id") for p in parents],
        "synonyms": synonyms,
        "relations": relations,
    }
    return Record(
        source=file.source,
        upstream_id=d3_id,
        title=title,
        body=body,
        url=f"{site}{onto.base_url(node)}d3f:{local}/",
        techniques=normalize.technique_ids(attack),
        tags=normalize.tags([tactic] if tactic else []),
        path=file.rel,
        metadata=_compact(metadata),
    )


def _turtle(graph: rdflib.Graph, node: URIRef) -> str:
    """The class definition of `node` as Turtle, with the ontology's prefixes: its concise bounded
    description (its statements and those of the blank nodes they lead to: the OWL restrictions that
    hold its relations)."""
    own = graph.cbd(node)
    own.namespace_manager = graph.namespace_manager
    return own.serialize(format="turtle")


def parse(file: SourceFile) -> Iterator[Record]:
    """One record per class carrying both a `d3fend-id` and a `definition`."""
    onto = _Ontology(_graph(file), str(file.options.get("namespace", DEFAULT_NAMESPACE)))
    for node in sorted(set(onto.g.subjects(onto.ns["d3fend-id"], None)), key=str):
        d3_id, definition = onto.text(node, "d3fend-id"), onto.text(node, "definition")
        if isinstance(node, URIRef) and d3_id and definition:
            yield with_raw(_record(file, onto, node, d3_id, definition), _turtle(onto.g, node), TURTLE)
