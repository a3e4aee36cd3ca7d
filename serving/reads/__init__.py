"""Reads by id: documents and chunks, their upstream forms (stored or live), and store statistics."""
