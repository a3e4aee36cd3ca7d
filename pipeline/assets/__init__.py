"""Asset factories of the secrag graph: upstream -> sources -> embeddings, lookups, user folders."""
