"""Dagster project that ingests security-knowledge sources into the secrag store."""
