"""The MCP server: every REST operation as a tool, called with the caller's key and limits."""
