"""symcost: closed-form SymPy cost formulas (parameters, FLOPs, cache, memory) from a config.json.

>>> import symcost
>>> m = symcost.build("llama-3.1-8b")
>>> m.params().total_at(m.values)
8030261248
>>> m.flops(symcost.Phase(kind="prefill", attention="causal")).total_at(T=4096, B=1)
65877282127872
>>> symcost.parse("2*B*L*T*H_kv*D_h") == 2 * sym.B * sym.L * sym.T * sym.H_kv * sym.D_h
True

Read formula strings back with ``symcost.parse`` (the whitelist parser), never ``sympy.sympify``:
SymPy reads ``E`` as Euler's number and ``N`` as its ``N()`` function.
"""
from .architectures import register
from .architectures.loader import build, load_config
from .core.conventions import Phase
from .core.errors import SymcostError
from .core.exprparse import parse
from .core.notation import sym
from .core.notation import sym as symbols
from .core.terms import Terms
from .model.assembly import Model

__all__ = ["load_config", "build", "Model", "Terms", "Phase", "sym", "symbols", "parse", "register",
           "SymcostError"]
