"""Running a loaded biLM: the batching engine, reduced precision, ONNX export."""
