"""Thin routers, one per resource; each calls the shared Service."""
