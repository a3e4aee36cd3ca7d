"""What the API learns from use: the opt-in query log, its attention flags, threshold proposals and the
tuned values in force."""
