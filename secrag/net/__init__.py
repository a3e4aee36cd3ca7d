"""Outbound requests: the URL policy, vetted transport, capped downloads, rate limits, media types."""
