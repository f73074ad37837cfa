"""The context a config supports, and the warning when a command asks for more.

``max_position_embeddings`` is the trained context unless the RoPE scaling the config states
extends it: YaRN / dynamic-NTK / linear / LongRoPE scale ``original_max_position_embeddings`` (or
the field itself) by ``factor``; Llama-3's ``llama3`` type already states the extended length.
Configs without the field (pure state-space models) have no position limit. Read from the raw
config (``rope_scaling`` as on the Hub, or ``rope_parameters`` as transformers 5 writes it), so
it costs no model build.

>>> context_limit({"max_position_embeddings": 4096, "rope_scaling": {"type": "yarn", "factor": 40,
...                "original_max_position_embeddings": 4096}})
(163840, 'max_position_embeddings=4096 with yarn RoPE scaling x40 of 4096')
>>> context_warnings({"max_position_embeddings": 40960}, 131072)
['T=131,072 exceeds the 40,960 positions the config supports (max_position_embeddings=40960, no RoPE scaling)']
"""
from __future__ import annotations

SCALED = {"yarn", "dynamic", "linear", "longrope", "su", "ntk"}


def _text(raw: dict) -> dict:
    t = raw.get("text_config")
    return t if isinstance(t, dict) and "max_position_embeddings" in t else raw


def context_limit(raw: dict) -> tuple[int, str] | None:
    """(largest context, how it follows from the config), or None when the config sets none."""
    cfg = _text(raw)
    mpe = cfg.get("max_position_embeddings", cfg.get("n_positions"))
    if not isinstance(mpe, int) or isinstance(mpe, bool) or mpe <= 0:
        return None
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if not isinstance(rope, dict):
        rope = {}
    kind = str(rope.get("rope_type", rope.get("type", "default")))
    factor = rope.get("factor")
    if kind in SCALED and isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 1:
        base = rope.get("original_max_position_embeddings", mpe)
        base = base if isinstance(base, int) and base > 0 else mpe
        scaled = int(base * factor)
        if scaled > mpe:
            return scaled, (f"max_position_embeddings={mpe} with {kind} RoPE scaling x{factor:g} "
                            f"of {base}")
        return mpe, f"max_position_embeddings={mpe} ({kind} RoPE scaling x{factor:g} of {base})"
    how = f"{kind} RoPE scaling" if kind not in ("default", "None") else "no RoPE scaling"
    return mpe, f"max_position_embeddings={mpe}, {how}"


def context_warnings(raw: dict, T: int | None) -> list[str]:
    """One line per problem with a requested context ``T`` (none when it fits)."""
    lim = context_limit(raw) if T else None
    if lim is None or T <= lim[0]:
        return []
    return [f"T={T:,} exceeds the {lim[0]:,} positions the config supports ({lim[1]})"]
