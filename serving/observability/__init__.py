"""The API's own figures: request counts and latencies, and their Prometheus exposition."""
