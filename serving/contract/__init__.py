"""What callers send and get: request and response models, the error body and its kinds, size limits
and the query-class vocabulary. The bottom of serving/: it imports nothing else of serving but its settings."""
