"""Retrieval plans: their configuration, query classification, the planner, category selection,
cited context, the noise filter and the telemetry records a plan adds for its detections."""
