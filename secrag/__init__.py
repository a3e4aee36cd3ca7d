"""secrag: fresh, searchable security knowledge for people and LLM agents."""

__version__ = "0.1.0"
