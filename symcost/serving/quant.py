"""Checkpoint weight bytes from ``quantization_config``: every packed weight and every scale tensor.

A checkpoint stores each weight matrix [in → out] (``copies`` of it for routed experts; a fused
``gate_up`` is stored as two matrices, gate and up) in one of these layouts, with groups running
along the input (reduction) dimension; ``b₀`` is the checkpoint's own dtype (``torch_dtype`` /
``dtype``, bf16 by default), used for every tensor that is not quantized:

    none (b₀)          in·out·b₀
    fp8 block [bo,bi]  in·out + 4·⌈out/bo⌉·⌈in/bi⌉             e4m3 + fp32 ``weight_scale_inv``
    fp8 per tensor     in·out + 4 (+ 4 input_scale when activations are static)
    mxfp4  (gpt-oss)   in·out/2 + in·out/32                      e2m1 blocks + E8M0 scale per 32
    nvfp4 (modelopt)   in·out/2 + in·out/16 + 4 + 4               e2m1 + fp8 scale per 16, fp32
                                                                 ``weight_scale_2`` and ``input_scale``
    compressed-tensors int (pack-quantized), b bits, group g:
                       out·⌈in·b/32⌉·4 + b₀·out·⌈in/g⌉ (+ zero points when asymmetric) + 8
                       int32-packed weight, b₀ group scales, the int32[2] ``weight_shape``
    compressed-tensors float 4-bit group 16 (nvfp4-pack-quantized): as nvfp4 above
    awq  int4 g        in·out/2 + ⌈in/g⌉·out/2 + 2·⌈in/g⌉·out    qweight, qzeros, fp16 scales
    gptq b bits g      in·out·b/8 + ⌈in/g⌉·out·b/8 + 2·⌈in/g⌉·out + 4·in   (+ g_idx)

Biases, norms, embeddings, routers and everything a method leaves out stay at b₀. Which matrices
are quantized: compressed-tensors and modelopt follow ``ignore`` (``re:`` entries are regular
expressions, others module names with ``*`` wildcards, matching the module or its children); the
other methods follow ``modules_to_not_convert`` and keep ``lm_head`` unquantized, as transformers
does. Routers stay at b₀ in every method (transformers' DeepSeek/gpt-oss routers are not
``nn.Linear``; the quantized checkpoints we read keep them in bf16). A ``quantization_config``
inside ``text_config`` applies to the language model only (the vision tower stays at b₀).
Per-layer ignore entries (``model.layers.3.…``) are applied as the fraction of decoder layers they
name, spread evenly over the layer groups (exact when every layer is listed, as checkpoints do).

Checkpoint extras the transformers class does not build are counted too: DeepSeek-style MTP
modules (``eh_proj`` present) store their own ``embed_tokens`` and ``shared_head.head`` copies
(DeepSeek-V3's README_WEIGHTS.md; the index lists ``model.layers.61.embed_tokens.weight``), and the
MTP decoder layer is laid out like a routed-expert layer. Buffers saved in the checkpoint (DeepSeek's
``e_score_correction_bias``) are counted in fp32.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import translate
from functools import lru_cache
from fractions import Fraction

import sympy

from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.primitives import Linear, Param
from ..core.terms import Terms, exact
from ..core.units import dtype_bytes

ceil = sympy.ceiling
METHODS = ("fp8", "mxfp4", "modelopt", "compressed-tensors", "awq", "gptq")


def _R(x) -> sympy.Expr:
    x = Fraction(x)
    return sympy.Rational(x.numerator, x.denominator)


@dataclass(frozen=True)
class Layout:
    """How one weight matrix is stored: ``bytes(in, out)`` for one matrix, and a label."""

    label: str
    kind: str  # "dense", "fp8_block", "fp8_tensor", "mxfp4", "nvfp4", "ct_int", "awq", "gptq"
    b: Fraction = Fraction(2)  # bytes per element (dense) / bits (ct_int, gptq) as needed
    block: tuple[int, int] = (128, 128)
    group: int = 128
    bits: int = 4
    symmetric: bool = True
    static_input: bool = False
    scale_bytes: Fraction = Fraction(2)
    #: safetensors dtype and bytes of a block scale (fp8_block, fp4_rows): fp32, or 1-byte
    #: E8M0 under ``scale_fmt: "ue8m0"`` (DeepSeek V4)
    block_scale_store: str = "F32"
    block_scale_b: int = 4

    dense_store: str = "BF16"  # safetensors dtype of a dense layout / of b₀ scales

    def parts(self, I, O) -> dict[str, sympy.Expr]:
        """Bytes of one matrix by safetensors storage dtype: the packed weight first, then every
        scale / zero-point / shape tensor."""
        I, O = sympy.sympify(I), sympy.sympify(O)
        k, g = self.kind, self.group
        if k == "dense":
            return {self.dense_store: I * O * _R(self.b)}
        if k == "fp8_block":
            bo, bi = self.block
            out = {"F8_E4M3": I * O, self.block_scale_store: self.block_scale_b * ceil(O / bo) * ceil(I / bi)}
            if self.static_input:
                out["F32"] = out.get("F32", 0) + 4
            return out
        if k == "fp4_rows":  # two e2m1 per int8, one scale per row and 32 inputs (transformers FP8Experts)
            return {"I8": I * O / 2, self.block_scale_store: self.block_scale_b * O * ceil(I / 32)}
        if k == "fp8_tensor":
            return {"F8_E4M3": I * O, "F32": sympy.Integer(4 + (4 if self.static_input else 0))}
        if k == "mxfp4":
            return {"U8": I * O / 2 + I * O / 32}  # blocks and E8M0 scales are both uint8
        if k == "nvfp4":
            return {"U8": I * O / 2, "F8_E4M3": I * O / 16, "F32": sympy.Integer(8)}
        groups = 1 if g <= 0 else ceil(I / g)
        if k == "ct_int":
            out = {"I32": O * ceil(I * self.bits / 32) * 4 + 8,
                   self.dense_store: _R(self.scale_bytes) * O * groups}
            if not self.symmetric:
                out["I32"] += ceil(O * self.bits / 32) * 4 * groups
            return out
        if k == "awq":
            return {"I32": I * O / 2 + groups * O / 2, "F16": 2 * groups * O}
        if k == "gptq":
            return {"I32": I * O * _R(Fraction(self.bits, 8)) + groups * O * _R(Fraction(self.bits, 8)) + 4 * I,
                    "F16": 2 * groups * O}
        raise AssertionError(k)

    def weight(self, I, O) -> sympy.Expr:
        """Bytes of the packed weight itself."""
        I, O = sympy.sympify(I), sympy.sympify(O)
        if self.kind == "dense":
            return I * O * _R(self.b)
        if self.kind in ("fp8_block", "fp8_tensor"):
            return I * O
        if self.kind in ("mxfp4", "nvfp4", "awq", "fp4_rows"):
            return I * O / 2
        if self.kind == "ct_int":
            return O * ceil(I * self.bits / 32) * 4
        if self.kind == "gptq":
            return I * O * _R(Fraction(self.bits, 8))
        raise AssertionError(self.kind)

    def scales(self, I, O) -> sympy.Expr:
        """Bytes of every scale / zero-point / shape tensor that goes with one matrix."""
        return sympy.Add(*self.parts(I, O).values()) - self.weight(I, O)


_STORE = {Fraction(4): "F32", Fraction(2): "BF16", Fraction(1): "F8_E4M3", Fraction(1, 2): "U8"}


def _dense(b: Fraction, name: str) -> Layout:
    store = "F16" if name.startswith("fp16") else _STORE.get(b, "U8")
    return Layout(name, "dense", b=b, dense_store=store)


@dataclass
class Scheme:
    """A checkpoint's quantization: the layout of quantized matrices and which ones it covers."""

    method: str  # "none", "fp8", ... or "override"
    layout: Layout
    base: Layout
    ignore: tuple[str, ...] = ()
    regex_ignore: bool = False  # compressed-tensors / modelopt: ignore list is exhaustive (lm_head too)
    text_only: bool = False
    note: str = ""
    #: the routed experts' own layout when the checkpoint stores them differently
    #: (``quantization_config.expert_dtype: "fp4"``, DeepSeek V4)
    experts: Layout | None = None

    def quantized_fraction(self, candidates, layer_count: int, indices=None) -> Fraction:
        """Fraction of the decoder layers whose matrix (any of ``candidates``, with ``{i}`` for the
        layer index) this scheme quantizes: over ``indices``, the checkpoint indices of the layers that
        hold the matrix (a layer group's own layers: DeepSeek's first dense layers, the MoE layers after
        them), else over all ``layer_count``."""
        if self.layout is self.base:
            return Fraction(0)
        per_layer = any("{i}" in c for c in candidates) and any(re.search(r"layers\.\d", e) for e in self.ignore)
        idx = (tuple(indices) if indices else range(layer_count)) if per_layer else (0,)
        hit = sum(1 for i in idx if not any(self.ignored(c.format(i=i)) for c in candidates))
        return Fraction(hit, len(idx))

    def ignored(self, name: str) -> bool:
        """Whether ``name`` is on the ignore list: an entry ``re:X`` matches where the regex X matches
        at the start (compressed-tensors), any other entry E where the glob E or E.* matches the whole
        name, or the name is E itself (modelopt). The list is compiled once into one regex
        (``_ignore_matcher``): an NVFP4 checkpoint lists ~150 modules, asked for each layer's matrices."""
        return _ignore_matcher(tuple(self.ignore))(name)


@lru_cache(maxsize=64)
def _ignore_matcher(ignore: tuple):
    """``Scheme.ignored``'s rule over ``ignore`` as one compiled alternation (``fnmatch.translate``
    of each glob is its whole-name regex, so ``re.match`` of the alternation is ``fnmatchcase`` of any)."""
    regexes = [e[3:] for e in ignore if e.startswith("re:")]  # each as written (its own flags)
    globs = [x for e in ignore if not e.startswith("re:") for x in (translate(e), translate(e + ".*"))]
    rx = re.compile("|".join(globs)) if globs else None

    def match(name: str) -> bool:
        return ((rx is not None and rx.match(name) is not None) or name in ignore
                or any(re.match(e, name) for e in regexes))
    return match


def _base_dtype(raw: dict) -> Fraction:
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
    for src in (raw, text):
        for key in ("torch_dtype", "dtype"):
            v = src.get(key)
            if isinstance(v, str) and v:
                try:
                    return dtype_bytes(v.replace("torch.", ""), key)
                except SymcostError:
                    continue
    return Fraction(2)


def quant_config(raw: dict) -> tuple[dict | None, bool]:
    """(``quantization_config``, whether it sat in ``text_config``)."""
    q = raw.get("quantization_config")
    if isinstance(q, dict):
        return q, False
    text = raw.get("text_config")
    if isinstance(text, dict) and isinstance(text.get("quantization_config"), dict):
        return text["quantization_config"], True
    return None, False


def _int(q: dict, key: str, default=None):
    v = q.get(key, default)
    if v is None or isinstance(v, bool) or not isinstance(v, int):
        raise SymcostError(f"field 'quantization_config.{key}': expected an integer, got {v!r}")
    return v


def scheme(raw: dict, override: str | None = None, fallback: bool = False) -> Scheme:
    """The checkpoint's storage scheme from ``raw`` (its config.json), or a uniform ``override`` dtype."""
    b0 = _base_dtype(raw)
    base = _dense(b0, {Fraction(4): "fp32", Fraction(2): "bf16", Fraction(1): "fp8"}.get(b0, str(b0)))
    if override:
        bw = dtype_bytes(override, "--weights-dtype")
        return Scheme("override", _dense(bw, f"{override} (--weights-dtype, no scales)"),
                      _dense(bw, f"{override} (--weights-dtype)"), note=f"--weights-dtype {override}")
    q, text_only = quant_config(raw)
    if q is None:
        return Scheme("none", base, base)
    method = q.get("quant_method")
    ignore = tuple(str(x) for x in (q.get("modules_to_not_convert") or q.get("ignore") or []))
    if method == "fp8":
        wbs = q.get("weight_block_size")
        static = q.get("activation_scheme") == "static"
        if wbs is not None:
            if (not isinstance(wbs, list) or len(wbs) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in wbs)):
                raise SymcostError(f"field 'quantization_config.weight_block_size': expected two "
                                   f"positive integers, got {wbs!r}")
            e8m0 = q.get("scale_fmt") == "ue8m0"
            sc = dict(block_scale_store="F8_E8M0", block_scale_b=1) if e8m0 else {}
            what = "e8m0" if e8m0 else "fp32"
            lay = Layout(f"fp8 e4m3, {what} scale per {wbs[0]}x{wbs[1]} block", "fp8_block",
                         block=(wbs[0], wbs[1]), static_input=static, **sc)
            # transformers moves a top-level ``expert_dtype`` into the quantization config
            expert_dtype = q.get("expert_dtype", raw.get("expert_dtype", "fp8"))
            if expert_dtype not in ("fp8", "fp4"):
                raise SymcostError(f"field 'quantization_config.expert_dtype': expected 'fp8' or 'fp4', "
                                   f"got {expert_dtype!r}")
            experts = Layout(f"fp4 e2m1, {what} scale per row and 32 inputs", "fp4_rows", **sc) \
                if expert_dtype == "fp4" else None
            return Scheme("fp8", lay, base, ignore, text_only=text_only, experts=experts)
        lay = Layout("fp8 e4m3, fp32 scale per tensor", "fp8_tensor", static_input=static)
        return Scheme("fp8", lay, base, ignore, text_only=text_only)
    if method == "mxfp4":
        return Scheme("mxfp4", Layout("mxfp4 (e2m1, E8M0 scale per 32)", "mxfp4"), base, ignore,
                      text_only=text_only)
    if method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        if algo == "NVFP4":
            return Scheme("modelopt", Layout("nvfp4 (e2m1, fp8 e4m3 scale per 16, fp32 global scales)",
                                             "nvfp4"), base, ignore, regex_ignore=True, text_only=text_only)
        if algo == "FP8":
            return Scheme("modelopt", Layout("fp8 e4m3, fp32 scale per tensor", "fp8_tensor",
                                             static_input=True), base, ignore, regex_ignore=True,
                          text_only=text_only)
        return _unknown(f"modelopt quant_algo {q.get('quant_algo')!r}", base, fallback)
    if method == "compressed-tensors":
        groups = q.get("config_groups")
        if not isinstance(groups, dict) or not groups:
            raise SymcostError("field 'quantization_config.config_groups': compressed-tensors "
                               "needs at least one group")
        if len(groups) > 1:
            return _unknown("compressed-tensors with several config_groups", base, fallback)
        w = next(iter(groups.values())).get("weights") or {}
        bits = _int(w, "num_bits")
        gs = w.get("group_size")
        gs = -1 if gs is None else gs
        strategy = w.get("strategy") or ("group" if gs and gs > 0 else "channel")
        if w.get("type", "int") == "float":
            if bits == 4 and gs == 16:
                return Scheme("compressed-tensors", Layout("nvfp4 (e2m1, fp8 e4m3 scale per 16, fp32 "
                                                           "global scales)", "nvfp4"),
                              base, ignore, regex_ignore=True, text_only=text_only)
            if bits == 8:
                bs = w.get("block_structure")
                if strategy == "block" and isinstance(bs, list) and len(bs) == 2:
                    lay = Layout(f"fp8 e4m3, fp32 scale per {bs[0]}x{bs[1]} block", "fp8_block",
                                 block=(bs[0], bs[1]))
                else:
                    lay = Layout("fp8 e4m3, fp32 scale per tensor", "fp8_tensor")
                return Scheme("compressed-tensors", lay, base, ignore, regex_ignore=True,
                              text_only=text_only)
            return _unknown(f"compressed-tensors float{bits} weights", base, fallback)
        if strategy == "channel":
            gs = -1
        lay = Layout(f"int{bits} packed (compressed-tensors {q.get('format', '')}), "
                     f"{base.label} scale per {gs if gs > 0 else 'row'}", "ct_int", bits=bits, group=gs,
                     symmetric=bool(w.get("symmetric", True)), scale_bytes=b0, dense_store=base.dense_store)
        return Scheme("compressed-tensors", lay, base, ignore, regex_ignore=True, text_only=text_only)
    if method in ("awq", "gptq"):
        bits = _int(q, "bits", 4)
        gs = q.get("group_size", 128)
        if method == "awq" and bits != 4:
            return _unknown(f"awq with {bits} bits", base, fallback)
        label = (f"int{bits} {method} (fp16 scales and packed zeros per {gs if gs and gs > 0 else 'column'}"
                 + (", g_idx" if method == "gptq" else "") + ")")
        return Scheme(method, Layout(label, method, bits=bits, group=gs if isinstance(gs, int) else 128),
                      base, ignore, text_only=text_only)
    return _unknown(f"quant_method {method!r}", base, fallback)


def _unknown(what: str, base: Layout, fallback: bool) -> Scheme:
    if not fallback:
        raise SymcostError(f"field 'quantization_config.quant_method': unsupported {what} "
                           f"(supported: {', '.join(METHODS)}); pass --weights-dtype to cost the "
                           f"weights in a dtype of your choice, or --quant-fallback to use the base dtype")
    return Scheme("fallback", base, base, note=f"unsupported {what}: weights costed at {base.label}")


# -- which matrices: HF module names the checkpoint would use ----------------------------------
def _candidates(key: str, name: str, where: str) -> list[str]:
    if where == "pre" or where == "post":
        return {"lm_head": ["lm_head"], "embed_tokens": ["model.embed_tokens"]}.get(name, [f"model.{name}"])
    if where == "vision":
        return [f"vision_tower.{key}.{name}", f"mm_projector.{name}", f"model.visual.{key}.{name}"]
    L = "model.layers.{i}"
    keys = [key] + (["block_sparse_moe", "feed_forward"] if key == "mlp" else [])
    out = []
    for k in keys:
        if name == "router":
            out += [f"{L}.{k}.gate", f"{L}.{k}.router"]
        elif name.startswith("experts_"):
            part = name[len("experts_"):]
            hf = {"gate_up": ["gate_proj", "up_proj", "w1", "w3"], "down": ["down_proj", "w2"],
                  "up": ["up_proj", "w1"]}.get(part, [part])
            out += [f"{L}.{k}.experts.0.{h}" for h in hf] + [f"{L}.{k}.experts.{part}_proj"]
        elif name.startswith("shared_"):
            part = name[len("shared_"):]
            out += [f"{L}.{k}.shared_experts.{part}", f"{L}.{k}.shared_expert.{part}"]
        else:
            out.append(f"{L}.{k}.{name}")
    return out


@dataclass
class Checkpoint:
    scheme: Scheme
    terms: Terms  # bytes per weight, paths as in params() (+ "checkpoint_extras/...")
    scale_terms: Terms  # the scale-tensor part of ``terms``
    storage: Terms  # the same bytes by safetensors dtype (BF16, F32, F8_E4M3, U8, I32, F16)
    dtypes: dict[str, str] = field(default_factory=dict)  # path -> layout label
    notes: list[str] = field(default_factory=list)

    def total(self, values: dict, served: bool = False) -> int:
        """Checkpoint bytes (``served``: without the checkpoint extras, e.g. MTP modules, that an
        engine loads only for speculative decoding)."""
        return _ceil_int((self.served_terms() if served else self.terms).total, values)

    def served_terms(self) -> Terms:
        out = Terms()
        for k, v in self.terms.items():
            if k != "checkpoint_extras":
                out.add(k, v.copy() if isinstance(v, Terms) else v, self.terms.docs.get(k))
        return out

    def depth(self, values: dict, level: int = 2) -> dict[str, int]:
        return {k: _ceil_int(e, values) for k, e in self.terms.depth(level).items()}


def _ceil_int(e, values) -> int:
    """Whole bytes: a packed tensor of a fractional byte count is rounded up."""
    v = sympy.Rational(sympy.sympify(e).xreplace(values))
    return int(sympy.ceiling(v))


def _matrix_parts(p: Linear, lay: Layout, base: Layout) -> tuple[dict, sympy.Expr]:
    """(bytes by storage dtype, scale bytes) of all ``copies`` of one Linear; a fused gate_up is
    stored as two matrices. The bias stays at b₀."""
    split = 2 if p.name.endswith("gate_up") else 1
    I, O = p.in_, p.out / split
    n = p.copies * split
    parts = {k: n * v for k, v in lay.parts(I, O).items()}
    scales = n * lay.scales(I, O)
    if p.bias:
        parts[base.dense_store] = parts.get(base.dense_store, 0) + p.copies * p.out * _R(base.b)
    return parts, scales


def _mix(a: dict, b: dict, f: Fraction) -> dict:
    out = {}
    for k, v in a.items():
        out[k] = out.get(k, 0) + _R(f) * v
    for k, v in b.items():
        out[k] = out.get(k, 0) + _R(1 - f) * v
    return {k: v for k, v in out.items() if v != 0}


def checkpoint(model, raw: dict, override: str | None = None, fallback: bool = False,
               experts_dtype: str | None = None) -> Checkpoint:
    """Weight bytes of the checkpoint ``raw`` describes, one term per weight (scales included).

    ``override``: every weight in that dtype, no scales (``--weights-dtype``); ``experts_dtype``:
    the routed experts alone in that dtype (``--experts-dtype``)."""
    sch = scheme(raw, override, fallback)
    experts = _dense(dtype_bytes(experts_dtype, "--experts-dtype"),
                     f"{experts_dtype} (--experts-dtype)") if experts_dtype else None
    base = sch.base
    layers = model.n_layers()  # decoder layers (towers and LongCat's sub-layer units not counted apart)
    held = {}  # layer group -> the checkpoint indices of its layers (``Model.layers``' order)
    for i, unit in enumerate(model.layers()):
        for g in unit:
            held.setdefault(g.name, []).append(i)
    terms, scales, storage, dtypes = Terms(), Terms(), Terms(), {}
    vision_keys = {c.key for c in model.pre if c.key != "embed_tokens"}

    def bytes_of(p, key, where, group=None):
        """(bytes by storage dtype, scale bytes, label) of one primitive (of layer group ``group``)."""
        if isinstance(p, Param):
            return {base.dense_store: p.params() * _R(base.b)}, 0, base.label
        if p.tied:
            return {}, 0, "tied"
        if experts is not None and p.active is not None:
            parts, _ = _matrix_parts(p, experts, experts)
            return parts, 0, experts.label
        if sch.experts is not None and p.active is not None:
            parts, s = _matrix_parts(p, sch.experts, base)
            return parts, s, sch.experts.label
        if sch.method == "override":
            f = Fraction(1)
        elif p.name == "router" or (where == "vision" and sch.text_only) or \
                (p.name == "lm_head" and not sch.regex_ignore):
            f = Fraction(0)
        else:
            f = sch.quantized_fraction(_candidates(key, p.name, where), max(layers, 1), held.get(group))
        qp, qs = _matrix_parts(p, sch.layout, base)
        bp, _ = _matrix_parts(p, base, base)
        label = sch.layout.label if f == 1 else base.label if f == 0 else \
            f"{sch.layout.label} in {f} of the layers, else {base.label}"
        return _mix(qp, bp, f), _R(f) * qs, label

    def add(path, parts, s, count, label, tree=terms, scale_tree=scales):
        total = sympy.Add(*parts.values())
        if total == 0:
            return
        tree.add(path, total * count) if "/" not in path else _add_path(tree, path, total * count)
        if s != 0:
            _add_path(scale_tree, path, s * count)
        for k, v in parts.items():
            storage.add(k, v * count)
        dtypes[path] = label

    def walk(comps, where, count, group=None, prefix=""):
        for c in comps:
            w = "vision" if (group or "").startswith("vision") or c.key in vision_keys else where
            absent = getattr(c, "absent_from_checkpoint", ())  # allocated by the class, not stored
            for p in c.primitives(None):
                if p.name in absent:
                    continue
                parts, s, label = bytes_of(p, c.key, w, group)
                path = f"{prefix}{group}/{c.key}/{p.name}" if group else f"{prefix}{p.name}"
                add(path, parts, s, count, label)

    walk(model.pre, "pre", 1)
    for g in model.groups:
        walk(g.components, "group", g.count, g.name)
    walk(model.post, "post", 1)
    notes = [sch.note] if sch.note else []
    buf = model.buffers()
    if buf.total != 0:
        add("buffers", {"F32": buf.total * 4}, 0, 1, "fp32")
    _extras(model, base, add, bytes_of, notes)
    return Checkpoint(sch, terms, scales, storage, dtypes, notes)


def _add_path(tree: Terms, path: str, value) -> None:
    head, _, rest = path.partition("/")
    if not rest:
        tree.add(head, value)
        return
    if head not in tree:
        tree.add(head, Terms())
    _add_path(tree[head], rest, value)


def _extras(model, base, add, bytes_of, notes):
    """MTP modules stored in the checkpoint (DeepSeek layout), laid out like a routed-expert layer."""
    ex = model.extras
    if not ex or "mtp" not in ex:
        return
    mtp, L_mtp, pre = ex["mtp"], sym.L_mtp, "checkpoint_extras/mtp/"
    tot = mtp.node_total
    for key in ("enorm", "hnorm", "shared_head_norm", "eh_proj"):
        if key in mtp:
            add(pre + key, {base.dense_store: tot(mtp[key]) * _R(base.b)}, 0, 1, base.label)
    if "layer" in mtp:
        per_layer = sympy.expand(tot(mtp["layer"]) / L_mtp)
        like = [g for g in model.groups
                if sympy.expand(sympy.Add(*(c.params().total for c in g.components)) - per_layer) == 0]
        if not like:
            add(pre + "layer", {base.dense_store: tot(mtp["layer"]) * _R(base.b)}, 0, 1, base.label)
            notes.append("MTP layer costed at the base dtype (no decoder group has its layout)")
        else:
            for c in like[-1].components:
                for p in c.primitives(None):
                    parts, s, label = bytes_of(p, c.key, "group")
                    add(f"{pre}layer/{c.key}/{p.name}", parts, s, L_mtp, label)
    if "eh_proj" in mtp:  # DeepSeek layout: each MTP module stores embed_tokens and shared_head.head
        for key in ("embed_tokens", "shared_head_head"):
            add(pre + key, {base.dense_store: sym.V * sym.d * _R(base.b)}, 0, L_mtp, base.label)


# -- weights as loaded: kernel-layout padding of quantised experts ---------------------------------
#: MXFP4 routed experts as vLLM lays them out for its MoE kernels (``mxfp4.py``
#: ``Mxfp4MoEMethod.create_weights``): the per-rank intermediate size and the hidden size are
#: rounded up to these multiples (intermediate, hidden). Marlin: "n % 256 == 0 and k % 128 == 0"
#: (intermediate to 128, hidden to 256, read in create_weights); FlashInfer/TRT-LLM on SM100: both
#: to 256 (read); Triton (triton_kernels matmul_ogs): create_weights rounds the intermediate size to
#: 64 and leaves the hidden size, and the Hopper swizzle in process_weights_after_loading re-lays the
#: weights — their loaded size (vLLM 0.14.1 logs 64.38 GiB for gpt-oss-120b on an H100,
#: tests/data/serving_startup_logs.json) is that of a hidden size rounded to 256, which is what is
#: used here (inferred from that log, not read in the swizzle code)
MXFP4_PAD = {"marlin": (128, 256), "triton": (64, 256), "flashinfer": (256, 256)}
MOE_BACKENDS = tuple(MXFP4_PAD)
_BLACKWELL = ("B200", "B300", "GB200", "GB300")
_HOPPER = ("H100", "H200", "H20", "H800", "GH200")


def default_moe_backend(gpu, version: tuple[int, ...]) -> str:
    """The MXFP4 MoE backend vLLM picks by default: FlashInfer/TRT-LLM on datacenter Blackwell,
    the Triton (matmul_ogs) kernels on Hopper once ``triton_kernels`` ships with vLLM, Marlin elsewhere.
    ``mxfp4.py`` picks Triton on SM90–SM100 only when ``has_triton_kernels()``; that package became
    a dependency of vLLM in PR #27370 (merged 2025-10-22, first in 0.11.1), so a pip-installed
    0.11.0 on an H100 falls back to Marlin (vLLM 0.10.1 logs 'Weight-only FP4 compression will be
    used leveraging the Marlin kernel' there; 0.14.1 logs 'Using Triton backend')."""
    name = gpu.name.upper() if gpu is not None else ""
    if name.startswith(_BLACKWELL):
        return "flashinfer"
    if name.startswith(_HOPPER) and tuple(version) >= (0, 11, 1):
        return "triton"
    return "marlin"


def placed(whole, whole_term, sliced_term):
    """A rank's routed-expert term by how the experts are placed: ``whole`` True (vLLM expert
    parallelism, ``FusedMoEParallelConfig`` with EP: the MoE layer's own TP size is 1, each rank holds
    whole experts), False (every expert sliced over the N_tp·N_ep ranks), or the symbol x_ep (a sweep
    over layouts of both kinds, ``deploy``: x_ep·whole + (1 − x_ep)·sliced, exact at x_ep ∈ {0, 1})."""
    if whole is True:
        return whole_term
    if whole is False:
        return sliced_term
    return whole * whole_term + (1 - whole) * sliced_term


def expert_padding(model, ck: Checkpoint, weights: Terms, backend: str,
                   whole_experts=False) -> tuple[sympy.Expr, list[str]]:
    """Bytes the engine adds to the rank's routed MXFP4 experts by padding their shapes for the
    kernel (``backend``), as a formula in N_tp, N_ep (``weights``: ``formulas.weights_per_gpu``):

        per expert leaf · (⌈I/(e·a_I)⌉·a_I·e · ⌈d/a_d⌉·a_d / (I·d) − 1)

    with e the ranks an expert's intermediate dimension is sliced over: N_tp·N_ep when the experts
    are TP-sharded, 1 when they are placed whole (``whole_experts``, ``placed``: the kernel pads
    ``intermediate_size_per_partition``, which under expert parallelism is the whole I).

    0 for checkpoints whose experts are not MXFP4 (NVFP4 and the rest load as stored)."""
    if backend not in MXFP4_PAD:
        raise SymcostError(f"--moe-backend: unknown backend {backend!r} (known: {', '.join(MXFP4_PAD)})")
    if ck.scheme.method != "mxfp4":
        return sympy.Integer(0), []
    vals = model.values
    if sym.d_moe not in vals or sym.d not in vals:
        return sympy.Integer(0), []
    a_i, a_d = MXFP4_PAD[backend]
    ee = sym.N_tp * sym.N_ep
    I, d = exact(sym.d_moe, vals), exact(sym.d, vals)

    def sliced_over(e):  # the padding factor of an intermediate dimension sliced over e ranks
        return (sympy.ceiling(sympy.Integer(I) / (e * a_i)) * a_i * e * sympy.ceiling(sympy.Rational(d, a_d)) * a_d
                / (I * d) - 1)
    factor = placed(whole_experts, sliced_over(sympy.Integer(1)), sliced_over(ee))
    extra = sympy.Integer(0)
    for path, v in weights.flatten().items():
        if path.rsplit("/", 1)[-1].startswith("experts_") and "mxfp4" in ck.dtypes.get(path, ""):
            extra += v * factor
    note = (f"MXFP4 experts padded for the {backend} MoE kernel: intermediate to a multiple of {a_i} per rank, "
            f"hidden to {a_d} (vLLM mxfp4.py)")
    return extra, [note] if extra != 0 else []


def nvfp4_scale_padding(model, ck: Checkpoint, *, whole_experts, backend: str,
                        counts: dict | None = None) -> tuple[sympy.Expr, list[str]]:
    """Bytes vLLM adds to the rank's routed NVFP4 experts by swizzling their fp8 block scales for the
    FlashInfer/CUTLASS FP4 MoE kernels (``modelopt.py`` ``swizzle_blockscale``: a scale matrix of
    [rows, cols] is padded to [⌈rows/128⌉·128, ⌈cols/4⌉·4]). Per local expert, with I = d_moe, the
    gate_up scales are [2·I_r, d/16] and the down scales [d, I_r/16], I_r the intermediate slice the
    rank holds (I/(N_tp·N_ep) when experts are TP-sharded, I when they are placed whole), over
    E_r = E (TP-sharded) or E/(N_tp·N_ep) (expert parallelism) local experts:

        E_r · (pad128(2·I_r)·pad4(d/16) − 2·I_r·d/16 + pad128(d)·pad4(I_r/16) − d·I_r/16)   (1 byte each)

    0 unless the routed experts are NVFP4 and the backend is FlashInfer (datacenter Blackwell);
    elsewhere vLLM runs them through Marlin (``prepare_moe_fp4_layer_for_marlin``), not modelled.
    Over ⌈n/N_pp⌉ of each routed-expert group's n layers, or ``counts`` (a pipeline stage's own layers
    by group name, ``formulas.Stage.counts``)."""
    if backend != "flashinfer" or ck.scheme.layout.kind != "nvfp4":
        return sympy.Integer(0), []
    vals = model.values
    if any(s not in vals for s in (sym.d_moe, sym.d, sym.E)):
        return sympy.Integer(0), []
    I, d, E = (sympy.Integer(exact(s, vals)) for s in (sym.d_moe, sym.d, sym.E))
    ee = sym.N_tp * sym.N_ep

    def pad(x, m):
        return sympy.ceiling(x / m) * m

    def scales(Ir, Er):
        return Er * (pad(2 * Ir, 128) * pad(d / 16, 4) - 2 * Ir * d / 16 + pad(d, 128) * pad(Ir / 16, 4) - d * Ir / 16)
    per = placed(whole_experts, scales(I, E / ee), scales(I / ee, E))
    layers = sum((sympy.ceiling(sympy.Integer(exact(g.count, vals)) / sym.N_pp) if counts is None
                  else sympy.sympify(counts.get(g.name, 0)) for g in model.groups
                  if exact(g.count, vals)
                  and any(isinstance(q, Linear) and q.active is not None for c in g.components for q in c.primitives(None))),
                 sympy.Integer(0))
    return layers * per, []


#: words in a checkpoint's name that say it is quantised (``name_says_quantized``)
_QUANT_WORDS = re.compile(r"(?<![a-z0-9])(fp8|fp4|nvfp4|mxfp4|int4|int8|w4a16|w8a8|w4a8|awq|gptq|4bit|8bit|bnb)"
                          r"(?![a-z0-9])", re.IGNORECASE)


def name_says_quantized(name: str, raw: dict) -> str | None:
    """One warning line when a checkpoint's name says FP8/FP4/INT4/AWQ/GPTQ... but its config states
    no quantisation (no quantization_config, no hf_quant_config.json): the weights are then costed at
    the config's dtype, which is likely wrong."""
    if not isinstance(name, str) or quant_config(raw)[0] is not None:
        return None
    m = _QUANT_WORDS.search(name.replace("_", "-"))
    if m is None:
        return None
    return (f"{name}: the name says {m.group(1).upper()} but the config states no quantisation "
            f"(quantization_config / hf_quant_config.json); the weights are costed at the config's dtype "
            f"(--weights-dtype to state it)")
