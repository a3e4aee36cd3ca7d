"""Reading files: someone else's files, JSON and YAML with limits, configuration files, package data."""
