"""The embedding models: the registry (models.yaml), their weights, ONNX exports and encoders."""
