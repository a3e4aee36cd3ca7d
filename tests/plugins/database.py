"""Database fixtures (filled in below)."""
