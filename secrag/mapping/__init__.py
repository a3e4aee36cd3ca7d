"""The map's evidence for a sentence's techniques, shared by the API (serving/mapping) and the training of its verifier
(pipeline/training): candidates from held vectors, the verifier and the behaviour gate."""
