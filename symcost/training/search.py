"""``train --search``: every valid layout of a model on G GPUs, evaluated as arrays.

Candidates: N_tp·N_cp·N_pp·N_dp = G with N_tp dividing the heads (≤ ``max_tp``, inside a node),
N_cp dividing the sequence, N_pp ≤ L, N_ep dividing both N_dp·N_cp and E, micro-batches b with
b·N_dp dividing the global batch, every ZeRO stage and recompute mode asked for. For each, the
per-GPU memory of every pipeline stage (``plan`` + ``activations``, the same formulas ``train``
uses) and the step time (``steptime`` on ``comm``'s volumes) are computed with NumPy over all
candidates at once: the per-layer activation formulas are compiled once per (group, recompute,
sp) with ``lambdify`` (``_compile``) and the stage compositions once per N_pp; the candidates
are built as NumPy columns (``Rows``), never as Python tuples. ``tests/test_training_plan.py``
checks sampled rows against ``train_memory`` and ``comm``.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import sympy

from ..conventions import Backward
from ..notation import sym
from ..numeric import compile_expr
from ..terms import exact
from .activations import activations
from .memory import ACT_BYTES
from .plan import GRAD_BYTES, OPTIMIZER_BYTES, Plan, stages
from .steptime import spans


def _divisors(n: int) -> list[int]:
    return [i for i in range(1, n + 1) if n % i == 0]


class Rows:
    """The candidate layouts as NumPy columns (dp, tp, pp, ep, cp, micro-batch, ZeRO, recompute);
    ``rows[i]`` is the i-th as a tuple."""

    names = ("dp", "tp", "pp", "ep", "cp", "micro_batch", "zero", "recompute")

    def __init__(self, cols: dict, recomputes):
        self.cols, self.recomputes = cols, tuple(recomputes)

    def __len__(self) -> int:
        return len(self.cols["dp"])

    def __getitem__(self, i) -> tuple:
        c = self.cols
        return (*(int(c[k][i]) for k in ("dp", "tp", "pp", "ep", "cp", "b", "zero")), self.recomputes[c["rc"][i]])


def candidates(model, gpus: int, seq: int, global_batch: int, *, zeros=(0, 1, 2, 3),
               recomputes=("none", "selective", "full"), max_tp: int = 8, micro=(1, 2, 4, 8, 16)) -> Rows:
    v = model.values
    E = int(v[sym.E]) if sym.E in v else None
    L = sum(exact(g.count, v) for g in model.groups)
    blocks = []  # (dp, tp, pp, cp, eps) per valid (tp, cp, pp)
    for tp in _divisors(gpus):
        if tp > max_tp:
            continue
        try:
            Plan(tp=tp).check(model)
        except Exception:
            continue
        for cp in _divisors(gpus // tp):
            if seq % cp:
                continue
            for pp in _divisors(gpus // (tp * cp)):
                if pp > L:
                    continue
                dp = gpus // (tp * cp * pp)
                eps = [e for e in _divisors(dp * cp) if E % e == 0] if E else [1]
                for ep in eps:
                    blocks.append((dp, tp, pp, ep, cp))
    base = np.array(blocks, dtype=np.int64).reshape(-1, 5)
    # the product with micro-batch × ZeRO × recompute, in the order (layout, b, z, rc)
    nb, nz, nr = len(micro), len(zeros), len(recomputes)
    reps = nb * nz * nr
    lay = np.repeat(base, reps, axis=0)
    tail = np.array(list(itertools.product(micro, zeros, range(nr))), dtype=np.int64)
    tail = np.tile(tail, (len(base), 1))
    keep = global_batch % (tail[:, 0] * lay[:, 0]) == 0
    lay, tail = lay[keep], tail[keep]
    cols = {"dp": lay[:, 0], "tp": lay[:, 1], "pp": lay[:, 2], "ep": lay[:, 3], "cp": lay[:, 4],
            "b": tail[:, 0], "zero": tail[:, 1], "rc": tail[:, 2]}
    return Rows(cols, recomputes)


def _compile(e):
    """NumPy callable of (B, N_tp, N_cp) (``symcost.numeric``)."""
    return compile_expr(e, (sym.B, sym.N_tp, sym.N_cp))


def evaluate(model, rows, *, seq: int, global_batch: int, gpu, mfu: float = 0.4, kernel="flash",
             act_dtype="bf16", grad_dtype="bf16", optimizer="adamw", ib_bytes_s=50e9,
             gpus_per_node=8, alpha_s=10e-6, overlap=0.0):
    """Per-GPU bytes and step time of every row (dicts of NumPy arrays)."""
    from .flops import train_flops
    v = model.values
    if not isinstance(rows, Rows):  # a list of tuples
        recs = ("none", "selective", "full")
        t = np.array([r[:7] for r in rows], dtype=np.int64).reshape(-1, 7)
        rows = Rows({"dp": t[:, 0], "tp": t[:, 1], "pp": t[:, 2], "ep": t[:, 3], "cp": t[:, 4], "b": t[:, 5],
                     "zero": t[:, 6], "rc": np.array([recs.index(r[7]) for r in rows], dtype=np.int64)}, recs)
    c0 = rows.cols
    dp, tp, pp, ep, cp, b, zero = (c0[k] for k in ("dp", "tp", "pp", "ep", "cp", "b", "zero"))
    rc = np.array(rows.recomputes)[c0["rc"]]
    sp = tp > 1
    a = ACT_BYTES[act_dtype]
    m = global_batch // (b * dp)
    K, bg = float(OPTIMIZER_BYTES[optimizer]), GRAD_BYTES[grad_dtype]
    n_dense = (dp * cp).astype(float)
    n_exp = (dp * cp // ep).astype(float)
    # activations per layer of each group, compiled once per (recompute, sp)
    B, T, Ntp, Ncp = sym.B, sym.T, sym.N_tp, sym.N_cp
    comp = {}
    for r_ in set(rc):
        for s_ in (False, True):
            tree = activations(model, Backward(kernel=kernel, recompute=r_, act_dtype=act_dtype), sp=s_)
            fns = {}
            for g in model.groups:
                if g.name in tree:
                    e = (tree[g.name].total / g.count).xreplace({**v, sym.b_a: a, T: seq})
                    fns[g.name] = _compile(e)
            pre = sum((tree[k].total for k in [c.key for c in model.pre] + ["shared"] if k in tree), sympy.Integer(0))
            post = sum((tree[c.key].total for c in model.post if c.key in tree), sympy.Integer(0))
            fns["__pre"] = _compile(pre.xreplace({**v, sym.b_a: a, T: seq}))
            fns["__post"] = _compile(post.xreplace({**v, sym.b_a: a, T: seq}))
            comp[(r_, s_)] = fns
    per_gpu = np.zeros(len(rows))
    dp_bytes = np.zeros(len(rows))
    tp_bytes = np.zeros(len(rows))
    pp_bytes = np.zeros(len(rows))
    ep_bytes = np.zeros(len(rows))
    cp_bytes = np.zeros(len(rows))
    counts = {k: np.zeros(len(rows)) for k in ("dp", "tp", "pp", "ep", "cp")}
    d = exact(sym.d, v)
    k_route = exact(sym.k, v) if sym.k in v else 0
    kinds = _kinds(model)
    full = {"dp": dp, "tp": tp, "ep": ep, "cp": cp, "b": b, "zero": zero, "rc": rc, "sp": sp, "m": m,
            "n_dense": n_dense, "n_exp": n_exp}
    for p_val in np.unique(pp):
        sel = np.nonzero(pp == p_val)[0]
        c = {k: x[sel] for k, x in full.items()}
        tp_, ep_, cp_, b_, z_, rc_, sp_, m_ = c["tp"], c["ep"], c["cp"], c["b"], c["zero"], c["rc"], c["sp"], c["m"]
        nd, ne = c["n_dense"], c["n_exp"]
        s_tok_ = seq // cp_
        res = {k: np.zeros(len(sel)) for k in ("mem", "dp", "tp", "pp", "ep", "cp")}
        for st_i, st in enumerate(stages(model, int(p_val))):
            dense = st["split"] / tp_ + st["whole"]
            experts = st["experts"] / (ep_ * tp_)
            w = 2 * (dense / np.where(z_ >= 3, nd, 1) + experts / np.where(z_ >= 3, ne, 1))
            g_ = bg * (dense / np.where(z_ >= 2, nd, 1) + experts / np.where(z_ >= 2, ne, 1))
            o = K * (dense / np.where(z_ >= 1, nd, 1) + experts / np.where(z_ >= 1, ne, 1))
            act = np.zeros(len(sel))
            # EP dispatch/combine buffers of one MoE layer (activations.dispatch_buffers, dropless)
            disp = np.where(ep_ > 1, 2 * k_route * (seq // cp_) * b_ * d * a / np.where(sp_, tp_, 1), 0)
            has_moe = any(kinds[n][1] for n in st["layers"])
            work = disp if has_moe else np.zeros(len(sel))
            for (r_, s_), fns in list(comp.items()):
                mask = (rc_ == r_) & (sp_ == s_)
                if not mask.any():
                    continue
                bb, tt, cc = b_[mask], tp_[mask], cp_[mask]
                x = sum(cnt * np.broadcast_to(fns[n](bb, tt, cc), bb.shape) for n, cnt in st["layers"].items() if n in fns)
                if st_i == 0:
                    x = x + fns["__pre"](bb, tt, cc)
                if st_i == int(p_val) - 1:
                    x = x + fns["__post"](bb, tt, cc)
                act[mask] = x
                if r_ == "full":
                    none = comp.get(("none", s_)) or _compile_none(model, kernel, act_dtype, s_, seq, v, a)
                    comp[("none", s_)] = none
                    work[mask] = np.max([np.broadcast_to(none[n](bb, tt, cc), bb.shape)
                                         + (disp[mask] if kinds[n][1] else 0) for n in st["layers"] if n in none], axis=0)
            inflight = np.minimum(m_, p_val - st_i)
            tot = np.ceil(w) + np.ceil(g_) + np.ceil(o) + inflight * act + work
            res["mem"] = np.maximum(res["mem"], tot)
            # communication of this stage (the busiest GPU of each dimension)
            z0, z12 = z_ == 0, (z_ == 1) | (z_ == 2)
            dpb = np.zeros(len(sel))
            for psi, n_ in ((dense, nd), (experts, ne)):
                r = (n_ - 1) / n_
                dpb += np.where(z0, 2 * r * bg * psi, np.where(z12, r * (bg + 2) * psi, r * (4 + bg) * m_ * psi))
            res["dp"] = np.maximum(res["dp"], dpb)
            Lh = sum(st["layers"].values())
            fr = np.where(rc_ == "full", 2, 1)
            r_tp = (tp_ - 1) / tp_
            block = s_tok_ * b_ * d * a
            tpb = np.where(sp_, r_tp * block * Lh * ((2 * fr + 4) + (2 * fr + 2)), 2 * r_tp * block * Lh * (2 * fr + 2))
            res["tp"] = np.maximum(res["tp"], np.where(tp_ > 1, m_ * (tpb + 2 * 2 * r_tp * block), 0))
            sends = 1 if st_i in (0, int(p_val) - 1) else 2
            if p_val > 1:
                res["pp"] = np.maximum(res["pp"], m_ * sends * s_tok_ * b_ * d * a / np.where(sp_, tp_, 1))
            n_moe = sum(cnt for n, cnt in st["layers"].items() if kinds[n][1])
            res["ep"] = np.maximum(res["ep"], m_ * n_moe * np.where(rc_ == "full", 6, 4) * (ep_ - 1) / ep_
                                   * s_tok_ * b_ * k_route * d * a)
            cpw = sum(cnt * kinds[n][0] for n, cnt in st["layers"].items())
            res["cp"] = np.maximum(res["cp"], m_ * cpw * (3 + np.where(rc_ == "none", 0, 1)) * (cp_ - 1)
                                   * s_tok_ * b_ * a)
        per_gpu[sel] = res["mem"]
        for k, arr in (("dp", dp_bytes), ("tp", tp_bytes), ("pp", pp_bytes), ("ep", ep_bytes), ("cp", cp_bytes)):
            arr[sel] = res[k]
    flops = float(train_flops(model).total_at(model.values_with(T=seq, B=global_batch)))
    fwd = float(train_flops(model, recompute="full").total_at(model.values_with(T=seq, B=global_batch))) - flops
    sel = float(train_flops(model, recompute="selective").total_at(model.values_with(T=seq, B=global_batch))) - flops
    step_flops = flops + np.where(rc == "full", fwd, np.where(rc == "selective", sel, 0))
    world = dp * tp * pp * cp
    compute = step_flops / world / (gpu.bf16_tflops * 1e12 * mfu)
    sp_ = spans(dp, tp, pp, ep, cp)
    comm_t = 0
    for dim, arr in (("dp", dp_bytes), ("tp", tp_bytes), ("pp", pp_bytes), ("ep", ep_bytes), ("cp", cp_bytes)):
        beta = np.where(sp_[dim] <= gpus_per_node, gpu.link_gbs * 1e9, ib_bytes_s)
        comm_t = comm_t + arr / beta
    bub = np.where(pp > 1, (pp - 1) / (m + pp - 1), 0.0)
    step = (compute + (1 - overlap) * comm_t) / (1 - bub)
    return {"per_gpu_bytes": per_gpu, "step_time_s": step, "bytes": {"dp": dp_bytes, "tp": tp_bytes,
            "pp": pp_bytes, "ep": ep_bytes, "cp": cp_bytes}, "m": m}


def _compile_none(model, kernel, act_dtype, sp, seq, v, a):
    tree = activations(model, Backward(kernel=kernel, recompute="none", act_dtype=act_dtype), sp=sp)
    return {g.name: _compile((tree[g.name].total / g.count).xreplace({**v, sym.b_a: a, sym.T: seq}))
            for g in model.groups if g.name in tree}


def _kinds(model):
    """Per group: (CP ring width per token, whether it has routed experts)."""
    from ..components.attention import Attention
    from ..components.mla import MLA
    from ..components.moe import MoE
    v = model.values
    out = {}
    for g in model.groups:
        w, moe = 0, False
        for c in g.components:
            if isinstance(c, MLA):
                w = exact(c.H_q * (c.D_nope + c.D_rope + c.D_v), v)
            elif isinstance(c, Attention):
                w = exact(2 * c.H_kv * c.D_h, v)
            moe = moe or isinstance(c, MoE)
        out[g.name] = (w, moe)
    return out


def search(model, *, gpus: int, seq: int, global_batch: int, gpu, top: int = 5, **kw) -> dict:
    rows = candidates(model, gpus, seq, global_batch)
    r = evaluate(model, rows, seq=seq, global_batch=global_batch, gpu=gpu, **kw)
    fits = r["per_gpu_bytes"] <= gpu.memory_bytes
    order = np.lexsort((r["per_gpu_bytes"], r["step_time_s"]))
    best = order[fits[order]][:top]
    names = ("dp", "tp", "pp", "ep", "cp", "micro_batch", "zero", "recompute")
    return {"candidates": len(rows), "fitting": int(fits.sum()),
            "best": [{**dict(zip(names, [x if isinstance(x, str) else int(x) for x in rows[i]])),
                      "per_gpu_bytes": int(r["per_gpu_bytes"][i]), "step_time_s": float(r["step_time_s"][i])}
                     for i in best]}
