"""The host's launch floor of eager execution: a pipeline rank's micro-batch cannot run faster than
its CPU issues the micro-batch's kernels.

In eager PyTorch (Megatron-Core, torchtitan and FSDP2 without CUDA graphs) every kernel is issued
by the host — the Python op, the dispatcher and autograd, ``cudaLaunchKernel`` — and the GPU runs
it once issued. When a micro-batch's kernels are short the GPU waits on the CPU, so one rank's
time per micro-batch is

    t_mb = max(t_F + t_B + t_R,  t_host),   t_host = (n_F + n_B + n_R)·t_launch

(the CPU runs ahead of the GPU between synchronisations; Megatron's all-to-all dispatcher
synchronises once per MoE layer to read the split sizes, and its layers repeat, so the per-layer
maximum summed over a rank's layers is this maximum for the rank). ``t_launch`` is the eager
per-kernel host cost of ``data/host_launch.json`` (with its source); a kernel inside a captured
CUDA graph costs nothing to issue, each captured callable one graph launch per pass.

Kernels counted per layer and micro-batch on one GPU, by mechanism (the module each comes from):

  norm            each of the layer's norms (``Norms.names``): 1 forward, 1 backward
  GEMM            each weight-GEMM leaf of the FLOP tree: 1 forward, 2 backward (dgrad, wgrad);
                  under FP8/MXFP8 one more each way (the input's / the output gradient's quantize
                  kernel; the weights' casts are once per step, not per micro-batch); the router's
                  GEMM stays in bf16
  attention       the fused attention kernel (a scores/values pair): 1 forward, 1 backward;
                  qk-norm 2 + 2, rotary 2 + 2 (q and k), the residual add 1 + 1
  FFN             the activation 1 + 1, the residual add 1 + 1
  MoE             the router's softmax/top-k 1 + 1; the permutation passes of ``moe_work``
                  (permute and unpermute, with the chunk sort under EP): 2·(1 + s) each way; the
                  two all-to-alls (dispatch, combine) each way when N_ep > 1; the experts'
                  grouped GEMMs one cuBLAS GEMM per local expert (Transformer Engine's
                  ``GroupedLinear`` → ``general_grouped_gemm``, one GEMM per expert over its
                  streams): E_loc forward, 2·E_loc backward per leaf, one multi-tensor quantize
                  each way under FP8; the activation 1 + 1, the residual add 1 + 1
  ends            the embedding 1 + 1 on the first rank; the head's GEMM and the loss (3 kernels:
                  logits' softmax/cross-entropy, its reduction, the scale) 3 + 3 on the last

Not counted: other mixers' own elementwise kernels (Mamba-2 scans, Gated DeltaNet, MLA's
up-projection norms are counted as GEMMs/norms only), the optimizer's multi-tensor kernels (a few
per step) and the collectives of data parallelism (issued once per bucket). Full recomputation
issues the forward's kernels again; selective the attention kernel again.

``graphs`` (the framework's CUDA-graph scopes; default none, Megatron's and torchtitan's): ``attn``
replaces each attention block's kernels (its input norm, GEMMs, qk-norm, rotary, attention,
residual) by one launch each way, ``moe_router`` the router's (its GEMM and softmax/top-k),
``mlp`` a dense FFN block's, ``full_iteration`` the whole micro-batch (one launch each way);
``moe_preprocess`` is the dispatcher's split-size bookkeeping, not counted above.
"""
from __future__ import annotations

import json
from functools import cache
from importlib import resources

from ..core.errors import SymcostError
from ..core.notation import sym

SCOPES = ("none", "attn", "moe_router", "moe_preprocess", "mlp", "full_iteration")


@cache
def data() -> dict:
    return json.loads((resources.files("symcost.data") / "host_launch.json").read_text(encoding="utf-8"))


def launch_seconds() -> tuple[float, float]:
    """(eager seconds per kernel, seconds per graph launch) from ``data/host_launch.json``."""
    d = data()
    return d["eager_us_per_kernel"] * 1e-6, d["graph_launch_us"] * 1e-6


def parse_graphs(value) -> tuple:
    """``--cuda-graphs none|attn,moe_router,...`` (or a list) -> the scopes; exit-2 message on a bad one."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for s in (x.strip() for x in items):
        if s not in SCOPES:
            raise SymcostError(f"--cuda-graphs: unknown scope {s!r} (one of {', '.join(SCOPES)})")
        if s != "none":
            out.append(s)
    if "moe_preprocess" in out and "moe_router" not in out:
        raise SymcostError("--cuda-graphs: moe_preprocess needs moe_router (Megatron-Core's rule)")
    return tuple(out)


def _component_kernels(comp, leaves: list[str], *, fp8: bool, ep: int, graphs: tuple, moe_sort: bool,
                       local_experts: int) -> tuple[float, float]:
    """(forward, backward) kernels of one component of a layer (module docstring)."""
    from ..components.moe import MoE
    from ..training.compute import kernel_class
    kind = type(comp).__name__
    if kind == "Norms":
        n = 0 if comp.weightless else len(comp.names)
        return n, n
    f = b = 0.0
    router_f = router_b = 0.0
    for path in leaves:
        c = kernel_class(path)
        leaf = path.rsplit("/", 1)[-1]
        if c == "gemm":
            if leaf == "router":
                router_f, router_b = router_f + 1, router_b + 2
                continue
            f, b = f + 1 + fp8, b + 2 + fp8
        elif c == "grouped_gemm":
            f, b = f + local_experts + fp8, b + 2 * local_experts + fp8
        elif c == "attention" and (leaf == "scores" or leaf.endswith("_scores")):
            f, b = f + 1, b + 1
    if isinstance(comp, MoE):
        router_f, router_b = router_f + 1, router_b + 1  # softmax / top-k
        if "moe_router" in graphs:
            router_f, router_b = min(router_f, 1), min(router_b, 1)
        perm = 2 * (1 + moe_sort)
        a2a = 2 if ep > 1 else 0
        f += router_f + perm + a2a + 2  # activation, residual add
        b += router_b + perm + a2a + 2
        return f, b
    if getattr(comp, "qk_norm", False):
        f, b = f + 2, b + 2
    if getattr(comp, "rope", False):
        f, b = f + 2, b + 2
    if kind == "FFN":
        f, b = f + 1, b + 1  # the activation
    f, b = f + 1, b + 1  # the residual add
    return f, b


def layer_kernels(model, group, leaves: list[str], *, precision: str, ep: int, graphs: tuple = ()) -> tuple:
    """(forward, backward) kernels of one layer of ``group`` per micro-batch on one GPU; ``leaves``
    the FLOP-tree paths of the group (``compute.forward_leaves``' keys under ``group.name/``)."""
    from ..components.moe import MoE
    if "full_iteration" in graphs:
        return 0.0, 0.0  # the micro-batch is one launch each way (``rank_kernels``)
    v = model.values
    fp8 = precision != "bf16"
    local = max(int(v[sym.E]) // ep, 1) if sym.E in v else 1
    sort = ep > 1 and local > 1
    f = b = 0.0
    norms = [c for c in group.components if type(c).__name__ == "Norms"]
    for comp in group.components:
        key = getattr(comp, "key", "")
        mine = [p for p in leaves if p.split("/")[1:2] == [key]]
        cf, cb = _component_kernels(comp, mine, fp8=fp8, ep=ep, graphs=graphs, moe_sort=sort, local_experts=local)
        kind = type(comp).__name__
        graphed = (kind != "Norms" and not isinstance(comp, MoE) and key == "self_attn" and "attn" in graphs) or \
                  (kind == "FFN" and "mlp" in graphs)
        if graphed:
            cf, cb = 1.0, 1.0
        f, b = f + cf, b + cb
    if "attn" in graphs and norms:  # the input norm runs inside the attention block's graph
        f, b = f - 1, b - 1
    return f, b


def group_kernels(model, precision: str, ep: int, graphs: tuple = ()) -> dict:
    """{group name: (forward, backward, attention kernels)} of one layer of each group."""
    leaves = forward_leaves_paths(model)
    out = {}
    for g in model.groups:
        mine = [p for p in leaves if p.split("/", 1)[0] == g.name]
        lf, lb = layer_kernels(model, g, mine, precision=precision, ep=ep, graphs=graphs)
        out[g.name] = (lf, lb, sum(1 for p in mine if p.rsplit("/", 1)[-1] == "scores"))
    return out


def rank_kernels(model, setup, stage: dict, first: bool, last: bool, precision: str, graphs: tuple = (),
                 per_group: dict | None = None, ep: int | None = None, recompute: str | None = None) -> dict:
    """{"forward", "backward", "recompute"} kernels of one pipeline rank per micro-batch
    (``plan.rank_stages`` entry ``stage``); ``per_group`` (``group_kernels``), ``ep`` and ``recompute``
    given by ``search`` in place of ``setup``'s."""
    if "full_iteration" in graphs:
        return {"forward": 1.0, "backward": 1.0, "recompute": 0.0}
    ep = setup.plan.ep if ep is None else ep
    per_group = per_group or group_kernels(model, precision, ep, graphs)
    f = b = attn_f = 0.0
    for name, n in stage["layers"].items():
        if name not in per_group or not n:
            continue
        lf, lb, la = per_group[name]
        f, b, attn_f = f + n * lf, b + n * lb, attn_f + n * la
    if first:
        f, b = f + 1, b + 1
    if last:
        f, b = f + 1 + 3, b + 2 + 3
    rc = setup.recompute.mode if recompute is None else recompute
    again = f if rc == "full" else attn_f if rc == "selective" else 0.0
    return {"forward": f, "backward": b, "recompute": again}


@cache
def _paths(model) -> tuple:
    from ..core.conventions import Phase
    return tuple(model.flops(Phase(kind="prefill", attention="causal", logits="all")).flatten())


def forward_leaves_paths(model) -> tuple:
    """The FLOP tree's leaf paths (no values needed to count kernels)."""
    try:
        return _paths(model)
    except TypeError:  # an unhashable model: not cached
        return _paths.__wrapped__(model)


def host_seconds(kernels: dict) -> float:
    """t_host of one micro-batch: the rank's kernels × the eager per-kernel host cost (graph
    launches at the graph cost when the whole iteration is captured)."""
    t_k, _ = launch_seconds()
    return sum(kernels.values()) * t_k
