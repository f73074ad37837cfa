"""What every config adapter shares: pydantic settings, field helpers, error wording.

An adapter is a pydantic model whose fields are named exactly as in ``config.json``; it ignores
unknown keys, derives the defaults ``transformers`` derives, checks consistency (naming the
field), and ``to_model()`` returns the architecture-neutral ``Model``.

A field with several spellings (``num_local_experts`` / ``num_experts``, ``n_embd`` /
``hidden_size``) takes ``validation_alias=AliasChoices(...)``, and the one rule for its order is:
**the spelling transformers' config class keeps when a config holds several comes first** (pydantic
reads the first one present). For an ``attribute_map`` alias that is usually the alias, which the
class sets after its declared fields and so overrides the canonical value
(``AutoConfig.for_model('mixtral', num_local_experts=4, num_experts=6).num_local_experts == 6``);
where the class declares the alias as a field of its own (Kimi-Linear's ``num_local_experts``,
GLM-4-MoE's ``num_mtp_layers``) the canonical one is kept. A spelling the class does not read
(no ``attribute_map`` entry: GraniteMoe's ``num_experts``) is not a choice at all, unless a config
model declares it in ``remote_code_names`` (a Hub file's name that only its remote code reads).
tests/test_alias_precedence.py checks every pair, and every spelling alone, against the class.
"""
from __future__ import annotations

from typing import Annotated, ClassVar

import sympy
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ..core.errors import SymcostError
from ..core.notation import values  # noqa: F401 (adapters import it beside the other helpers here)
from ..core.units import ALIASES, DTYPE_BYTES

#: the largest size a config may state: int64, what torch shapes and checkpoint headers hold
MAX_INT = 2**63 - 1
#: the most layers a config may state: stacks are unrolled per layer to find their groups
MAX_LAYERS = 100_000

# Integer fields are strict: a JSON integer, never ``true`` read as 1, ``4.5`` truncated or ``"4"``.
Int = Annotated[int, Field(ge=-MAX_INT, le=MAX_INT, strict=True)]
PosInt = Annotated[int, Field(gt=0, le=MAX_INT, strict=True)]
NonNegInt = Annotated[int, Field(ge=0, le=MAX_INT, strict=True)]
LayerCount = Annotated[int, Field(gt=0, le=MAX_LAYERS, strict=True)]


def _known_dtype(name: str) -> str:
    """A config's dtype name (``float32``, ``bfloat16``, ``fp8`` ...) that ``units.dtype_bytes`` prices."""
    if ALIASES.get(name, name) not in DTYPE_BYTES:
        raise PydanticCustomError("dtype", "unknown dtype (choose from {known})",
                                  {"known": ", ".join(sorted({*DTYPE_BYTES, *ALIASES}))})
    return name


#: a dtype a config names for a cache or state (``mamba_ssm_cache_dtype``): refused when unknown,
#: so the error names the config field, never the command's ``--dtype``
DtypeName = Annotated[str, AfterValidator(_known_dtype)]

#: layer-type names transformers' hybrid configs remap on load (``remap_legacy_layer_types``)
LEGACY_LAYER_TYPES = {"mamba": "linear_attention", "attention": "full_attention"}

#: longest quoted value in an error line (a 100 MB string must not become a 100 MB line)
QUOTE_LIMIT = 80
MESSAGE_LIMIT = 400


def quote(value, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, cut to ``limit`` characters with the length of what was left out."""
    try:
        text = repr(value)
    except RecursionError:
        return "a value nested too deeply"
    except ValueError:  # an int past Python's 4,300-digit conversion limit
        return f"an integer of {value.bit_length()} bits" if isinstance(value, int) else "an unprintable value"
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def clip(message: str, limit: int = MESSAGE_LIMIT) -> str:
    message = " ".join(message.split())  # one line
    return message if len(message) <= limit else f"{message[:limit]}… (message cut)"


def validation_message(error: ValidationError, prefix: str = "") -> str:
    """One line naming the field of pydantic's first error: ``field 'a.b': message (got value)``.

    A consistency check of an adapter (``Adapter.fail``, a ``SymcostError``) keeps its own field,
    placed under the path of the nested config it came from (``text_config.num_key_value_heads``).
    """
    err = error.errors(include_url=False)[0]
    loc = [prefix] if prefix else []
    loc += [quote(p, 40) if not isinstance(p, (str, int)) or len(str(p)) > 40 else str(p) for p in err["loc"]]
    inner = (err.get("ctx") or {}).get("error")
    if err["type"] == "value_error" and isinstance(inner, SymcostError):
        text = str(inner)
        if text.startswith("field '") and loc:
            return clip("field '" + ".".join(loc) + "." + text[len("field '"):])
        return clip(text)
    field = ".".join(loc) or "config"
    got = "" if "input" not in err or isinstance(err["input"], dict) else f" (got {quote(err['input'])})"
    return clip(f"field '{field}': {err['msg']}{got}")


class Adapter(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True,
                              defer_build=True)  # build a schema only for the family used: fast CLI

    model_types: ClassVar[tuple[str, ...]] = ()
    #: the transformers class this adapter mirrors (the parameter oracle)
    reference: ClassVar[str] = ""
    #: a flag and the fields it switches on: when the flag is false (or absent: its default),
    #: transformers drops the fields (e.g. ``use_sliding_window`` → ``sliding_window = None``), so
    #: they are read as None and not validated (``sliding_window: 0`` or ``null`` is fine then)
    switches: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: config fields the reference class does not use, each with the reason (``symcost.architectures.fields``
    #: lists every other undeclared field as unread; sub-config models may have their own)
    unused: ClassVar[dict[str, str]] = {}

    model_type: str
    name: str = ""

    @model_validator(mode="before")
    @classmethod
    def _switched_off(cls, data):
        if isinstance(data, dict):
            for flag, fields in cls.switches.items():
                value = data.get(flag, False)
                if value is False or (type(value) is int and value == 0):
                    data = {**data, **{f: None for f in fields}}
            # a null sub-config (``"vision_config": null``) is the class's default one, as in transformers
            nulls = [k for k in cls._subconfigs() if k in data and data[k] is None]
            if nulls:
                data = {k: v for k, v in data.items() if k not in nulls}
        return data

    @classmethod
    def _subconfigs(cls) -> tuple[str, ...]:
        if "_subconfig_names" not in cls.__dict__:
            cls._subconfig_names = tuple(
                name for name, f in cls.model_fields.items()
                if not f.is_required() and isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel))
        return cls._subconfig_names

    def to_model(self):  # -> Model
        raise NotImplementedError

    # -- helpers for subclasses ----------------------------------------------------------------
    @staticmethod
    def fail(field: str, message: str) -> None:
        raise SymcostError(clip(f"field '{field}': {message}"))

    @staticmethod
    def check_kinds(field: str, kinds: list, n_layers: int, allowed: tuple[str, ...]) -> list[str]:
        """A per-layer list of layer types (``field``): legacy names remapped (transformers'
        ``remap_legacy_layer_types``), each one of ``allowed``, one entry per layer."""
        kinds = [LEGACY_LAYER_TYPES.get(k, k) if isinstance(k, str) else k for k in kinds]
        bad = sorted({repr(k) for k in kinds if k not in allowed})
        if bad:
            Adapter.fail(field, f"unknown layer type(s) {', '.join(bad)} (expected {', '.join(allowed)})")
        if len(kinds) != n_layers:
            Adapter.fail(field, f"has {len(kinds)} entries for num_hidden_layers={n_layers}")
        return kinds

    def check_count(self, field: str, got: int, expected: int, what: str = "num_hidden_layers") -> None:
        """A per-layer list or pattern (``field``) must have one entry per layer."""
        if got != expected:
            self.fail(field, f"has {got} entries for {what}={expected}")

    def check_top_k(self, experts_field: str, k_field: str = "num_experts_per_tok") -> None:
        """Experts per token within 1..E (k > E would count more active than total parameters)."""
        E, k = getattr(self, experts_field), getattr(self, k_field)
        if k is not None and E is not None and k > E:
            self.fail(k_field, f"{k_field}={k} exceeds {experts_field}={E}")

    def require_divisible(self, num_field: str, den_field: str) -> None:
        num, den = getattr(self, num_field), getattr(self, den_field)
        if num % den:
            self.fail(num_field, f"{num_field}={num} is not divisible by {den_field}={den}")


def nested(cls: type[Adapter], raw: dict | None, prefix: str, **fixed) -> Adapter:
    """Validate a nested sub-config (``text_config``) with adapter ``cls``; errors name the field
    under ``prefix`` (``text_config.num_experts_per_tok``). ``fixed`` overrides keys of ``raw``
    (the sub-config's own ``model_type``, a tying flag the wrapper decides)."""
    try:
        return cls.model_validate({**(raw or {}), **fixed})
    except ValidationError as e:
        raise SymcostError(validation_message(e, prefix)) from None


class GQAHeads:
    """``H_kv`` and ``D_h`` as transformers' config classes derive them: ``num_key_value_heads``
    (null or absent: ``num_attention_heads``, i.e. MHA) and ``head_dim`` (null or absent:
    ``hidden_size // num_attention_heads``). A mixin for adapters that hold those four fields."""

    @property
    def H_kv(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def D_h(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads


class PartialRotary(Adapter):
    """A mixin for families that rotate part of each head: ``partial_rotary_factor`` as
    transformers resolves it — the legacy ``rope_scaling`` (which replaces ``rope_parameters``
    when given), else ``rope_parameters``, then the top-level field, else the config class's
    default ``rotary_default``. ``D_rot(D_h)`` is the
    cos/sin width 2·⌈rot/2⌉ for rot = int(D_h·factor) rotated dims, None when rot is all of D_h (the table's width: saved
    tensors only; RoPE has no parameters and its elementwise cost is counted over all of D_h)."""

    rotary_default: ClassVar[float] = 1.0
    partial_rotary_factor: float | None = None
    rope_parameters: dict | None = None
    rope_scaling: dict | None = None

    @property
    def rotary_factor(self) -> float:
        rope = self.rope_scaling or self.rope_parameters
        if isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None:
            return rope["partial_rotary_factor"]
        return self.rotary_default if self.top_rotary_factor is None else self.top_rotary_factor

    @property
    def top_rotary_factor(self) -> float | None:
        """The top-level spelling the config class reads (GPT-NeoX: ``rotary_pct``)."""
        return self.partial_rotary_factor

    def D_rot(self, D_h: int):
        f = self.rotary_factor
        if not 0 < f <= 1:
            self.fail("partial_rotary_factor", f"the rotated fraction of each head must be in (0, 1] (got {f})")
        rot = int(D_h * f)
        # the rotary embedding's inv_freq has ⌈rot/2⌉ entries: cos/sin are 2·⌈rot/2⌉ wide
        return None if rot == D_h else sympy.Integer(2 * -(-rot // 2))
