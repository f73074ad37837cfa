"""The serving layer: what it costs to run a model in an inference engine.

Built on the model math (``Model.params/flops/cache``) and never imported by it:
    gpus       the GPU catalogue (``gpus.json``, package data with sources)
    quant      checkpoint weight bytes from ``quantization_config`` (FP8 blocks, NVFP4, MXFP4, INT4)
    memory     cache bytes per leaf dtype; the seed audit's simple memory estimate
    vllm       vLLM's paged KV layout and its start-up accounting (KV capacity, max concurrency)
    formulas   per-GPU bytes, KV capacity, concurrency and roofline time as formulas in t, e, p, T, B
    plan       one layout on one GPU, numbers by substituting the formulas (``symcost memory``); the
               serving options as one value (``ServeSetup``)
    roofline   one step of a layout on its roofline (``symcost roofline``); TTFT and TPOT (``Latency``)
    deploy     every valid layout at once, from formulas compiled once (``symcost deploy``)
"""
