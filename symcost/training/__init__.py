"""The training layer: FLOPs per step, activation memory, model states, communication, step time.

Modules: ``flops`` (exact training FLOPs and the published presets), ``activations`` (what the
backward keeps, from each component's declaration), ``states`` (weights, gradients, optimizer
states sharded per parameter group), ``comm`` (bytes per collective and dimension).
"""
from .flops import PRESETS, compare_presets, train_flops  # noqa: F401
from .memory import TrainMemory, train_memory  # noqa: F401
