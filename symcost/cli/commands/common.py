"""What several commands do with their parsed options before the library call."""
from __future__ import annotations

from ...architectures import loader
from ...core.conventions import Phase
from ...core.errors import SymcostError
from ...core.notation import sym


def read_model(source):
    """The built model and its raw config."""
    m = loader.build(source)
    raw = loader.read_json(source)[1]
    return m, raw


def check_positions(m, positions: int, flag: str = "--T") -> None:
    """Learned absolute positions (GPT-2's wpe) cap the context at P tokens."""
    P = m.values.get(sym.P)
    if P is not None and positions > int(P):
        raise SymcostError(f"{flag}: {positions} positions exceed the {int(P)} learned positions "
                           f"(n_positions) of {m.name}")


def phase(args) -> Phase:
    """The counting conventions the options say (``--phase``, ``--attention``, ...)."""
    return Phase(kind=args.phase, attention=args.attention, logits=args.logits, mla=args.mla, impl=args.impl)
