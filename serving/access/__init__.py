"""Who may call, how much, and as which database role: API keys, quotas and request slots, the
deployment's request limits, and the least-privileged reader sessions."""
