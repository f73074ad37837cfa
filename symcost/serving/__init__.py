"""The serving layer: what it costs to run a model in an inference engine.

Built on the model math (``Model.params/flops/cache``) and never imported by it:
    gpus       the GPU catalogue (``gpus.json``, package data with sources)
    quant      checkpoint weight bytes from ``quantization_config`` (FP8 blocks, NVFP4, MXFP4, INT4)
    memory     weights, cache, activations; deployment fit
    vllm       vLLM's paged KV layout and its start-up accounting (KV capacity, max concurrency)
    roofline   time of a prefill / decode step on a GPU
"""
