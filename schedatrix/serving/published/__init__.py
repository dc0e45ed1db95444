"""Published measurements of real deployments, as data: the rows the validation replays.

``rows`` holds every row of each performance page and benchmark the validation cites (with the
rows it cannot set up and why), ``spec_rows`` the speculative-decoding rows (and the draft-model
measurements not replayed), ``lora_rows`` the multi-LoRA rows (S-LoRA's, and the measurements
not replayed), ``offload_rows`` the CPU KV tier's sources (vLLM's offloading post's Figure 1,
read off its pixels, and the others with why they are not replayed),
``fp8_gemm`` DeepGEMM's FP8 matmul table that the matmul model is checked against. Nothing here
computes a prediction; ``schedatrix.serving.validation.replay`` replays these rows on the
simulator.
"""
