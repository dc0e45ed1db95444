"""The serving simulator: load model, performance model, vLLM-like replicas, designs, figures."""
