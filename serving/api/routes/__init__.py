"""Thin routers, one per resource; each calls the shared Service."""

API_PREFIX = "/v1"  # the routers of /v1 carry it, so a matched route's path is its whole template
