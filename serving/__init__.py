"""secrag's read-only HTTP API (FastAPI) and MCP tools over the shared store."""
