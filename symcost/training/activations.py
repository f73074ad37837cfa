"""Activation memory of training: the tensors one micro-batch's backward keeps, from each component.

Every component declares what its backward needs (``Component.saved(bw)``, a list of
``primitives.Saved``: token rows × width × bytes per element, and how tensor parallelism splits
it); this module only sums the declarations over the layer groups, once per layer, plus the
tables every layer shares (``saved_shared``: the RoPE cos/sin), and applies the parallel splits:

    bytes = Σ_groups L_g · Σ_saved rows·width·nbytes / split  +  embedding + final norm + head/loss

with rows = B·T (``T → T/N_cp`` under context parallelism), split = N_tp for head/FFN/vocab
shards, N_tp for hidden-wide tensors only under sequence parallelism, 1 otherwise.
Recomputation (``conventions.Backward``): ``selective`` changes what attention declares (the
core's inputs instead of its probabilities); ``full`` keeps only each layer's input ``b_a·d``
(transformers' / Megatron's full checkpointing; plus, once, an input every checkpointed
layer shares, ``Component.checkpoint_shared``: Zamba's original embeddings; a group whose layers
are parts of transformers' decoder layers states how many checkpointed layers they make,
``LayerGroup.checkpoints``), and while one layer is recomputed in backward
its own saved set is alive again (``per_layer``: the train command adds the largest), which a
saved-tensors count does not see.

Training runs on text tokens: a vision or audio tower (and its projector) is fed no image and
saves nothing (``Component.modality``); its encoder layer groups are left out, also under full
recompute. MTP / next-n modules are trained as one more layer group on the last stage under
``--mtp`` (``mtp.with_mtp``: their components, like any layer's).
Images in the training sequence are not modelled (the train command has no
``--images``); the tower's per-image FLOPs are in ``symcost flops --images``.

The convention is transformers' reference modules (what ``tests/test_activations.py`` measures
with ``saved_tensors_hooks``); ``korthikanti`` is the published dense-GPT closed form
``s·b·h·(34 + 5·a·s/h)`` (Korthikanti et al. 2022, Table 2) kept as a named preset.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import sympy

from ..components.moe import MoE
from ..core.conventions import Backward
from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.primitives import Saved
from ..core.terms import Terms
from .allocator import cached_logits

B, T = sym.B, sym.T


def routed_rows(k, E, tokens, capacity=None):
    """Token rows the routed experts of one MoE layer process for ``tokens`` routed tokens.

    Dropless (``capacity=None``, Megatron's default for current MoE recipes and what transformers
    computes): k·tokens, every assignment kept, balanced over the experts. With a capacity factor
    c_f, Megatron's ``--moe-expert-capacity-factor`` with ``--moe-pad-expert-input-to-capacity``:
    each expert takes exactly cap = ⌈c_f·k·tokens/E⌉ rows from each rank's tokens
    (``moe_utils.get_capacity``; assignments beyond it are dropped, short experts padded), so
    E·⌈c_f·k·tokens/E⌉ rows — the most a capacity-limited layer can hold, whatever the routing.
    """
    if capacity is None:
        return k * tokens
    return E * sympy.ceiling(sympy.Rational(capacity) * k * tokens / E)


def _records(c, bw: Backward, capacity=None) -> list[Saved]:
    try:
        recs = c.saved(bw)
    except NotImplementedError as e:
        raise SymcostError(f"activation memory: {e} (use --activations korthikanti for a dense "
                           f"GPT estimate)") from None
    if capacity is not None and isinstance(c, MoE):
        # the routed-assignment rows (k·B·T, dropless) become the capacity-padded E·cap
        dropless = c.k * B * T
        rows = routed_rows(c.k, c.E, B * T, capacity)
        recs = [replace(s, rows=rows) if s.rows is not None and sympy.expand(s.rows - dropless) == 0 else s
                for s in recs]
    return recs


def dispatch_buffers(c, capacity=None, *, sp: bool = False, tp=sym.N_tp, cp=sym.N_cp) -> sympy.Expr:
    """Transient bytes of one MoE layer's expert-parallel token dispatch (Megatron's all-to-all
    dispatcher): the permuted tokens sent and the tokens received, rows·d·b_a each (rows =
    ``routed_rows`` of the rank's B·T/N_cp tokens; ÷N_tp under sequence parallelism, where each TP
    rank dispatches its own tokens). Alive while the layer dispatches (the combine reuses the
    sizes), not saved for backward: counted once, as working memory, like a recomputed layer."""
    rows = routed_rows(c.k, c.E, B * T / cp, capacity)
    return 2 * rows * c.d * sym.b_a / (tp if sp else 1)


def _bytes(s: Saved, *, sp: bool, tp=sym.N_tp, cp=sym.N_cp) -> sympy.Expr:
    rows = B * T if s.rows is None else s.rows
    rows = rows.xreplace({T: T / cp}) if cp != 1 else rows
    split = {"tp": tp, "seq": tp if sp else 1, "none": 1}[s.split]
    return rows * s.width * s.nbytes / split


def _tree(records: list[Saved], **kw) -> Terms:
    t = Terms()
    for s in records:
        t.add(s.name, _bytes(s, **kw), s.doc or None)
    return t


def layer_input(c_d) -> Saved:
    return Saved("layer_input", c_d, sym.b_a, "seq", doc="checkpointed layer input (full recompute)")


def text_groups(model):
    """The layer groups a text-only training step runs: every group but a tower's own blocks
    (vision/audio encoder layers, ``Component.modality``), which see no text token and save nothing."""
    return [g for g in model.groups if any(c.modality == "text" for c in g.components)]


def op_saved(components, bw: Backward) -> list[Saved]:
    """What torchtitan's op-level selective activation checkpointing keeps of one layer
    (``--recompute op``; torchtitan's policy of its 2024-25 benchmarks, ``_apply_ac_to_transformer_block``
    with ``_save_list`` = mm, the SDPA kernels, reduce-scatter, and "recompute every second mm"; later
    torchtitan names the saved tensors per model, ``sac_save_list``): the block's input b_a·d (the checkpoint's argument), the
    outputs of the 1st, 3rd, 5th ... dense ``mm`` of the layer in forward order (the components'
    ``Linear`` primitives as declared: q, k, v, o, gate, up, down; routed experts run grouped
    matmuls, which are not in the list, and are recomputed), and the attention kernel's outputs
    (the flash declaration's ``out`` and fp32 ``lse``). Everything else is recomputed in backward."""
    from ..core.primitives import Linear
    flash = Backward(kernel="flash", recompute="none", act_dtype=bw.act_dtype, scan=bw.scan)
    width = next((w for w in (c.residual_width() for c in components) if w is not None), sym.d)
    out = [replace(layer_input(width), doc="checkpointed block input (op-level selective)")]
    n = 0
    for c in components:
        for p in c.primitives(None):
            if isinstance(p, Linear) and p.active is None and p.rows is None and not p.tied and p.params() != 0:
                n += 1
                if n % 2:
                    out.append(Saved(f"{c.key}/{p.name}", p.out * p.copies, sym.b_a, "tp" if p.tp == "col" else "seq",
                                     doc=f"mm #{n} output (saved: odd-numbered)"))
        try:
            recs = c.saved(flash)
        except NotImplementedError:
            recs = []
        out += [replace(s, name=f"{c.key}/{s.name}") for s in recs if s.name in ("out", "lse")]
    return out


#: Megatron-LM's ``--recompute-modules`` (selective granularity) symcost models, and what each keeps
RECOMPUTE_MODULES = ("core_attn", "mlp", "moe", "layernorm", "moe_act", "mla_up_proj")
#: the two pre-norms of a Megatron transformer layer (``input_layernorm``, ``pre_mlp_layernorm``) as the
#: engine's Norms name them; ``layernorm`` recomputation applies to layers built of exactly these
PRE_NORMS = ("input_layernorm", "post_attention_layernorm")


def module_records(c, bw: Backward, modules, capacity=None) -> list[Saved]:
    """What component ``c`` keeps under Megatron's selective recomputation of ``modules``
    (``transformer_layer.py`` / ``--recompute-modules``; ``transformer_config.py``: core_attn, mlp and
    moe use normal checkpointing, layernorm and moe_act output-discarding checkpointing,
    ``tensor_parallel.CheckpointWithoutOutput``: the function runs under no_grad, its inputs are
    saved, its output is freed once its consumer has saved it and recomputed in backward):

      core_attn  (the default) the attention core (the attention components' ``selective``
                 declaration: q, k, v kept)
      mlp, moe   a dense FFN / an MoE block from its input alone (b_a·d, hidden-wide)
      layernorm  the layer's two pre-norms (``input_layernorm``, ``pre_mlp_layernorm``): each keeps its
                 input (b_a·d) instead of its saved set, and the norm's output, which the attention's
                 and the FFN's first projections saved as their ``input``, is discarded
      moe_act    the routed experts' activation: its input, fc1's output (``experts/gate_up``), stays
                 saved; the activation's own tensors (``experts/act``) and its output, fc2's input
                 (``experts/down_input``), are discarded (Megatron: grouped-GEMM experts only)
      mla_up_proj  MLA's up projections and RoPE (``multi_latent_attention.py``
                 ``qkv_up_proj_and_rope_apply``): the inputs stay (the normed q and kv latents, the
                 rotary key slice — below fp32 it keeps the kv_a_proj output it is a view of,
                 b_a·(d_kv + D_rope) — and the shared rotary table); q, k and v, which the core
                 saved, are discarded (eager's batched PV copy of v, H_q·D_v, when B > 1 and H_q > 1,
                 is the core's own and stays)
    Others as declared."""
    from ..components.ffn import FFN
    from ..components.norm import Norms
    if "mlp" in modules and isinstance(c, FFN) or "moe" in modules and isinstance(c, MoE):
        return [Saved("input", c.d, sym.b_a, "seq", doc=f"{c.key} input: the module is recomputed (--recompute-modules)")]
    if "layernorm" in modules and isinstance(c, Norms) and tuple(c.names) == PRE_NORMS:
        return [Saved(f"{n}/input", c.dim, sym.b_a, "seq", doc="CheckpointWithoutOutput's saved input (layernorm)")
                for n in c.names]
    if "layernorm" in modules and c.key in ("self_attn", "mlp"):  # the discarded pre-norm output they saved
        recs = module_records(c, bw, tuple(x for x in modules if x != "layernorm"), capacity)
        return [s for s in recs if s.name != "input"]
    from ..components.mla import MLA
    if "mla_up_proj" in modules and isinstance(c, MLA):
        rest = tuple(x for x in modules if x != "mla_up_proj")
        recs = [s for s in module_records(c, bw, rest, capacity) if s.name not in ("q", "k", "v")]
        if bw.kernel == "eager" and "core_attn" not in rest:  # matmul(probs, v) folded [B, H_q]: a copy
            from ..core.primitives import is_one
            copy = (1 - is_one(sym.B)) * (1 - is_one(c.H_q))
            recs.append(Saved("v_copy", copy * c.H_q * c.D_v, sym.b_a, doc="eager PV's copy of v (B, H_q > 1)"))
        if bw.upcast:
            recs.append(Saved("kv_a_output", c.d_kv + c.D_rope, sym.b_a, "seq",
                              doc="kv_a_proj's output, kept by the checkpoint's rotary-key input (a view)"))
        return recs
    if "moe_act" in modules and isinstance(c, MoE):
        recs = module_records(c, bw, tuple(x for x in modules if x != "moe_act"), capacity)
        return [s for s in recs if s.name not in ("experts/act", "experts/down_input")]
    if "core_attn" in modules and bw.recompute == "none":
        bw = Backward(kernel=bw.kernel, recompute="selective", act_dtype=bw.act_dtype, scan=bw.scan)
    elif "core_attn" not in modules and bw.recompute == "selective":
        bw = Backward(kernel=bw.kernel, recompute="none", act_dtype=bw.act_dtype, scan=bw.scan)
    return _records(c, bw, capacity)


def check_modules(model, modules) -> None:
    """``--recompute-modules`` the model's layers can take (Megatron's own checks where it has them)."""
    from ..components.norm import Norms
    if "layernorm" in modules:
        for g in text_groups(model):
            names = [tuple(c.names) for c in g.components if isinstance(c, Norms)]
            if PRE_NORMS not in names:
                raise SymcostError(f"--recompute-modules layernorm: {model.name}'s {g.name} are not Megatron's pre-norm "
                                   f"layer (input_layernorm + pre_mlp_layernorm; its norms: "
                                   f"{', '.join('/'.join(n) for n in names) or 'none'})")
    from ..components.mla import MLA
    if "mla_up_proj" in modules and not any(isinstance(c, MLA) for g in text_groups(model) for c in g.components):
        raise SymcostError(f"--recompute-modules mla_up_proj: {model.name} has no multi-latent attention (Megatron: "
                           f"mla_up_proj needs multi_latent_attention)")
    if "moe_act" in modules and not any(isinstance(c, MoE) for g in text_groups(model) for c in g.components):
        raise SymcostError(f"--recompute-modules moe_act: {model.name} has no routed experts (Megatron: moe_act needs "
                           f"the grouped-GEMM experts)")


def activations(model, bw: Backward, *, sp: bool = False, tp=sym.N_tp, cp=sym.N_cp, capacity=None,
                op: bool = False, loss_chunks: int = 1, modules=None, compiled_loss: bool = False,
                gathered_head: bool = False) -> Terms:
    """Bytes saved for backward over one micro-batch of ``B`` sequences of ``T`` tokens, all layers.

    Symbolic in ``B``, ``T``, ``b_a`` and the parallel sizes ``N_tp``, ``N_cp`` (pass integers to
    fix them); substitute the model's values to get numbers. ``capacity``: the MoE capacity
    factor (``routed_rows``), None = dropless. ``op``: torchtitan's op-level selective
    checkpointing of every decoder layer (``op_saved``; ``bw.recompute`` is then "none").
    ``loss_chunks`` > 1: a chunked / fused cross-entropy keeps no log-softmax of the whole sequence
    (the head's ``log_softmax_fp32`` goes; one chunk's is in ``loss_peak``). ``modules``: Megatron's
    ``--recompute-modules`` under selective recomputation (``module_records``; None = core_attn).
    ``compiled_loss``: a compiled cross-entropy saves the logits, not the fp32 log-softmax (the head's
    ``log_softmax_fp32`` goes; ``loss_peak`` kind "compiled" holds the logits). ``gathered_head``:
    the head saves its all-gathered input, b_a·d per token of the whole sequence, not its sequence
    shard — DTensor tensor parallelism (torchtitan's plan, ``parallelize_llama.py`` apply_tp:
    ``"output": ColwiseParallel(input_layouts=Shard(1))`` redistributes the final norm's output to
    ``Replicate`` and the matmul's autograd saves that replicated input), where Megatron's
    ``LinearWithGradAccumulationAndAsyncCommunication`` saves the shard and gathers it again in backward.
    Only the head's: the decoder layers' projections under the same plan (``PrepareModuleInput`` to
    ``Replicate`` before wq/wk/wv and w1/w3) save their gathered inputs too, which is not counted (under
    torchtitan's full and op-level checkpointing they are alive only while a layer is recomputed).
    """
    kw = dict(sp=sp, tp=tp, cp=cp)
    if modules is not None:
        check_modules(model, modules)
    out = Terms()
    for c in model.pre:
        out.add(c.key, _tree(_records(c, bw), **kw), c.label())
    for g in text_groups(model):
        layer = Terms()
        if op:
            layer.add("op_saved", _tree(op_saved(g.components, bw), **kw), "op-level selective checkpoint")
        elif bw.recompute == "full":
            width = next((w for w in (c.residual_width() for c in g.components) if w is not None), sym.d)
            layer.add("layer_input", _bytes(layer_input(width), **kw), "checkpointed layer input b_a·d "
                      "(the residual stream's width: n_hc·d with hyper-connections)")
        else:
            for c in g.components:
                recs = (_records(c, bw, capacity) if modules is None else
                        module_records(c, bw, modules, capacity))
                if recs:
                    layer.add(c.key, _tree(recs, **kw), c.label())
        n = g.checkpoints if bw.recompute == "full" and g.checkpoints is not None else g.count
        out.add(g.name, layer.scale(n), f"{n} layers" if n == g.count else f"{g.count} layers, {n} checkpointed")
    every = {g.name for g in text_groups(model)}
    shared = shared_tensors(model, bw, *((every, set()) if bw.recompute == "full" else (set(), every)), **kw)
    if shared:
        out.add("shared", shared, "computed once, read by every layer")
    for c in model.post:
        recs = [r for r in _records(c, bw) if loss_chunks == 1 and not compiled_loss or r.name != "log_softmax_fp32"]
        if gathered_head and c.key == "lm_head":
            recs = [replace(r, split="none", doc="lm_head input, all-gathered (DTensor ColwiseParallel)")
                    if r.name == "input" else r for r in recs]
        out.add(c.key, _tree(recs, **kw), c.label())
    return out


def shared_tensors(model, bw: Backward, rerun: set[str], keep: set[str], **kw) -> Terms:
    """Tensors computed once per forward and read by every layer, each kept once by name: the
    inputs the checkpoints of the groups with layers full recomputation reruns share
    (``checkpoint_shared``: Zamba's original embeddings; a rerun layer rebuilds its RoPE table
    inside its checkpoint), and what the groups with layers it does not rerun (``keep``) save of
    them (``saved_shared``: the RoPE table of their layer type). Megatron's ``block`` method has
    layers of both kinds, in one group or several."""
    plain = Backward(kernel=bw.kernel, recompute="none" if bw.recompute == "full" else bw.recompute,
                     act_dtype=bw.act_dtype, scan=bw.scan)
    full = Backward(kernel=bw.kernel, recompute="full", act_dtype=bw.act_dtype, scan=bw.scan)
    shared: dict[str, Saved] = {}
    for g in text_groups(model):
        for c in g.components:
            for s in ((c.checkpoint_shared(full) if g.name in rerun else [])
                      + (c.saved_shared(plain) if g.name in keep else [])):
                shared.setdefault(s.name, s)
    return _tree(list(shared.values()), **kw)


def per_layer(model, bw: Backward, capacity=None, **kw) -> dict[str, Terms]:
    """One layer's saved bytes for each layer group (no recomputation), by group name."""
    inner = Backward(kernel=bw.kernel, recompute="none" if bw.recompute == "full" else bw.recompute,
                     act_dtype=bw.act_dtype, scan=bw.scan)
    out = {}
    for g in text_groups(model):
        t = Terms()
        for c in g.components:
            recs = _records(c, inner, capacity)
            if recs:
                t.add(c.key, _tree(recs, **{"sp": False, "tp": sym.N_tp, "cp": sym.N_cp, **kw}), c.label())
        out[g.name] = t
    return out


def korthikanti(model, *, recompute: str = "none", sp: bool = True, tp=sym.N_tp, cp=sym.N_cp) -> Terms:
    """Korthikanti et al. 2022 (Table 2), per layer × L, 2-byte activations, dense MHA GPT layer:
    none: s·b·h·(34 + 5·a·s/h) (÷t with sequence parallelism; without it 10 + 24/t + 5as/(ht));
    selective: 34·s·b·h/t; full: 2·s·b·h. Here s = T/N_cp, b = B, h = d, a = H_q, t = N_tp."""
    s, b, h, t = T / cp, B, sym.d, tp
    a = sym.H_q if sym.H_q in model.values else None
    if a is None:
        raise SymcostError("--activations korthikanti needs attention heads (a dense MHA model)")
    L = sum((g.count for g in model.groups), sympy.Integer(0))
    if recompute == "none":
        per = s * b * h * (34 + 5 * a * s / h) / t if sp else s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    elif recompute == "selective":
        per = 34 * s * b * h / t if sp else s * b * h * (10 + 24 / t)
    elif recompute == "full":
        per = 2 * s * b * h
    else:
        raise SymcostError(f"--recompute: unknown mode {recompute!r}")
    return Terms({"layers": L * per}, {"layers": "Korthikanti et al. 2022 Table 2, per layer × L"})


#: how the cross-entropy runs (``loss_peak``'s ``kind``; ``setup.TrainSetup.loss_kind``)
LOSS_KINDS = ("eager", "parallel", "compiled")


def loss_peak(model, bw: Backward, *, chunks: int = 1, logits_held: bool = True, tp=sym.N_tp, cp=sym.N_cp,
              kind: str = "eager") -> Terms:
    """The transient at the LM head and cross-entropy, beyond what the backward saves (the head's
    ``saved``: its input and the fp32 log-softmax), per token row of the last stage, vocab split over N_tp:

        logits             b_a·V   the head's output in the compute dtype, alive while the model's
                                   output holds it (transformers' ``CausalLMOutput.logits``; torchtitan
                                   deletes ``pred`` before ``loss.backward()``: ``logits_held`` False)
        grad_log_probs     4·V     nll_loss's gradient of the fp32 log-probabilities
        grad_logits_fp32   4·V     log_softmax's gradient of the fp32 upcast ``logits.float()``

    rows = B·T/(N_cp·c): with ``chunks`` c > 1 (Liger's fused linear cross-entropy, torchtitan's
    ``ChunkedLossWrapper``) one chunk's logits and gradients are alive at a time, and its fp32
    log-softmax (4·V, ``log_probs_fp32``) is a transient of the chunk instead of a saved tensor. The forward's own transient (the logits and
    their fp32 upcast, (b_a + 4)·V) is smaller than the backward's. Counted on top of the saved set,
    as one micro-batch's backward peak (``memory``: the larger of it and a recomputed layer's).

        allocator_cached   b_a·V   with the logits freed before backward (``logits_held`` False) and
                                   one chunk: their segment stays reserved, cached and too small
                                   for the fp32 gradient (``allocator.cached_logits``)

    ``kind`` "parallel": torchtitan's loss parallel (``loss_parallel()`` around the step, on
    whenever N_tp > 1: ``parallel_dims.loss_parallel_enabled``), where DTensor runs the cross-entropy
    over the vocabulary shards in Python (``torch/distributed/tensor/parallel/loss.py``):
    ``_nll_loss_and_log_softmax_backward`` forms the gradient as ``(grad_input + torch.exp(x)) ·
    grad_output`` from the saved fp32 log-probabilities x, so beside ``zeros_like(x)`` (grad_log_probs)
    and the sum (grad_logits_fp32) the fp32 ``exp(x)`` is alive (one more 4·V, times min(1, N_tp − 1):
    none at N_tp = 1, where no DTensor is built). The forward's ``_log_softmax`` (the upcast x, the
    shifted x − max, its exp, the result: at most b_a + 3·4 bytes per element with the logits) stays
    below that backward. The allocator: the two fp32 blocks the forward freed (the upcast and the
    shifted copy; the exp's block holds the saved result) serve zeros_like and exp in backward; the
    sum finds no free block and takes a new segment, while the bf16 logits' block stays cached.

    ``kind`` "compiled": ``torch.compile`` of the loss function (torchtitan's
    ``build_cross_entropy_loss`` under ``training.compile``, since torchtitan bbb1b616e, 2025-04):
    Inductor fuses the upcast, log-softmax and NLL. Its partitioner saves the bf16 logits themselves
    (so ``del pred`` frees nothing) and two fp32 row statistics, and the backward is one kernel
    writing the logits' gradient in the compute dtype — no fp32 [rows, V] tensor anywhere (measured
    on the CPU with torch 2.13:
    ``tests/test_allocator_reserve.py``, as the other two kinds). Then the head keeps no ``log_softmax_fp32``
    (``activations(compiled_loss=True)``) and the peak is b_a·V (logits, saved) + b_a·V (gradient)."""
    head = next((c for c in model.post if c.key == "lm_head"), None)
    out = Terms()
    if head is None:
        return out
    if kind not in LOSS_KINDS:
        raise SymcostError(f"loss kind {kind!r}: one of {', '.join(LOSS_KINDS)}")
    rows = B * T / cp / chunks
    V = head.V
    if kind == "compiled":
        out.add("logits", rows * V * sym.b_a / tp, "logits [B·T, V/N_tp], saved by the compiled loss")
        out.add("grad_logits", rows * V * sym.b_a / tp, "the compiled loss's gradient of the logits, compute dtype")
        return out
    if chunks > 1:  # the chunk's log-probabilities: not saved for the whole sequence (``activations``)
        out.add("log_probs_fp32", rows * V * 4 / tp, "fp32 log-softmax of one chunk (chunked loss)")
    if logits_held:
        out.add("logits", rows * V * sym.b_a / tp, "logits [B·T, V/N_tp] in the compute dtype, held by the output")
    out.add("grad_log_probs", rows * V * 4 / tp, "fp32 gradient of the log-probabilities (nll_loss backward)")
    out.add("grad_logits_fp32", rows * V * 4 / tp, "fp32 gradient of the upcast logits (log_softmax backward)")
    if kind == "parallel":
        out.add("exp_log_probs", sympy.Min(1, tp - 1) * rows * V * 4 / tp,
                "DTensor loss parallel's exp(log-probabilities), fp32 (_nll_loss_and_log_softmax_backward)")
    if not logits_held and chunks == 1:  # the freed logits' segment, cached (``allocator.cached_logits``)
        out.add("allocator_cached", cached_logits(rows, V, tp),
                "the freed logits' block, cached by the allocator and too small for the fp32 gradient")
    return out


def backward_buffers(components, *, sp: bool = False, tp=sym.N_tp, cp=sym.N_cp) -> sympy.Expr:
    """Gradient buffers alive while one layer runs its backward, beyond its saved set: the gradient
    arriving at its output and the one it forms for its input (2·b_a·d per token, the residual
    stream's width; ÷N_tp under sequence parallelism), and inside a gated FFN's backward the
    gradient of the down projection's input and those of the gate and up outputs (3·b_a·w/N_tp
    per token, w the widest column-parallel dense projection of the layer: d_ff for a SwiGLU MLP).
    rows = B·T/N_cp. Counted with the layer's working set (``recompute.Recompute.chunk``'s
    ``extra``), never with the saved set: they are gone once the layer's backward ends.

    Built once per (components, sp, tp, cp) (``_backward_buffers``): ``train_memory``, its formula, the
    search's compiled sums and the sheet's fewest-GPUs loop ask for the same layer's buffers many times,
    and the ``Max`` over the layer's widths is the costly part (SymPy compares every pair)."""
    return _backward_buffers(tuple(components), bool(sp), tp, cp)


@lru_cache(maxsize=256)
def _backward_buffers(components: tuple, sp: bool, tp, cp) -> sympy.Expr:
    from ..core.primitives import Linear
    width = next((w for w in (c.residual_width() for c in components) if w is not None), sym.d)
    wide = [p.out for c in components for p in c.primitives(None)
            if isinstance(p, Linear) and p.tp == "col" and p.active is None and p.rows is None]
    rows = B * T / cp
    hidden = 2 * rows * width * sym.b_a / (tp if sp else 1)
    if not wide:
        return hidden
    return hidden + 3 * rows * sympy.Max(*wide) * sym.b_a / tp
