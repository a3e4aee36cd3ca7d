"""Thin routers, one per resource; each takes the parts of the service it uses (serving/api/deps.py)."""

API_PREFIX = "/v1"  # the routers of /v1 carry it, so a matched route's path is its whole template
