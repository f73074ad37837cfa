"""symcost: closed-form SymPy cost formulas (parameters, FLOPs, cache, memory) from a config.json.

>>> import symcost
>>> m = symcost.build("llama-3.1-8b")
>>> m.params().total_at(m.values)
8030261248
"""
from .assembly import Model
from .conventions import Phase
from .errors import SymcostError
from .loader import build, load_config
from .notation import sym
from .terms import Terms
from .architectures import register

__all__ = ["load_config", "build", "Model", "Terms", "Phase", "sym", "register", "SymcostError"]
