"""What every config adapter shares: pydantic settings, field helpers, error wording.

An adapter is a pydantic model whose fields are named exactly as in ``config.json``; it ignores
unknown keys, derives the defaults ``transformers`` derives, checks consistency (naming the
field), and ``to_model()`` returns the architecture-neutral ``Model``.
"""
from __future__ import annotations

from typing import Annotated, ClassVar

import sympy
from pydantic import BaseModel, ConfigDict, Field

from ..errors import SymcostError
from ..notation import sym

PosInt = Annotated[int, Field(gt=0, strict=False)]
NonNegInt = Annotated[int, Field(ge=0, strict=False)]


class Adapter(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True,
                              defer_build=True)  # build a schema only for the family used: fast CLI

    model_types: ClassVar[tuple[str, ...]] = ()
    #: the transformers class this adapter mirrors (the parameter oracle)
    reference: ClassVar[str] = ""

    model_type: str
    name: str = ""

    def to_model(self):  # -> Model
        raise NotImplementedError

    # -- helpers for subclasses ----------------------------------------------------------------
    @staticmethod
    def fail(field: str, message: str) -> None:
        raise SymcostError(f"field '{field}': {message}")

    def require_divisible(self, num_field: str, den_field: str) -> None:
        num, den = getattr(self, num_field), getattr(self, den_field)
        if num % den:
            self.fail(num_field, f"{num_field}={num} is not divisible by {den_field}={den}")


def values(**kw: int) -> dict:
    """Symbol values from keyword names of the notation: ``values(d=4096, L=32)``."""
    return {getattr(sym, k): sympy.Integer(v) for k, v in kw.items() if v is not None}


def nested(cls: type[Adapter], raw: dict | None, prefix: str, **fixed) -> Adapter:
    """Validate a nested sub-config (``text_config``) with adapter ``cls``; errors name the field
    under ``prefix`` (``text_config.num_experts_per_tok``). ``fixed`` overrides keys of ``raw``
    (the sub-config's own ``model_type``, a tying flag the wrapper decides)."""
    from pydantic import ValidationError
    try:
        return cls.model_validate({**(raw or {}), **fixed})
    except ValidationError as e:
        err = e.errors()[0]
        loc, msg = ".".join(str(p) for p in err["loc"]), err["msg"]
        if not loc and "field '" in msg:  # a consistency check of the nested adapter
            msg = msg.split("field '", 1)[1]
            loc, msg = msg.split("'", 1)[0], msg.split("': ", 1)[-1]
        Adapter.fail(f"{prefix}.{loc}", msg)
