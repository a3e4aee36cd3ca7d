"""The `secrag` command line."""
