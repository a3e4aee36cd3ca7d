"""How many chunks a keyword query matches, estimated from PostgreSQL's statistics of chunks.tsv.

ANALYZE keeps the most common lexemes of the column with the share of chunks holding each
(pg_stats.most_common_elems); a lexeme missing from that list is rarer than all of them. Ranking
every match of a query of common words ("user execution" matches ~4,000 chunks) costs tens of
milliseconds, so such queries rank full text within the vector leg's pool instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def _shares(keys: Sequence[str] | None, freqs: Sequence[float] | None) -> dict[str, float]:
    if not keys or not freqs:
        return {}
    return {k: float(f) for k, f in zip(keys, freqs[: len(keys)], strict=True)}


@dataclass(frozen=True)
class LexemeStats:
    """Share of chunks per common lexeme and per source, and the number of chunks."""

    shares: Mapping[str, float] = field(default_factory=dict)
    chunks: float = 0.0
    source_shares: Mapping[str, float] = field(default_factory=dict)

    @property
    def rare_share(self) -> float:
        """Upper bound of the share of a lexeme that is not in the list."""
        return min(self.shares.values(), default=0.0)

    @classmethod
    def from_row(cls, row: Mapping[str, Any] | None) -> LexemeStats:
        """From the `lexeme_frequencies` query (as a dict row; None before the first ANALYZE)."""
        if row is None:
            return cls()
        return cls(
            shares=_shares(row["lexemes"], row["freqs"]),
            chunks=float(row["chunks"] or 0),
            source_shares=_shares(row["sources"], row["source_freqs"]),
        )

    def share(self, lexeme: str) -> float:
        return self.shares.get(lexeme, self.rare_share)

    def chunks_in(self, sources: Sequence[str] | None) -> float:
        """Chunks of the given sources (all chunks when None or empty, or before statistics exist)."""
        if not sources or not self.source_shares:
            return self.chunks
        return self.chunks * sum(self.source_shares.get(s, 0.0) for s in set(sources))

    def estimate(self, all_of: Iterable[str], any_of: Iterable[str], sources: Sequence[str] | None = None) -> float:
        """Chunks matching every lexeme of `all_of` or any of `any_of` (within `sources` when given).

        An upper bound for the lexemes (the rarest of `all_of`, plus each of `any_of`), scaled by the
        sources' share of the chunks assuming the words spread evenly over sources.
        """
        words = [self.share(w) for w in all_of]
        matched = min(words) if words else 0.0
        matched += sum(self.share(w) for w in any_of)
        return min(1.0, matched) * self.chunks_in(sources)
