"""The webhook receiver (`secrag hooks`): its own app and login, apart from the read-only API. It checks an
upstream's signed push and records a poke; what the push says is not trusted beyond "look at this source now"."""
