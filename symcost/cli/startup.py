"""What a CLI process skips at start-up and exit (each measured with benchmarks/bench_cli.py).

SymPy's tensor module, imported only when something uses it: SymPy 1.14's ``Add.flatten`` runs ``from sympy.tensor.tensor import TensExpr, TensAdd`` on every
call, for one ``isinstance`` test; its first call therefore imports ``sympy.tensor.tensor`` and with
it ``sympy.combinatorics`` (about 25 ms, a twentieth of a whole ``symcost params`` run), though a
symcost command never builds a tensor expression.

``defer_sympy_tensor()`` puts a placeholder in ``sys.modules`` whose ``TensExpr`` and ``TensAdd``
are stand-ins: ``isinstance``/``issubclass`` against them is False while the real module is not
loaded (no tensor expression can exist before it is) and the real test once it is; calling one,
reading any of its attributes, or reading any other name of the module loads the real module, which
then replaces the placeholder. Results are the same with and without it
(``tests/test_startup.py``); the CLI calls it first thing, the library never does.

The other start-up and exit costs a command avoids are here too: pydantic's plugin discovery
(``no_pydantic_plugins``) and the interpreter's final collections (``quick_exit``).
"""
from __future__ import annotations

import importlib
import os
import sys
import types

NAME = "sympy.tensor.tensor"
_STAND_INS = ("TensExpr", "TensAdd")


def _loaded():
    """The real module if it has been imported, else None."""
    mod = sys.modules.get(NAME)
    return None if mod is None or isinstance(mod, _Placeholder) else mod


def _load():
    real = _loaded()
    if real is None:
        sys.modules.pop(NAME, None)
        real = importlib.import_module(NAME)  # also rebinds sympy.tensor.tensor to it
    return real


class _StandIn(type):
    """Metaclass of the stand-ins: every use but a type test goes to the real class."""

    def __instancecheck__(cls, obj):
        real = _loaded()
        return real is not None and isinstance(obj, getattr(real, cls.__name__))

    def __subclasscheck__(cls, sub):
        real = _loaded()
        return real is not None and issubclass(sub, getattr(real, cls.__name__))

    def __call__(cls, *args, **kwargs):
        return getattr(_load(), cls.__name__)(*args, **kwargs)

    def __getattr__(cls, name):
        return getattr(getattr(_load(), cls.__name__), name)


class _Placeholder(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_load(), name)


def defer_sympy_tensor() -> None:
    """Install the placeholder, unless the real module is already imported."""
    if NAME in sys.modules:
        return
    import sympy.tensor  # lazy: the package, not its tensor module, which this placeholder defers
    mod = _Placeholder(NAME, "placeholder until sympy.tensor.tensor is used (symcost.cli.startup)")
    for name in _STAND_INS:
        setattr(mod, name, _StandIn(name, (), {"__module__": NAME}))
    sys.modules[NAME] = mod
    sympy.tensor.tensor = mod


def no_pydantic_plugins() -> None:
    """Turn off pydantic's plugin discovery (``PYDANTIC_DISABLE_PLUGINS``, unless the user set it):
    on its first schema pydantic walks the entry points of every installed distribution (7 ms
    with torch installed) for observability hooks a symcost command has no use for."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def quick_exit() -> None:
    """Before a CLI process exits: ``gc.freeze()`` moves every live object to the permanent
    generation, which the collections of interpreter shutdown skip — with the SymPy expressions
    and caches of a command that was about a fifth of the whole run (0.09 s of 0.46 s on
    ``params kimi-k2.5``). Objects are still released and finalised as usual; only the cycle
    search over them is left out, as the process is about to end."""
    import gc  # lazy: only the console entry freezes the heap before exit
    gc.freeze()
