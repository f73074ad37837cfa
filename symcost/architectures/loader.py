"""Load a model: a path to a ``config.json`` (or its directory), or a bundled reference name.

Bad input becomes one ``SymcostError`` naming the problem and the field; nothing else escapes.
"""
from __future__ import annotations

import difflib
import json
import os
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from .. import architectures
from ..core.errors import SymcostError
from ..model.assembly import Model
from .base import Adapter, validation_message

BUNDLED = resources.files("symcost") / "configs"


def bundled_names() -> list[str]:
    return sorted(p.name[:-5] for p in BUNDLED.iterdir() if p.name.endswith(".json"))


def _short(text: str, n: int = 80) -> str:
    """``text`` cut to about ``n`` characters in the middle: a long path keeps its start and its file name.

    >>> _short("/tmp/" + "x" * 100 + "/absent.json", 40)
    '/tmp/xxxxxxxxxxxxxx...xxxxxx/absent.json'
    """
    if len(text) <= n:
        return text
    tail = n // 2 - 2
    return text[:n - tail - 3] + "..." + text[-tail:]


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").removeprefix("meta-")


def match_bundled(name: str) -> str | None:
    """The bundled config ``name`` means: exact, then case-insensitive (``Llama-3.1-8B``), then
    the repository part of a Hub id (``Qwen/Qwen3-8B``), then a unique prefix (``deepseek-v3.``).
    ``None`` when nothing matches; a ``SymcostError`` listing the candidates when several do."""
    names = bundled_names()
    if name in names:
        return name
    key = _norm(name.rsplit("/", 1)[-1])
    by_norm = {_norm(n): n for n in names}
    if key in by_norm:
        return by_norm[key]
    hits = sorted(n for k, n in by_norm.items() if k.startswith(key)) if key else []
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise SymcostError(f"{_short(name)!r} matches several bundled models: {', '.join(hits)}")
    return None


def hub_cache_dirs() -> list[Path]:
    """Where a local Hugging Face Hub cache may be (``HF_HUB_CACHE``, ``HF_HOME``/hub, the default);
    read only: symcost never makes a network call."""
    env = os.environ
    out = [Path(env["HF_HUB_CACHE"])] if env.get("HF_HUB_CACHE") else []
    if env.get("HF_HOME"):
        out.append(Path(env["HF_HOME"]) / "hub")
    out.append(Path(env.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface" / "hub")
    return out


def _snapshot_config(repo_dir: Path) -> Path | None:
    """config.json of a Hub cache repository folder (``models--org--name``): the snapshot ``refs/main``
    names, else the newest snapshot that holds one."""
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        cfg = repo_dir / "snapshots" / ref.read_text(encoding="utf-8").strip() / "config.json"
        if cfg.is_file():
            return cfg
    snaps = [p / "config.json" for p in (repo_dir / "snapshots").glob("*") if (p / "config.json").is_file()]
    return max(snaps, key=lambda p: p.stat().st_mtime) if snaps else None


def _repo_id(folder: Path) -> str | None:
    """``org/name`` for a Hub cache folder ``models--org--name`` (or a snapshot inside one)."""
    for part in (folder, *folder.parents):
        if part.name.startswith("models--"):
            return part.name.removeprefix("models--").replace("--", "/")
    return None


def resolve(source: str) -> tuple[str, Path | None]:
    """(model name, config.json path or None for a bundled name) for what the user typed."""
    path = Path(source)
    if path.is_file():
        repo = _repo_id(path.parent)
        return (repo or (path.parent.name if path.name == "config.json" else path.stem)), path
    if path.is_dir():
        if (path / "config.json").is_file():
            return (_repo_id(path) or path.resolve().name), path / "config.json"
        cfg = _snapshot_config(path)
        if cfg is not None:
            return _repo_id(path) or path.name, cfg
        raise SymcostError(f"directory {_short(source)!r} holds no config.json")
    hub = hub_config(source)
    if hub is not None:
        return hub
    bundled = match_bundled(source)
    if bundled is not None:
        return bundled, None
    cached = cached_ids()
    pool = {_norm(n): n for n in bundled_names()} | {c.lower(): c for c in cached}
    close = difflib.get_close_matches(source.lower() if "/" in source else _norm(source), list(pool), n=3,
                                      cutoff=0.6)
    hint = f"; did you mean {', '.join(pool[c] for c in close)}?" if close else " (see `symcost models`)"
    raise SymcostError(f"no such config file, Hub cache entry or bundled model: {_short(source)!r}{hint}")


def _is_hub_id(source: str) -> bool:
    return source.count("/") == 1 and not source.startswith((".", "/")) and all(source.split("/"))


def cached_ids() -> list[str]:
    """Every ``org/name`` the local Hub cache holds a model folder for (read only, no network)."""
    out = set()
    for cache in hub_cache_dirs():
        try:
            out |= {p.name.removeprefix("models--").replace("--", "/", 1) for p in cache.glob("models--*--*")}
        except OSError:
            continue
    return sorted(out)


def hub_config(source: str) -> tuple[str, Path] | None:
    """(repo id as cached, config.json) for a Hub id in the local cache, or None. Hub ids are
    case-insensitive, as the Hub resolves them (``openai/gpt-oss-120B`` finds
    ``models--openai--gpt-oss-120b``); an exact folder wins over a case-folded one."""
    if not _is_hub_id(source):
        return None
    want = "models--" + source.replace("/", "--")
    for cache in hub_cache_dirs():
        exact = cache / want
        folders = [exact] if exact.is_dir() else []
        if not folders and cache.is_dir():
            try:
                folders = sorted(p for p in cache.glob("models--*") if p.name.lower() == want.lower())
            except OSError:
                folders = []
        for repo in folders:
            cfg = _snapshot_config(repo)
            if cfg is not None:
                return _repo_id(repo) or source, cfg
    return None


def resolution_note(source: str) -> str | None:
    """A sentence when ``source`` names both a Hub cache entry and a bundled config: the cache entry is
    used (it is what the user downloaded), and the note says so."""
    if not isinstance(source, str) or Path(source).exists():
        return None
    hub = hub_config(source)
    if hub is None:
        return None
    try:
        bundled = match_bundled(source)
    except SymcostError:
        bundled = None
    if bundled is None:
        return None
    return (f"{source}: using the Hub cache entry {hub[0]} ({hub[1]}), not the bundled {bundled} "
            f"(give `{bundled}` for the bundled config)")


def read_json(source: str) -> tuple[str, dict]:
    """(name, raw dict) for a path, a directory holding config.json, a Hub cache folder or id, or
    a bundled name (``resolve``)."""
    name, path = resolve(source)
    if path is not None:
        text = path.read_text(encoding="utf-8", errors="replace")
    else:
        path = Path(f"{name}.json")
        text = (BUNDLED / f"{name}.json").read_text(encoding="utf-8")
    try:
        raw = json.loads(text)  # Infinity / NaN literals are read, as transformers writes them
    except json.JSONDecodeError as e:
        raise SymcostError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except ValueError as e:  # an integer literal past Python's 4,300-digit conversion limit
        raise SymcostError(f"{path}: invalid JSON: {str(e).split(':')[0]}") from None
    except RecursionError:
        raise SymcostError(f"{path}: invalid JSON: nested too deeply") from None
    if not isinstance(raw, dict):
        raise SymcostError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    return name, _with_modelopt(raw, path)


def _with_modelopt(raw: dict, path: Path) -> dict:
    """NVIDIA ModelOpt checkpoints state their quantisation in ``hf_quant_config.json`` beside
    config.json (``{"quantization": {"quant_algo": "NVFP4", "exclude_modules": [...]}}``); vLLM reads
    it as a ``modelopt`` quantization_config (``ModelOptFp8Config`` / ``ModelOptNvFp4Config``). The
    config's own quantization_config, when it has one, wins."""
    side = path.parent / "hf_quant_config.json" if path.name.endswith(".json") else None
    if side is None or "quantization_config" in raw or not side.is_file():
        return raw
    try:
        q = json.loads(side.read_text(encoding="utf-8", errors="replace")).get("quantization")
    except (json.JSONDecodeError, ValueError, AttributeError):
        raise SymcostError(f"{side}: invalid JSON (expected {{\"quantization\": {{\"quant_algo\": ...}}}})") from None
    if not isinstance(q, dict) or not isinstance(q.get("quant_algo"), str):
        raise SymcostError(f"{side}: field 'quantization.quant_algo': missing")
    conv = {"quant_method": "modelopt", "quant_algo": q["quant_algo"],
            "ignore": [str(x) for x in q.get("exclude_modules") or []]}
    for key in ("kv_cache_quant_algo", "group_size"):
        if key in q:
            conv[key] = q[key]
    return {**raw, "quantization_config": conv}


#: adapters validated during one CLI command, by source (``caching``): the command loads its model
#: for its warnings and again to build it; off elsewhere, so a file rewritten between two calls
#: is read again
_LOADED: dict[str, tuple] | None = None


@contextmanager
def caching():
    """Validate each source once inside the block (one CLI command)."""
    global _LOADED
    _LOADED = {}
    try:
        yield
    finally:
        _LOADED = None


def load_config(source: str | dict, name: str | None = None):
    """The validated adapter for ``source`` (path, bundled name, or an already-parsed dict)."""
    if _LOADED is not None and isinstance(source, str) and name is None:
        if source not in _LOADED:
            _LOADED[source] = _load_config(source, None)
        return _LOADED[source][0]
    return _load_config(source, name)[0]


def loaded(source: str) -> tuple | None:
    """(adapter, raw config) of a source validated inside ``caching``, else None."""
    return (_LOADED or {}).get(source)


def _load_config(source: str | dict, name: str | None):
    if isinstance(source, dict):
        raw, name = source, name or "model"
    else:
        default_name, raw = read_json(source)
        own = raw.get("name") if raw.get("model_type") == "symcost" else None  # a spec names itself
        name = name or (own if isinstance(own, str) and own.strip() else default_name)
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise SymcostError("field 'model_type': missing (every Hugging Face config.json names one)")
    cls = architectures.get(model_type, raw)
    try:
        return cls.model_validate({**raw, "name": name}), raw
    except ValidationError as e:
        raise SymcostError(validation_message(e)) from None
    except RecursionError:
        raise SymcostError("config: nested too deeply") from None


def build(config) -> Model:
    """The architecture-neutral ``Model`` for an adapter (or anything ``load_config`` takes)."""
    if not isinstance(config, Adapter):
        config = load_config(config)
    return config.to_model()
