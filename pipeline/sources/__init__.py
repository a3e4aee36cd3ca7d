"""Source registry, probes, fetchers and per-format parsers."""
