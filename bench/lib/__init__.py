"""What the bench entry points share: the in-process API, queries, relevance metrics, timing, tables, processes."""
