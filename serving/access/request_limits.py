"""The request limits a deployment configures (ServingSettings: max_k, max_candidates, max_query_chars, the
map's text, sentences and techniques, a Navigator layer's entries; today's values are the defaults): checked on
every search, plan, map, coverage and layer request, and stated in the OpenAPI document as the maxima of the
fields they bound. The request models carry wider hard caps (HARD_* in serving/contract/requests.py,
map_models.py and layer_models.py) that no configuration exceeds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from serving.contract.errors import InvalidField
from serving.contract.layer_models import LayerIn
from serving.contract.limits import answer_too_large
from serving.contract.map_models import MapRequest
from serving.contract.requests import SearchRequest
from serving.settings import ServingSettings

CANDIDATE_FIELDS = ("fts_k", "vec_k", "candidates_k", "rerank_k")


def exceeded(field: str, limit: int, setting: str, *, text: bool = False) -> InvalidField:
    """A field over this deployment's limit: a 422 in pydantic's shape, as the schema would give."""
    kind, bound = (
        ("string_too_long", f"at most {limit} characters") if text else ("less_than_equal", f"at most {limit}")
    )
    return InvalidField(["body", field], f"{field} must be {bound} (this deployment's {setting})", kind)


@dataclass(frozen=True)
class RequestLimits:
    max_k: int = 50
    max_candidates: int = 1000
    max_query_chars: int = 8192
    max_map_chars: int = 131072
    max_map_sentences: int = 600
    max_map_techniques: int = 100
    max_layer_techniques: int = 2000
    max_answer_bytes: int = 8 * 1024 * 1024

    @classmethod
    def from_settings(cls, settings: ServingSettings) -> RequestLimits:
        return cls(
            settings.max_k,
            settings.max_candidates,
            settings.max_query_chars,
            settings.map_max_chars,
            settings.map_max_sentences,
            settings.map_max_techniques,
            settings.layer_max_techniques,
            settings.max_answer_bytes,
        )

    def check_query(self, query: str) -> None:
        if len(query) > self.max_query_chars:
            raise exceeded("query", self.max_query_chars, "SECRAG_MAX_QUERY_CHARS", text=True)

    def check_search(self, req: SearchRequest) -> None:
        self.check_query(req.query)
        if req.k > self.max_k:
            raise exceeded("k", self.max_k, "SECRAG_MAX_K")
        for name in CANDIDATE_FIELDS:
            value = getattr(req, name)
            if value is not None and value > self.max_candidates:
                raise exceeded(name, self.max_candidates, "SECRAG_MAX_CANDIDATES")

    def check_map(self, req: MapRequest) -> None:
        if len(req.text) > self.max_map_chars:
            raise exceeded("text", self.max_map_chars, "SECRAG_MAP_MAX_CHARS", text=True)
        if req.limit > self.max_map_techniques:
            raise exceeded("limit", self.max_map_techniques, "SECRAG_MAP_MAX_TECHNIQUES")

    def check_layer(self, field: str, layer: LayerIn | None) -> None:
        """A layer of more technique entries than this deployment reads: a 422 that says how many it has."""
        if layer is not None and len(layer.techniques) > self.max_layer_techniques:
            raise InvalidField(
                ["body", field, "techniques"],
                f"{field} has {len(layer.techniques)} technique entries; a layer may have at most "
                f"{self.max_layer_techniques} (this deployment's SECRAG_LAYER_MAX_TECHNIQUES)",
                "too_long",
            )

    def check_answer(self, size: int, narrow: str) -> None:
        """An answer estimated (before it is built) at more bytes than SECRAG_MAX_ANSWER_BYTES: a 413 naming the
        bound and, in `narrow`, how to ask for less."""
        if size > self.max_answer_bytes:
            raise answer_too_large(size, self.max_answer_bytes, narrow)

    def check_sentences(self, count: int) -> None:
        """A text of more sentences than a map searches: a 422 that says how many it has."""
        if count > self.max_map_sentences:
            raise InvalidField(
                ["body", "text"],
                f"text has {count} sentences; a map reads at most {self.max_map_sentences} (this deployment's "
                "SECRAG_MAP_MAX_SENTENCES): send it in parts",
                "too_long",
            )

    def state(self, document: dict[str, Any]) -> None:
        """Write the limits into the OpenAPI document's request schemas."""
        schemas = document.get("components", {}).get("schemas", {})
        self._state_search(schemas.get("SearchRequest", {}).get("properties", {}))
        for model in ("SearchRequest", "PlanRequest"):
            self._state_query(schemas.get(model, {}).get("properties", {}))
        self._state_map(schemas.get("MapRequest", {}).get("properties", {}))
        self._state_layer(schemas.get("LayerIn", {}).get("properties", {}))

    def state_tool(self, parameters: dict[str, Any]) -> None:
        """Write the limits into an MCP tool's input schema (its properties are the request's fields)."""
        properties = parameters.get("properties", {})
        self._state_search(properties)
        self._state_query(properties)
        self._state_map(properties)
        self._state_layer(parameters.get("$defs", {}).get("LayerIn", {}).get("properties", {}))

    def _state_search(self, properties: dict[str, Any]) -> None:
        if "k" in properties:
            properties["k"]["maximum"] = self.max_k
        for name in CANDIDATE_FIELDS:
            prop = properties.get(name, {})
            for variant in [prop, *prop.get("anyOf", [])]:
                if "maximum" in variant:
                    variant["maximum"] = self.max_candidates

    def _state_query(self, properties: dict[str, Any]) -> None:
        query = properties.get("query")
        if query is not None:
            query["maxLength"] = self.max_query_chars

    def _state_map(self, properties: dict[str, Any]) -> None:
        if "text" not in properties or "limit" not in properties:  # the map's fields (no other request has both)
            return
        properties["text"]["maxLength"] = self.max_map_chars
        properties["limit"]["maximum"] = self.max_map_techniques

    def _state_layer(self, properties: dict[str, Any]) -> None:
        if "techniques" in properties:
            properties["techniques"]["maxItems"] = self.max_layer_techniques
