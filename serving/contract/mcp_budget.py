"""The bounds of an MCP tool's response budget (`max_chars`, serving/mcp/budget.py), in characters of compact JSON:
what a tool's schema states and SECRAG_MCP_MAX_CHARS takes."""

from __future__ import annotations

MIN_CHARS = 1000  # room for an answer's skeleton, its note and a first item or two
MAX_CHARS = 1_000_000
DEFAULT_MCP_CHARS = 100_000  # SECRAG_MCP_MAX_CHARS' default: about 25,000 tokens of an agent's context
