"""The HTTP application on top of everything: the app factory, dependencies, routers, OpenAPI,
readiness and warm-up."""
