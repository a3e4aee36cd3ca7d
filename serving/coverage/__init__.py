"""Coverage of ATT&CK techniques: which source fills which kind, the one counting statement's rows as
per-technique coverage and gaps, and the Navigator layer of it."""
