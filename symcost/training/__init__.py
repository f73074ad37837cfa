"""The training layer: FLOPs per step, activation memory, model states, communication, step time.

Modules: ``setup`` (``TrainSetup``: the one frozen value every cost below takes), ``flops``
(exact training FLOPs and the published presets), ``activations`` (what the backward keeps, from
each component's declaration; MoE capacity), ``plan`` (the layout and each stage's parameters),
``states`` (the ZeRO rule, HSDP sharding and CPU offload of the model states), ``schedule`` (1F1B
and interleaved pipeline schedules), ``memory`` (per-GPU bytes), ``comm`` (bytes per collective
and dimension), ``steptime`` (α–β step time, budgets), ``search`` (every layout at once: the same
formulas compiled with ``symcost.core.numeric``), ``sheet`` (the sheet's Training and Communication
sections).
"""
from .flops import PRESETS, compare_presets, train_flops  # noqa: F401
from .memory import TrainMemory, train_memory  # noqa: F401
from .setup import TrainSetup  # noqa: F401
