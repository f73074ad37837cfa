"""``train --search``: every valid training setup of a model on G GPUs, evaluated as arrays.

Swept, each dimension pinned to one value when its option is given (``search(..., zero=...)``,
the CLI's ``--zero``, ``--recompute``, ``--sp/--no-sp``, ``--virtual-stages``, ``--hsdp-shard``,
``--offload``):

  layout     N_tp·N_cp·N_pp·N_dp = G with N_tp dividing the heads and ≤ the GPUs of a node,
             N_cp dividing the sequence, N_pp ≤ L, N_ep dividing both N_dp·N_cp and E;
  v          interleaved 1F1B's model chunks per stage: 1, or v > 1 with N_pp > 1, N_pp·v dividing
             L and m a multiple of N_pp (``setup.check_pipeline``; Megatron-LM's
             ``forward_backward_pipelining_with_interleaving`` runs micro-batches in groups of
             ``microbatch_group_size_per_vp_stage`` = N_pp by default and raises unless the last
             group is empty or at least N_pp long, i.e. unless N_pp divides m); where N_pp·v does
             not divide L, interleaving with Megatron's embedding and loss slots
             (``--account-for-embedding/loss-in-pipeline-split``: N_pp·v dividing L + 2, every chunk
             at least two slots; ``Plan.chunk_sizes``), reported as account_embedding/account_loss;
  schedule   without --mfu, one chunk per rank: the faster of 1F1B and ZB-H1 (``schedule``),
             interleaved 1F1B with v > 1; DualPipe is not swept (its two parameter copies and
             p + 1 in-flight micro-batches are not in ``train_memory``);
  b          micro-batch sizes with b·N_dp dividing the global batch, m = global / (b·N_dp);
  ZeRO       0-3;   HSDP shard N_sh: none, or N_sh | N_dp, N_sh < N_dp, N_ep | N_sh·N_cp, at ZeRO ≥ 1;
  offload    none; optimizer at ZeRO ≥ 1; params at ZeRO 3 (``states.States.check``); without
             --mfu offered beside the rest, costed by the host's CPU-Adam step (``offload``);
  recompute  none | selective | full;
  SP         off, and on when N_tp > 1: it can be the slower choice (Megatron re-gathers each
             block's input in backward: more TP bytes) and it never holds more activation memory.
The MoE capacity factor is a modelling input (it changes what is computed: padded expert rows,
dropped tokens), so it is not swept; every candidate is costed with it.

How: the search evaluates the same term trees ``train`` and ``comm`` substitute, compiled with
``symcost.core.numeric`` and evaluated on arrays. Per-GPU bytes and step time separate into a part
that depends on the layout and the model-state options (ZeRO, HSDP, offload: the ZeRO rule
``states.zero_terms`` and the DP / HSDP / PCIe collective rules of ``comm``, compiled once for the
(ZeRO, offload) pairs asked, with the rank's parameter counts as symbols; the ``Z`` table) and a
part that depends on the layout, the micro-batch and the activation options (recompute, SP: the
``activations`` tree compiled once per (recompute, SP) as exact integer numerator / denominator
pairs, ``comm.activation_collectives`` compiled once per SP with the rank's ``Composition`` as
symbols, compute, the bubble; the ``R`` table). What is discrete per candidate is computed once
per distinct key, as serving does per layout: the pipeline ranks whose composition differs
(``plan.rank_stages``; of identical 1F1B stages the first holds the most), the interleaved
schedule's in-flight chunks (its replay, ``schedule``), the recomputed units. A candidate is a pair
of rows, one of each table, of the same layout; only the per-rank sums, the max over ranks and the
step time (``steptime``'s functions, on arrays) are formed over all candidates. Memory is exact
(int64). A setup where an activation term is not a whole number of bytes (a vocabulary- or
sequence-parallel split that N_tp does not divide: GPT-2's 50,257-token vocabulary over N_tp = 3)
cannot be costed by ``train_memory`` (``terms.exact`` raises); such candidates are left out, and
counted, never rounded.
``tests/test_train_search.py`` checks sampled candidates and the best one against ``train``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy

from ..components.moe import MoE
from ..core.conventions import Backward, Phase
from ..core.errors import SymcostError
from ..core.memo import PerModel
from ..core.notation import sym
from ..core.numeric import compile_exprs, integer_ratio
from ..core.terms import exact
from ..hardware.calibration import efficiency
from ..hardware.links import Links, collective_seconds, link_bytes_s
from .activations import activations, backward_buffers, dispatch_buffers, loss_peak, per_layer, routed_rows
from .comm import Composition, activation_collectives, composition, dp_collectives, replicate_collectives
from . import fp8
from . import pipeline_buffers as pipe
from .allocator import FSDP2
from .flops import padded_parts, train_flops
from .framework import HEADROOM_GIB, budget_bytes, framework
from .memory import rank_units
from .plan import Plan, layer_kinds, rank_stages
from .recompute import Recompute, add_up, recomputed_units
from .schedule import held_states, in_flight
from .setup import ACT_BYTES, TrainSetup, check_capacity
from .states import (OFFLOAD, OPTIMIZER_BYTES, WEIGHT_BYTES, States, host_ops, host_traffic, param_groups,
                     rounded_states, zero_terms)
from .steptime import bubble, spans

RECOMPUTES = ("none", "selective", "full")
ZEROS = (0, 1, 2, 3)
MICRO = (1, 2, 4, 8, 16)


def _divisors(n: int) -> list[int]:
    return [i for i in range(1, n + 1) if n % i == 0]


@dataclass
class Space:
    """The candidates. ``lay``: layout columns (dp, tp, pp, ep, cp, v), sorted by (pp, v);
    ``R``: (layout, micro-batch b, m, recompute index, sp) rows; ``Z``: (layout, zero, sh, offload
    index) rows, sh = dp meaning no HSDP; candidate i is the pair (``r[i]``, ``z[i]``) of rows of
    the same layout, in the order (layout, b, recompute, sp, zero, offload, shard)."""

    lay: dict
    R: dict
    Z: dict
    r: np.ndarray
    z: np.ndarray
    recomputes: tuple

    def __len__(self) -> int:
        return len(self.r)

    def __getitem__(self, i) -> dict:
        ir, iz = int(self.r[i]), int(self.z[i])
        li = int(self.R["L"][ir])
        lay = {k: int(self.lay[k][li]) for k in ("dp", "tp", "pp", "ep", "cp")}
        sh = int(self.Z["sh"][iz])
        acc = bool(self.lay["acc"][li]) if "acc" in self.lay else False
        return {**lay, "virtual_stages": int(self.lay["v"][li]), "account_embedding": acc, "account_loss": acc,
                "micro_batch": int(self.R["b"][ir]),
                "zero": int(self.Z["zero"][iz]), "hsdp_shard": None if sh == lay["dp"] else sh,
                "offload": OFFLOAD[int(self.Z["off"][iz])], "recompute": self.recomputes[int(self.R["rc"][ir])],
                "sp": bool(self.R["sp"][ir])}


def _pins(zeros, offload, hsdp):
    """The (zero, offload) pairs asked for; a pinned combination no layout can run exits 2."""
    pairs = [(z, o) for z in zeros for o in OFFLOAD
             if (o == "none" or (o == "optimizer" and z >= 1) or (o == "params" and z == 3))
             and (offload is None or o == offload)]
    if isinstance(hsdp, int):
        pairs = [(z, o) for z, o in pairs if z >= 1]
    if not pairs:
        what = [f"--zero {zeros[0]}" if len(zeros) == 1 else None,
                None if offload is None else f"--offload {offload}",
                None if not isinstance(hsdp, int) else f"--hsdp-shard {hsdp}"]
        need = ("--offload optimizer needs --zero 1, 2 or 3" if offload == "optimizer" else
                "--offload params needs --zero 3" if offload == "params" else
                "--hsdp-shard needs --zero 1, 2 or 3")
        raise SymcostError(f"--search with {' '.join(w for w in what if w)}: {need}")
    return pairs


def candidates(model, gpus: int, seq: int, global_batch: int, *, zeros=ZEROS, recomputes=RECOMPUTES,
               sp: bool | None = None, virtual: int | None = None, hsdp=None, offload: str | None = None,
               max_tp: int = 8, micro=MICRO) -> Space:
    """Every valid candidate. ``sp``, ``virtual``, ``hsdp`` (an int, or ``"none"``) and ``offload``
    pin their dimension when not None; ``zeros`` / ``recomputes`` / ``micro`` are the values swept."""
    v = model.values
    E = int(v[sym.E]) if sym.E in v else None
    L = model.n_layers()  # decoder layers: what stages(), Layout.check and check_pipeline count
    pairs = _pins(tuple(zeros), offload, hsdp)
    if virtual is not None and virtual < 1:
        raise SymcostError(f"--virtual-stages must be positive, got {virtual}")
    lay = []
    for tp in _divisors(gpus):
        if tp > max_tp:
            continue
        try:
            Plan(tp=tp).check(model)
        except SymcostError:
            continue
        for cp in _divisors(gpus // tp):
            if seq % cp:
                continue
            for pp in _divisors(gpus // (tp * cp)):
                if pp > L:
                    continue
                vs = [(1, 0)] + [(x, 0) for x in _divisors(L // pp)[1:] if pp > 1 and L % (pp * x) == 0]
                # interleaving where pp·v does not divide L: Megatron's embedding and loss slots
                # (--account-for-embedding/loss-in-pipeline-split: L + 2 slots in pp·v chunks)
                vs += [(x, 1) for x in _divisors((L + 2) // pp)[1:]
                       if pp > 1 and (L + 2) % (pp * x) == 0 and L % (pp * x) and (L + 2) // (pp * x) >= 2]
                vs = [(x, a) for x, a in vs if virtual is None or x == virtual]
                dp = gpus // (tp * cp * pp)
                eps = [e for e in _divisors(dp * cp) if E % e == 0] if E else [1]
                lay += [(dp, tp, pp, e, cp, x, a) for e in eps for x, a in vs]
    pinned = [f"{flag} {x}" for flag, x in (("--zero", zeros[0] if len(zeros) == 1 else None),
                                             ("--recompute", recomputes[0] if len(recomputes) == 1 else None),
                                             ("--virtual-stages", virtual), ("--hsdp-shard", hsdp),
                                             ("--offload", offload)) if x is not None]
    pinned += [] if sp is None else ["--sp" if sp else "--no-sp"]
    nothing = SymcostError(f"--search: no candidate on {gpus} GPUs satisfies the model, --seq {seq}, "
                           f"--global-batch {global_batch}" + (f" and {', '.join(pinned)}" if pinned else ""))
    if not lay:
        raise nothing
    A = np.array(sorted(lay, key=lambda t: (t[2], t[5], t[6])), dtype=np.int64).reshape(-1, 7)
    cols = {k: A[:, i] for i, k in enumerate(("dp", "tp", "pp", "ep", "cp", "v", "acc"))}
    dp, tp, pp, ep, cp, vv = (cols[k] for k in ("dp", "tp", "pp", "ep", "cp", "v"))
    nL = len(A)
    # -- R rows: (layout, b, recompute, sp) -------------------------------------------------------
    mb = np.array(micro, dtype=np.int64)
    rcs = np.arange(len(recomputes))
    sps = np.array([False, True] if sp is None else [bool(sp)])
    denom = mb[None, :] * dp[:, None]
    m = np.where(global_batch % denom == 0, global_batch // np.maximum(denom, 1), 0)
    ok_b = (m > 0) & ((vv[:, None] == 1) | (m % pp[:, None] == 0))
    ok = (ok_b[:, :, None, None] & np.ones((1, 1, len(rcs), 1), bool)
          & (~sps[None, None, None, :] | (tp[:, None, None, None] > 1)))
    li, bi, ri, si = np.nonzero(ok)
    R = {"L": li, "b": mb[bi], "m": m[li, bi], "rc": rcs[ri], "sp": sps[si]}
    # -- Z rows: (layout, zero, offload, shard) ---------------------------------------------------
    divs = np.array(_divisors(gpus), dtype=np.int64)
    shard = np.concatenate([dp[:, None], np.broadcast_to(divs, (nL, len(divs)))], axis=1)  # col 0: none
    sh_ok = (dp[:, None] % shard == 0) & ((shard * cp[:, None]) % ep[:, None] == 0)
    sh_ok[:, 1:] &= shard[:, 1:] < dp[:, None]
    if hsdp == "none":
        sh_ok[:, 1:] = False
    elif hsdp is not None:
        sh_ok[:, 0] = False
        sh_ok[:, 1:] &= shard[:, 1:] == hsdp
    zo = np.array([(z, OFFLOAD.index(o)) for z, o in pairs], dtype=np.int64)
    okz = sh_ok[:, None, :] & ((zo[:, 0] >= 1)[None, :, None] | (np.arange(shard.shape[1]) == 0)[None, None, :])
    lz, pz, sz = np.nonzero(okz)
    Z = {"L": lz, "zero": zo[pz, 0], "off": zo[pz, 1], "sh": shard[lz, sz]}
    # -- candidates: per layout, every R row with every Z row -------------------------------------
    cR = np.bincount(R["L"], minlength=nL)
    cZ = np.bincount(Z["L"], minlength=nL)
    sR = np.concatenate([[0], np.cumsum(cR)[:-1]])
    sZ = np.concatenate([[0], np.cumsum(cZ)[:-1]])
    per = cR * cZ
    if not per.sum():
        raise nothing
    cl = np.repeat(np.arange(nL), per)
    k = np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)
    r = (sR[cl] + k // cZ[cl]).astype(np.int32)
    z = (sZ[cl] + k % cZ[cl]).astype(np.int32)
    return Space(cols, R, Z, r, z, tuple(recomputes))


# -- the schedule's in-flight chunks, for every m at once ------------------------------------------
@functools.lru_cache(maxsize=None)
def _held_states(p: int, r: int, v: int, m: int) -> np.ndarray:
    """The in-flight chunk counts rank r of p can hold under interleaved 1F1B (``schedule.held_states``,
    the replay ``schedule.peak`` takes its maximum over). Only maximal states are kept, so max over
    states of (counts · chunk bytes) is the rank's peak."""
    S = np.array(sorted(set(held_states(p, r, v, m))), dtype=np.int64).reshape(-1, v)
    # s is dominated when another state t holds at least as many of every chunk (t >= s elementwise);
    # the states are distinct, so "another" is any t but s itself: the off-diagonal of the pairwise table
    covers = (S[:, None, :] >= S[None, :, :]).all(axis=2)  # covers[t, s]: t >= s
    np.fill_diagonal(covers, False)
    return S[~covers.any(axis=0)]


#: compiled activation sums by model and arguments: a sheet searches several GPU counts, and each
#: search compiled the same (recompute, SP) terms again
_ACTS = PerModel(64)


def _compiled_acts(model, rc, sp, **kw):
    key = (rc, sp, tuple(sorted((k, repr(v)) for k, v in kw.items())))
    return _ACTS.get(model, key, lambda: _compile_acts(model, rc, sp, **kw))


def _compile_acts(model, rc, sp, *, kernel, act_dtype, scan, seq, capacity, want_working, want_dispatch,
                  loss_chunks=1, compiled_loss=False, gathered_head=False):
    """The activation terms ``train_memory`` sums, per layer group ("g:" + name, all its layers),
    the embedding side ("pre", with the shared tables), the head side ("post"), one layer's saved
    set while it is recomputed ("w:") and its EP dispatch buffers ("d:"): {key: [leaf formula, ...]}
    in (B, N_tp, N_cp), each leaf a term ``train_memory`` takes exactly (``terms.exact``)."""
    bw = Backward(kernel=kernel, recompute=rc, act_dtype=act_dtype, scan=scan)
    tree = activations(model, bw, sp=sp, capacity=capacity, loss_chunks=loss_chunks, compiled_loss=compiled_loss,
                       gathered_head=gathered_head)

    def leaves(keys):
        return [e for k in keys if k in tree for e in (tree[k].flatten().values() if hasattr(tree[k], "flatten")
                                                       else [tree[k]])]

    parts = {"g:" + g.name: leaves([g.name]) for g in model.groups if g.name in tree}
    parts["pre"] = leaves([c.key for c in model.pre] + ["shared"])
    parts["post"] = leaves([c.key for c in model.post])
    if want_working:
        for name, t in per_layer(model, bw, capacity, sp=sp).items():
            parts["w:" + name] = [t.total]
    for g in model.groups:  # a layer's backward gradient buffers (``train_memory``'s working memory)
        if g.name in tree:
            parts["b:" + g.name] = [backward_buffers(g.components, sp=sp)]
    if want_dispatch:
        for g in model.groups:
            d = [dispatch_buffers(c, capacity, sp=sp) for c in g.components if isinstance(c, MoE)]
            if d:
                parts["d:" + g.name] = d
    sub = {**model.values, sym.b_a: ACT_BYTES[act_dtype], sym.T: seq}
    return _ExactSum({k: [sympy.sympify(sympy.sympify(e).xreplace(sub)) for e in es] for k, es in parts.items()},
                     (sym.B, sym.N_tp, sym.N_cp))


class _ExactSum:
    """Sums of formula leaves evaluated exactly on int64 arrays: each leaf is compiled as the
    numerator and denominator of its integer-coefficient fraction, so a leaf that is not a whole
    number of bytes is seen (``train_memory`` cannot cost that setup: ``terms.exact`` raises)
    instead of being rounded; leaves that are not such fractions fall back to floats, rounded."""

    def __init__(self, parts: dict, symbols):
        exprs, self.plan = {}, {}
        for key, es in parts.items():
            items = []
            for e in es:
                j = len(exprs)
                ratio = integer_ratio(e)
                if ratio is not None:
                    exprs[f"n{j}"], exprs[f"q{j}"] = ratio
                    items.append((f"n{j}", f"q{j}"))
                else:
                    exprs[f"f{j}"] = e
                    items.append((f"f{j}", None))
            self.plan[key] = items
        self.fn = compile_exprs(exprs, symbols, exact_int=True)

    def __call__(self, *args):
        """({key: int64 array}, {key: bool array, every leaf of the key a whole number})."""
        shape = np.broadcast(*args).shape
        raw = self.fn(*(np.asarray(a, dtype=np.int64) for a in args))
        out, wholes = {}, {}
        for key, items in self.plan.items():
            tot = np.zeros(shape, dtype=np.int64)
            whole = wholes[key] = np.ones(shape, dtype=bool)
            for n, q in items:
                if q is None:
                    tot += np.rint(np.broadcast_to(np.asarray(raw[n], dtype=float), shape)).astype(np.int64)
                    continue
                num = np.broadcast_to(np.asarray(raw[n], dtype=np.int64), shape)
                den = np.broadcast_to(np.asarray(raw[q], dtype=np.int64), shape)
                quo, rem = np.divmod(num, den)
                whole &= rem == 0
                tot += quo
            out[key] = tot
        return out, wholes


_COMPOSITION = ("blocks", "blocks_again", "sends", "n_moe", "a2a", "cp_rounds", "cp_width")
_RANK = tuple(sympy.Dummy(k) for k in _COMPOSITION)


@functools.lru_cache(maxsize=None)
def _r_terms(sp: bool, capacity, values: tuple):
    """``comm.activation_collectives`` compiled: bytes and ops per step on tp, pp, ep and cp of a
    rank whose ``Composition`` is given (the arguments ``_COMPOSITION``, then N_tp, N_ep, N_cp, B,
    m_mb as float arrays), with d, k, E, T and b_a bound (``values``)."""
    vals = dict(values)
    vol, ops = activation_collectives(Composition(*_RANK), sp, capacity, vals)
    bound = {sym.T: vals[sym.T], sym.b_a: vals[sym.b_a]}
    exprs = {}
    for dim in vol:
        exprs[dim] = sympy.sympify(vol[dim]).xreplace(bound)
        exprs[dim + "_ops"] = ops[dim]
    return compile_exprs(exprs, (*_RANK, sym.N_tp, sym.N_ep, sym.N_cp, sym.B, sym.m_mb), exact_int=True)


_PSI = (sympy.Dummy("S"), sympy.Dummy("W"), sympy.Dummy("X"))  # a rank's TP-split, replicated, expert params


@functools.lru_cache(maxsize=None)
def _z_terms(pairs: tuple, K, bg: int, bw: int, state_bytes: tuple = (), framework_name: str | None = None):
    """The model-state side of the candidates, compiled once for every (ZeRO, offload) pair asked:
    per pair, ``weights`` / ``gradients`` / ``optimizer`` (a GPU's bytes, exact:
    ``states.zero_terms``, rounded as ``train`` rounds them, ``states.rounded_states``; the function ``mem`` of the rank's
    three parameter counts, then N_tp, N_ep, N_cp, N_sh — N_dp when not HSDP — and N_dp) and, per
    parameter group j, the bytes of ``comm``'s collective rules (``dp_collectives``,
    ``replicate_collectives``, ``host_traffic``) per parameter of the group (each moves its Ψ_g:
    the bytes are proportional to it), split into the part without m_mb (``_0``) and the part per
    micro-batch (``_1``), with their op counts (the function ``traffic`` of N_tp ... N_dp).
    Returns (mem, traffic, {pair: {key: name of its value}}); equal expressions are computed once."""
    M = sym.m_mb
    groups = param_groups(*_PSI, sym.N_sh)
    unit = [(sympy.Integer(1), n) for _, n in groups]  # one parameter of each group
    rep = sym.N_dp / sym.N_sh
    Kq = sympy.Rational(K.numerator, K.denominator)
    exprs = {"mem": {}, "traffic": {}}
    names, per = {}, {}

    def name(e, kind):
        if e not in names:
            names[e] = f"e{len(names)}"
            exprs[kind][names[e]] = e
        return names[e]

    cache = {}

    def once(key, build):  # a volume depends on the ZeRO stage or on the offload, not on both
        if key not in cache:
            cache[key] = {k: name(e, "traffic") for k, e in build().items()}
        return cache[key]

    sb = dict(state_bytes)  # (zero, offload) -> the framework's (b_w, b_g, K) of the states (``States.bytes``)
    for zero, offload in pairs:
        bw_s, bg_s, K_s = sb.get((zero, offload), (bw, bg, Kq))
        st = zero_terms(groups, zero, K_s, bg_s, bw_s, offload)
        out = {k: name(e, "mem") for k, e in rounded_states(st, framework_name, evaluate=False).items()}

        def dp(zero=zero):
            d = {}
            for j, (psi, n) in enumerate(unit):
                b_dp, ops_dp = dp_collectives(psi, n, zero, M, bg, bw)
                b_rep, ops_rep = replicate_collectives(psi / n, rep, zero, M, bg)
                d.update(_per_micro_batch(f"dp{j}", b_dp))
                d.update(_per_micro_batch(f"dp_replicate{j}", b_rep))
            d.update(_per_micro_batch("dp_ops", sum(ops_dp.values(), sympy.Integer(0))))
            d.update(_per_micro_batch("dp_replicate_ops", sum(ops_rep.values(), sympy.Integer(0))))
            return d

        def host(offload=offload):
            d = {}
            for j, (psi, n) in enumerate(unit):
                d.update(_per_micro_batch(f"host{j}", host_traffic(psi, n, M, bg, bw, offload)))
            d.update(_per_micro_batch("host_ops", host_ops(M, offload)))
            return d

        out.update(once(("zero", zero), dp))
        out.update(once(("offload", offload), host))
        per[zero, offload] = out
    layout = (sym.N_tp, sym.N_ep, sym.N_cp, sym.N_sh, sym.N_dp)
    return (compile_exprs(exprs["mem"], (*_PSI, *layout), exact_int=True),
            compile_exprs(exprs["traffic"], layout, exact_int=True), per)


def _per_micro_batch(key: str, e) -> dict:
    """``e`` = e_0 + m_mb·e_1 (a step's volume: per step and per micro-batch; ``comm``'s rules take
    m_mb as a factor of their per-micro-batch collectives), as {key_0: e_0, key_1: e_1}."""
    e = sympy.sympify(e)
    if sym.m_mb not in e.free_symbols:
        return {f"{key}_0": e, f"{key}_1": sympy.Integer(0)}
    e0 = e.xreplace({sym.m_mb: sympy.Integer(0)})
    return {f"{key}_0": e0, f"{key}_1": e.xreplace({sym.m_mb: sympy.Integer(1)}) - e0}


def _gathered(model, setup, fw, pp: int, v: int, i: int, st: dict, zero, tp, ep):
    """``memory.gathered_formula`` (``states.gathered_terms``) of rank ``i`` on Z rows: exact, over the
    common denominator N_tp·N_ep, rounded up as ``train_memory`` rounds it; 0 below ZeRO-3."""
    if not (zero == 3).any():
        return 0
    units = rank_units(model, TrainSetup.of(seq=setup.seq, pp=pp, virtual=v, framework=fw.name), i)
    den = tp * ep

    def num(split, whole, experts):  # unit_params · N_tp·N_ep
        return split * ep + whole * den + experts

    U = np.zeros(len(tp), dtype=np.int64)
    for u in units:
        U = np.maximum(U, num(*u))
    if fw.resharded(pp, setup.reshard):
        total = fw.unit_bytes * U
    else:
        psi = num(st["split"], st["whole"], st["experts"])
        total = 2 * psi + (fw.reduce_bytes * psi if pp > 1 else (fw.unit_bytes - 4) * U)
    return np.where(zero == 3, -(-total // den), 0)


def _all_gather_pool(model, setup, fw, pp: int, v: int, i: int, zero, tp, ep, group):
    """``memory.all_gather_pool_formula`` (``allocator.all_gather_pool``) of rank ``i`` on Z rows:
    2·(U_max + U_layer) over the common denominator N_tp·N_ep, rounded up; 0 below ZeRO-3, outside
    FSDP2 or with a shard group of one rank."""
    if fw.name not in FSDP2 or not (zero == 3).any():
        return 0
    s_ = TrainSetup.of(seq=setup.seq, pp=pp, virtual=v, framework=fw.name)
    units, layers = rank_units(model, s_, i), rank_units(model, s_, i, layers_only=True)
    if not units:
        return 0
    den = tp * ep

    def num(split, whole, experts):  # unit_params · N_tp·N_ep
        return split * ep + whole * den + experts

    U, Ul = np.zeros(len(tp), dtype=np.int64), np.zeros(len(tp), dtype=np.int64)
    for u in units:
        U = np.maximum(U, num(*u))
    for u in layers:
        Ul = np.maximum(Ul, num(*u))
    return np.where((zero == 3) & (group > 1), -(-(2 * (U + Ul)) // den), 0)


@dataclass
class Result:
    per_gpu_bytes: np.ndarray  # int64, exact
    step_time_s: np.ndarray
    space: Space
    tables: dict
    valid: np.ndarray  # False where an activation term is not a whole number of bytes (not costed)

    def detail(self, i) -> dict:
        """Candidate i's micro-batches, bubble and per-dimension bytes (the busiest rank's, as ``comm``)."""
        ir, iz = int(self.space.r[i]), int(self.space.z[i])
        t = self.tables
        m = int(self.space.R["m"][ir])
        out = {dim: float(t["R_bytes"][dim][ir]) for dim in ("tp", "pp", "ep", "cp")}
        for dim in ("dp", "dp_replicate", "host"):
            out[dim] = float(t["Z_bytes"][dim][0, iz] + m * t["Z_bytes"][dim][1, iz])
        return {"micro_batches": m, "bubble": float(t["bubble"][ir]), "bytes": out}


def evaluate(model, space: Space, setup: TrainSetup, *, gpu, links: Links | None = None, mfu: float | None = None,
             overlap: float = 0.0, precision: str = "bf16", hide: dict | None = None, cuda_graphs=None) -> Result:
    """Per-GPU bytes (exact) and step time of every candidate. ``setup`` gives what is not swept
    (the batch: seq and global batch; the optimizer and gradient dtype; the backward conventions;
    the capacity factor); ``links`` the α–β model (default: ``gpu``'s NVLink, ``Links``' others).
    Without ``mfu``: the kernel-class compute, framework overlap and bubble of
    ``run.kernel_step`` on arrays (``_kernel_compute``, ``_kernel_step``)."""
    from .mtp import with_mtp
    model = with_mtp(model, setup.mtp)  # the MTP modules trained, as train_memory counts them
    seq, global_batch, capacity = setup.seq, setup.batch.global_batch, setup.capacity
    kernel, act_dtype, scan = setup.backward.kernel, setup.backward.act_dtype, setup.backward.scan
    grad_dtype, optimizer = setup.states.grad_dtype, setup.states.optimizer
    links = links or Links.of(gpu)
    v = model.values
    lay, R, Z = space.lay, space.R, space.Z
    # traffic: gradients reduced in the framework's reduce dtype (``States.bg``), weights gathered in bf16;
    # memory: the framework's bytes per state at each (ZeRO, offload) (``States.bytes``)
    a, bg, bw = ACT_BYTES[act_dtype], setup.states.bg, WEIGHT_BYTES["bf16"]
    Kf = OPTIMIZER_BYTES[optimizer]
    fw = framework(setup.states.framework)
    pipe_on = pipe.applies(fw.name, 2, setup.schedule)  # torch.distributed.pipelining's buffers, per pp below
    Kn = Kf.numerator
    d = exact(sym.d, v)
    kinds = layer_kinds(model)
    has_moe = any(x.moe for x in kinds.values())
    k_route = exact(sym.k, v) if has_moe else 0
    E = exact(sym.E, v) if has_moe else 1
    cf = None if capacity is None else Fraction(capacity)
    counts = {g.name: exact(g.count, v) for g in model.groups}
    G = int(lay["dp"][0] * lay["tp"][0] * lay["pp"][0] * lay["cp"][0])
    peak = gpu.bf16_tflops * 1e12 * (mfu or 1.0)
    nR, nZ = len(R["L"]), len(Z["L"])
    # layout columns on the rows of each table
    rL, zL = R["L"], Z["L"]
    r_dp, r_tp, r_pp, r_ep, r_cp, r_v = (lay[k][rL] for k in ("dp", "tp", "pp", "ep", "cp", "v"))
    r_acc = lay["acc"][rL] if "acc" in lay else np.zeros_like(r_v)
    z_dp, z_tp, z_ep, z_cp = (lay[k][zL] for k in ("dp", "tp", "ep", "cp"))
    b, m, rc, spf = R["b"], R["m"], R["rc"], R["sp"]
    rc_name = np.array(space.recomputes)[rc]
    full = rc_name == "full"
    s_tok = seq // r_cp
    # -- activations of every R row, per group (exact integers) -----------------------------------
    acts = {}  # key -> int64 array over R rows
    whole = np.ones(nR, dtype=bool)  # R rows whose activation terms are whole bytes (train can cost them)
    for ri, rname in enumerate(space.recomputes):
        for s_ in (False, True):
            mask = (rc == ri) & (spf == s_)
            if not mask.any():
                continue
            fn = _compiled_acts(model, rname, s_, kernel=kernel, act_dtype=act_dtype, scan=scan, seq=seq,
                                capacity=capacity, want_working=rname == "full", want_dispatch=has_moe,
                                **setup.head_saved)
            idx = np.nonzero(mask)[0]
            out, ok = fn(b[idx], r_tp[idx], r_cp[idx])
            for key, x in out.items():
                acts.setdefault(key, np.zeros(nR, dtype=np.int64))[idx] = x
                # train_memory takes every leaf exactly, the dispatch buffers only with EP
                whole[idx] &= ok[key] | ((r_ep[idx] == 1) if key.startswith("d:") else False)
    layer = {g: acts["g:" + g] // counts[g] for g in counts if "g:" + g in acts}  # train: total // count
    # per unit of each group: the saved set without recomputation (full: "w:"; otherwise what the
    # checkpoint keeps is all of it) and the transient EP dispatch buffers (train: only with EP)
    saved = {g: np.where(full, acts["w:" + g], layer[g]) if "w:" + g in acts else layer[g] for g in layer}
    extra = {g: np.where(r_ep > 1, acts["d:" + g], 0) for g in counts if kinds[g].moe and "d:" + g in acts}
    for g in counts:
        if "b:" + g in acts:
            extra[g] = extra.get(g, 0) + acts["b:" + g]
    order = model.layers()
    # -- compute and the R-side communication ----------------------------------------------------
    F = {}
    for rname in set(rc_name):
        tree = train_flops(model, recompute=rname)
        if cf is None:
            F[rname] = (float(tree.total_at(model.values_with(T=seq, B=global_batch))), 0.0)
        else:  # padded experts (flops.padded_expert_flops): F0 + per-row cost × the step's rows
            F[rname] = tuple(float(x) for x in padded_parts(model, tree, seq=seq, batch=global_batch))
    f0 = np.zeros(nR)
    fe = np.zeros(nR)
    for rname, (x0, x1) in F.items():
        f0 = np.where(rc_name == rname, x0, f0)
        fe = np.where(rc_name == rname, x1, fe)
    if cf is None:
        rows = k_route * s_tok * b  # routed rows of one MoE layer on one rank (activations.routed_rows)
        step_flops = f0.copy()
    else:
        rows = compile_exprs({"rows": routed_rows(k_route, E, seq / sym.N_cp * sym.B, cf)}, (sym.N_cp, sym.B),
                             exact_int=True)(r_cp, b)["rows"]  # activations.routed_rows, padded
        step_flops = f0 + fe * (m * r_dp * r_cp * rows)
    compute = step_flops / G / peak
    if mfu is None:
        padded = None if cf is None else {rn: F[rn][1] * (m * r_dp * r_cp * rows) for rn in F}
        # elementwise passes (compute's rule): 5 touches of each byte a rank saves per micro-batch
        # (full recomputation reruns the forward's 2 of them, as ``compute.class_times``'s t_R does),
        # per layer of each group and for the embedding ("pre", first rank) and head/loss side ("post",
        # last rank): ``_kernel_compute`` sums them per pipeline rank, as ``run.kernel_step`` does
        touches = np.where(rc_name == "full", 7, 5)
        per_byte = touches * m / (gpu.bandwidth_bytes_per_s * efficiency(gpu.name, "elementwise").eta_memory)
        ew = {"layers": {g: saved[g] * per_byte for g in saved},
              "pre": acts["pre"] * per_byte, "post": acts["post"] * per_byte}
        from . import ring_attention
        if fw.name in ring_attention.RING_FRAMEWORKS:  # torch's ring-attention passes (full recompute reruns them)
            bw_ew = gpu.bandwidth_bytes_per_s * efficiency(gpu.name, "elementwise").eta_memory
            for g_, (e_, ekv_) in ring_attention.attention_shapes(model).items():
                if e_ and g_ in ew["layers"]:
                    qf, qb = ring_attention.per_layer_bytes(e_, ekv_, b * seq, r_cp, r_tp)
                    ew["layers"][g_] = ew["layers"][g_] + (qf * (1 + full) + qb) * m / bw_ew
        compute, t_fb, t_gemm, t_attn, win = _kernel_compute(model, gpu, precision, rc_name, b * s_tok, r_ep, r_pp,
                                                             r_v, G, m, seq=seq, batch=global_batch, capacity=cf,
                                                             padded_rows=padded, r_acc=r_acc, ew=ew, touches=touches,
                                                             attention_impl=setup.attention_impl)
        # the MoE layers' router and permutation passes, the grouped GEMM's floor and memory term, and
        # the launch floors (``moe_work``, as ``compute.class_times`` adds them)
        from .moe_work import step_extra_arrays
        attn = setup.attention_impl
        t_moe, w_extra = step_extra_arrays(model, gpu, precision, b * s_tok, r_tp, r_ep, r_pp, r_v, m,
                                           recompute=rc_name, r_acc=r_acc, attention_impl=attn)
        t_moe_n = t_moe
        if (rc_name == "full").any() or (rc_name == "selective").any():
            t_moe_n, _ = step_extra_arrays(model, gpu, precision, b * s_tok, r_tp, r_ep, r_pp, r_v, m, r_acc=r_acc,
                                           attention_impl=attn)
        compute, t_fb = compute + t_moe, t_fb + t_moe / m
        win["compute"] = win["compute"] + t_moe_n
        # the host's kernel-issue floor of eager execution (``host_launch``, as ``run.kernel_step``:
        # each rank's micro-batch at least its kernels' issue time; ``cuda_graphs`` the captured scopes)
        from .host_launch import parse_graphs
        compute = np.maximum(compute, m * _host_floor(model, precision, r_pp, r_v, r_acc, r_ep, rc_name,
                                                      parse_graphs(cuda_graphs)))
    bub = bubble(r_pp, m, r_v)
    r_values = tuple((k, sympy.Integer(x)) for k, x in
                     ((sym.d, d), (sym.k, k_route), (sym.E, E), (sym.T, seq), (sym.b_a, a)) if has_moe or k not in (sym.k, sym.E))
    # the loss peak of the last rank (``activations.loss_peak``, as ``train_memory`` rounds it: up)
    # (under PP the logits are held: ``Framework.holds_logits``; one tree per case; loss parallel's
    # min(1, N_tp − 1) is one tree for N_tp = 1 and one for N_tp > 1, as ratios of integer polynomials)
    loss_fns = {}
    for held_ in {fw.holds_logits(1), fw.holds_logits(2)}:
        ltree = loss_peak(model, Backward(kernel=kernel, act_dtype=act_dtype, scan=scan), chunks=setup.loss_chunks,
                          logits_held=held_, kind=setup.loss_kind)
        for multi in (False, True):
            loss_fns[held_, multi] = None
            if ltree:
                e = sympy.sympify(ltree.total).xreplace({sympy.Min(1, sym.N_tp - 1): int(multi)})
                num, den = integer_ratio(e.xreplace({**model.values, sym.b_a: a, sym.T: seq}))
                loss_fns[held_, multi] = compile_exprs({"n": num, "q": den}, (sym.B, sym.N_tp, sym.N_cp),
                                                       exact_int=True)

    def loss_of(bb, tt, cc, pp_):
        out = 0
        for multi in (False, True):
            loss_fn = loss_fns[fw.holds_logits(pp_), multi]
            if loss_fn is None:
                continue
            f = loss_fn(bb, tt, cc)
            n_, q_ = (np.broadcast_to(np.asarray(f[k], dtype=np.int64), bb.shape) for k in ("n", "q"))
            out = np.where((np.asarray(tt) > 1) == multi, -(-n_ // q_), out)
        return out

    # -- per (pp, v) group: ranks, memory tables, traffic ----------------------------------------
    mem = np.zeros(len(space), dtype=np.int64)
    R_bytes = {k: np.zeros(nR) for k in ("tp", "pp", "ep", "cp")}
    R_cnt = {k: np.zeros(nR) for k in ("tp", "pp", "ep", "cp")}
    # the Z side's bytes and collectives per step: [the part independent of m, the part per micro-batch]
    Z_bytes = {k: np.zeros((2, nZ)) for k in ("dp", "dp_replicate", "host")}
    Z_cnt = {k: np.zeros((2, nZ)) for k in ("dp", "dp_replicate", "host")}
    zo_code = np.unique(Z["zero"] * 3 + Z["off"])  # the (ZeRO, offload) pairs present, as 3·zero + offload
    zo_pairs = [(int(c) // 3, int(c) % 3) for c in zo_code]
    state_bytes = tuple(((z_, OFFLOAD[o_]), States(offload=OFFLOAD[o_], optimizer=optimizer, grad_dtype=grad_dtype,
                                                  framework=fw.name).bytes(z_)) for z_, o_ in zo_pairs)
    z_mem, z_traffic, z_names = _z_terms(tuple((z_, OFFLOAD[o_]) for z_, o_ in zo_pairs), Kf, bg, bw, state_bytes,
                                               fw.name)
    z_names = {(z_, o_): z_names[z_, OFFLOAD[o_]] for z_, o_ in zo_pairs}
    key = (lay["pp"] * 10**6 + lay["v"]) * 2 + (lay["acc"] if "acc" in lay else 0)
    bounds = np.flatnonzero(np.diff(key)) + 1
    starts, ends = np.concatenate([[0], bounds]), np.concatenate([bounds, [len(key)]])
    r_start, z_start = np.searchsorted(rL, starts), np.searchsorted(zL, starts)
    r_end, z_end = np.searchsorted(rL, ends), np.searchsorted(zL, ends)
    c_start, c_end = np.searchsorted(space.r, r_start), np.searchsorted(space.r, r_end)
    # the optimizer step of the rank with the most optimizer state, per Z row (``compute.optimizer_seconds``
    # on each rank's optimizer bytes, as ``run.kernel_step`` adds it to that rank's time)
    t_opt = np.zeros(nZ)
    K_float = float(Kf) if Kf else 1.0
    for gi in range(len(starts)):
        p_val, v_val = int(lay["pp"][starts[gi]]), int(lay["v"][starts[gi]])
        acc_val = bool(lay["acc"][starts[gi]]) if "acc" in lay else False
        if c_start[gi] == c_end[gi]:
            continue  # no micro-batch size fits these layouts
        rs, zs, cs = slice(r_start[gi], r_end[gi]), slice(z_start[gi], z_end[gi]), slice(c_start[gi], c_end[gi])
        ranks = rank_stages(model, p_val, v_val, _slots(p_val, acc_val))
        n_chunks = p_val * v_val
        keep, seen = [], set()
        for i, st in enumerate(ranks):
            chunks = st.get("chunks", [st])
            sig = (st["split"], st["whole"], st["experts"], tuple(sorted(st["layers"].items())),
                   tuple((tuple(sorted(c["layers"].items())), i + j * p_val == 0, i + j * p_val == n_chunks - 1)
                         for j, c in enumerate(chunks)))
            if v_val == 1 and sig in seen:
                continue  # an identical earlier stage holds min(m, pp − s) ≥ this one's micro-batches
            seen.add(sig)
            keep.append(i)
        # R side: activations in flight + working memory, per kept rank
        bb, mm, tt, cc, ee = b[rs], m[rs], r_tp[rs], r_cp[rs], r_ep[rs]
        H = []
        rc_sel = []  # per recompute mode: its rows, and each unit's (kept, saved, extra) on them
        for ri, rname in enumerate(space.recomputes):
            sel = rc[rs] == ri
            if not sel.any():
                continue
            on = {name: {g: t[g][rs][sel] for g in t} for name, t in (("kept", layer), ("saved", saved),
                                                                        ("extra", extra))}
            cache: dict = {}

            def unit(u, on=on, cache=cache):
                key = tuple(g.name for g in u)
                if key not in cache:
                    cache[key] = tuple(sum(on[k][g] for g in key if g in on[k]) for k in ("kept", "saved", "extra"))
                return cache[key]
            rc_sel.append((Recompute(rname), sel, unit))
        for i in keep:
            st = ranks[i]
            chunk_a, wk = [], np.zeros(len(bb), dtype=np.int64)
            for j, ch in enumerate(st.get("chunks", [st])):
                # the chunk's layers in order, as ``train_memory`` assembles them (``Recompute.chunk``)
                gid = i + j * p_val
                units = [order[u] for u in ch["layer_ids"]]
                x = np.zeros(len(bb), dtype=np.int64)
                for rco, sel, unit in rc_sel:
                    per = [unit(u) for u in units]
                    held_j, work_j = rco.chunk([x[0] for x in per], [x[1] for x in per], [x[2] for x in per])
                    x[sel] = held_j
                    wk[sel] = np.maximum(wk[sel], work_j)
                if gid == 0:
                    x = x + acts["pre"][rs]
                if gid == n_chunks - 1:
                    x = x + acts["post"][rs]
                chunk_a.append(x)
            if v_val == 1:
                c_in = in_flight(p_val, i, mm)
                held = c_in * chunk_a[0]
                c_in = [c_in]
            else:
                held = np.zeros(len(bb), dtype=np.int64)
                c_in = [np.zeros(len(bb), dtype=np.int64) for _ in range(v_val)]
                CA = np.stack(chunk_a, axis=1)
                for mu in np.unique(mm):
                    sel = mm == mu
                    S_ = _held_states(p_val, i, v_val, int(mu))
                    at = CA[sel] @ S_.T
                    held[sel] = at.max(axis=1)
                    for j in range(v_val):
                        c_in[j][sel] = S_[at.argmax(axis=1), j]
            if pipe_on and p_val > 1:  # ``pipeline_buffers``: count · X, as ``train_memory`` rounds it (up)
                n_x = sum((mm + c if i + j * p_val == 0 else mm - c if i + j * p_val == n_chunks - 1 else 2 * mm)
                          for j, c in enumerate(c_in))
                den = cc * np.where(spf[rs], tt, 1)
                held = held + -(-(n_x * bb * seq * d * a) // den)
            H.append(held + (np.maximum(wk, loss_of(bb, tt, cc, p_val)) if i == p_val - 1 else wk))
        # R side traffic: ``comm.activation_collectives`` compiled with the rank's composition as
        # symbols (``_r_terms``), per kept rank; the busiest rank of each dimension (first on ties)
        tt_f, ee_f, cc_f, bb_f, mm_f = (x.astype(float) for x in (tt, ee, cc, bb, mm))
        rc_rs, sp_rs = rc[rs], spf[rs]
        rcs = [Recompute(rname) for rname in space.recomputes]
        for s_ in (False, True):
            sel = sp_rs == s_
            if not sel.any():
                continue
            fn = _r_terms(s_, capacity, r_values)
            args = (tt_f[sel], ee_f[sel], cc_f[sel], bb_f[sel], mm_f[sel])
            rsel = rc_rs[sel]
            top = None
            for i in keep:
                st = ranks[i]
                chunks = st.get("chunks", [st])
                # the rank's composition under each recompute mode, on the rows of that mode
                comps = [composition(i, st["layers"], add_up(recomputed_units(model, r_, chunks)), kinds, p_val, v_val,
                                     r_.mode) for r_ in rcs]
                f = fn(*(np.array([getattr(c_, k) for c_ in comps], dtype=float)[rsel] for k in _COMPOSITION), *args)
                if top is None:
                    top = {dim: [np.broadcast_to(f[dim], rsel.shape).copy(),
                                 np.broadcast_to(f[dim + "_ops"], rsel.shape).copy()] for dim in R_bytes}
                    continue
                for dim in R_bytes:
                    up = f[dim] > top[dim][0]
                    top[dim][0] = np.where(up, f[dim], top[dim][0])
                    top[dim][1] = np.where(up, f[dim + "_ops"], top[dim][1])
            idx = np.flatnonzero(sel) + r_start[gi]
            for dim in R_bytes:
                R_bytes[dim][idx], R_cnt[dim][idx] = top[dim]
        # Z side: model states (exact) and DP / HSDP / PCIe traffic, per kept rank: the states'
        # and the collectives' formulas (``_z_terms``), compiled once per (ZeRO, offload)
        zt, ze, zcp, zdp = z_tp[zs], z_ep[zs], z_cp[zs], z_dp[zs]
        zz, off, sh = Z["zero"][zs], Z["off"][zs], Z["sh"][zs]
        n_of = (sh * zcp, sh * zcp // ze)  # the two groups' ZeRO ranks
        hs = sh < zdp
        pidx = np.searchsorted(zo_code, zz * 3 + off)  # each row's (ZeRO, offload) pair
        nz = len(zz)
        z_pick = {}  # key -> (its distinct compiled values, each row's index among them)
        for key in z_names[zo_pairs[0]]:
            names = sorted({z_names[p][key] for p in zo_pairs})
            z_pick[key] = names, np.array([names.index(z_names[p][key]) for p in zo_pairs])[pidx]

        def pick(f, key, dtype=float):
            names, idx = z_pick[key]
            if len(names) == 1:
                return np.asarray(f[names[0]], dtype=dtype)
            return np.choose(idx, [np.broadcast_to(np.asarray(f[n], dtype=dtype), (nz,)) for n in names])

        # the collectives per parameter of each group, and their ops, for this group's rows
        tf = z_traffic(zt, ze, zcp, sh, zdp)
        ops = {kd: [pick(tf, f"{kd}_ops_{part}") for part in (0, 1)] for kd in Z_bytes}
        per_param = {(kd, j, part): np.where(on, pick(tf, f"{kd}{j}_{part}"), 0)
                     for kd in Z_bytes for j in (0, 1) for part in (0, 1)
                     for on in [n_of[j] > 1 if kd == "dp" else hs if kd == "dp_replicate" else True]}
        on_ops = {(kd, j): (n_of[j] > 1 if kd == "dp" else hs if kd == "dp_replicate" else np.ones(nz, bool))
                  for kd in Z_bytes for j in (0, 1)}
        S = []
        best = None
        counts_by = {}
        for i in keep:
            st = ranks[i]
            Y = st["experts"]
            if ((st["split"] + st["whole"] * int(zt.max())) * int(ze.max()) + Y) * max(Kn, 4) > 2**62:
                raise SymcostError("--search: a stage's parameter count overflows the int64 sweep")
            psi = ((st["split"] + st["whole"] * zt) / zt, Y / (ze * zt))  # a GPU's parameters of each group
            nonzero = (st["split"] + st["whole"] > 0, Y > 0)
            f = z_mem(st["split"], st["whole"], Y, zt, ze, zcp, sh, zdp)
            mem_i = sum(pick(f, k, np.int64) for k in ("weights", "gradients", "optimizer"))
            if mfu is None and Kf:
                from .compute import optimizer_shard_seconds
                shard = pick(f, "optimizer") / K_float
                t_opt[zs] = np.maximum(t_opt[zs], optimizer_shard_seconds(shard, optimizer, bg, gpu))
            mem_i = mem_i + _gathered(model, setup, fw, p_val, v_val, i, st, zz, zt, ze)
            mem_i = mem_i + _all_gather_pool(model, setup, fw, p_val, v_val, i, zz, zt, ze, n_of[0])
            if precision != "bf16" and fw.name in fp8.TE_FRAMEWORKS:  # TE's FP8 weight copies, ZeRO < 3
                w8 = fp8.gemm_weights(model, setup, st["layers"], zt, ze)
                f8 = 2 * w8 + (-(-2 * w8 // 32) if precision == "mxfp8" else 0)
                mem_i = mem_i + np.where(zz < 3, f8, 0).astype(np.int64)
            o = {k: np.zeros((2, nz)) for k in Z_bytes}  # [part without m, part × m]
            for kd in Z_bytes:
                for j in (0, 1):
                    if nonzero[j]:
                        for part in (0, 1):
                            o[kd][part] += per_param[kd, j, part] * psi[j]
            if nonzero not in counts_by:  # the ops depend on the rank only through which groups it holds
                counts_by[nonzero] = {kd: np.stack([sum((np.where(on_ops[kd, j], ops[kd][part], 0)
                                                         for j in (0, 1) if nonzero[j]), np.zeros(nz))
                                                    for part in (0, 1)]) for kd in Z_bytes}
            c = counts_by[nonzero]
            S.append(mem_i)
            if best is None:  # the busiest rank per dimension (first on ties, as comm), at m = 1
                best = (o, dict(c))
            else:
                for kd in o:
                    up = o[kd].sum(axis=0) > best[0][kd].sum(axis=0)
                    best[0][kd] = np.where(up, o[kd], best[0][kd])
                    best[1][kd] = np.where(up, c[kd], best[1][kd])
        for kd in Z_bytes:
            Z_bytes[kd][:, zs], Z_cnt[kd][:, zs] = best[0][kd], best[1][kd]
        # every candidate of the group: the heaviest rank's states + activations
        ir, iz = space.r[cs] - r_start[gi], space.z[cs] - z_start[gi]
        acc = S[0][iz] + H[0][ir]
        for Sk, Hk in zip(S[1:], H[1:]):
            np.maximum(acc, Sk[iz] + Hk[ir], out=acc)
        mem[cs] = acc
    # -- step time: steptime's α–β collectives, bubble and step, on arrays -------------------------
    def t(dim, nbytes, cnt, span):
        return collective_seconds(nbytes, cnt, link_bytes_s(dim, span, links), links.alpha_s)

    span_r = spans(r_dp, r_tp, r_pp, r_ep, r_cp)
    tr = sum(t(k, R_bytes[k], R_cnt[k], span_r[k]) for k in R_bytes)
    span_z = spans(z_dp, z_tp, 1, z_ep, z_cp, shard=Z["sh"])
    tz0, tz1 = np.zeros(nZ), np.zeros(nZ)
    for kd in Z_bytes:
        tz0 += t(kd, Z_bytes[kd][0], Z_cnt[kd][0], span_z.get(kd))
        tz1 += t(kd, Z_bytes[kd][1], Z_cnt[kd][1], span_z.get(kd))
    # ``steptime.step_seconds`` distributed over the two tables: (compute + (1 − overlap)·(t_R + t_Z0
    # + m·t_Z1)) / (1 − bubble), the R part formed once per R row
    if mfu is None:
        step, zb = _kernel_step(fw.name, hide, compute, t_fb, t_gemm, t_attn, m, r_pp, r_v,
                            {k: t(k, R_bytes[k], R_cnt[k], span_r[k]) for k in R_bytes},
                            {kd: (t(kd, Z_bytes[kd][0], Z_cnt[kd][0], span_z.get(kd)),
                                  t(kd, Z_bytes[kd][1], Z_cnt[kd][1], span_z.get(kd))) for kd in Z_bytes},
                            space, Z["zero"], bg / (bg + bw), model.n_layers(),
                            host=_host_step(Z, Z_bytes, gpu, bg, bw, Kf, fw.name, int(r_dp[0] * r_tp[0] * r_pp[0] * r_cp[0])),
                            gemm_recompute=(rc_name == "full").astype(float), w_extra=w_extra, t_opt=t_opt,
                            win=win)
        return Result(mem, step, space, {"R_bytes": R_bytes, "Z_bytes": Z_bytes, "bubble": bub, "zb": zb},
                      whole[space.r])
    ov = 1 - overlap
    inv = 1 / (1 - bub)
    P = (compute + ov * tr) * inv
    step = P[space.r] + (ov * tz0)[space.z] * inv[space.r] + (ov * tz1)[space.z] * (m * inv)[space.r]
    return Result(mem, step, space, {"R_bytes": R_bytes, "Z_bytes": Z_bytes, "bubble": bub},
                  whole[space.r])


def _kernel_compute(model, gpu, precision, rc_name, rows, r_ep, r_pp, r_v, G, m, *, seq, batch, capacity,
                    padded_rows, r_acc=None, ew=None, touches=None, attention_impl="fused"):
    """``compute.class_times`` on arrays: the step's FLOPs by kernel class (``compute.kernel_class``
    of each leaf of ``train_flops``: forward, backward — attention's at 2.5× the forward, the
    FlashAttention count — and recomputation) per GPU, each class at its calibrated efficiency
    at the candidate's rows M = b·T/N_cp (experts at k·M/(E/N_ep)), and ``ew`` (seconds per step of the
    elementwise passes: per layer of each group, the embedding side "pre" and the head/loss side "post")
    summed over each pipeline rank's own layers, "pre" on the first rank, "post" on the last — as
    ``run.kernel_step`` counts each rank's saved bytes, so a rank holding more (the MTP modules pinned to
    the last stage, ``mtp``: one DeepSeek-V3 module saves 1.8× an MoE layer's bytes: its own head and loss)
    pays for them there rather than spread over the average rank. The slowest rank (GEMMs + attention
    + elementwise) is the candidate's. Returns (compute seconds, compute per micro-batch, GEMM seconds,
    attention seconds) per R row. The optimizer step is added per Z row (``evaluate``'s ``t_opt``)."""
    from .compute import ATTN_BWD_FACTOR, kernel_class
    v = model.values
    P, _ = gpu.peak("bf16" if precision == "bf16" else "fp8")
    P16 = gpu.peak("bf16")[0]
    k_route = int(v[sym.k]) if sym.E in v else 0
    E = int(v[sym.E]) if sym.E in v else 1
    names = sorted(set(rc_name))
    parts = {}
    for rname in names:
        tree = train_flops(model, recompute=rname)
        vals = model.values_with(T=seq, B=batch)
        acc = {"gemm": 0, "head": 0, "grouped_gemm": 0, "attn_f": 0, "attn_b": 0}
        for top in ("forward", "backward", "recompute"):
            if top not in tree:
                continue
            if top == "recompute":  # the windows collectives hide behind leave the recomputation out
                parts[rname, "none"] = {k: float(x) / G for k, x in acc.items()}
            for path, e in tree[top].flatten().items():
                c = kernel_class(path)
                f = exact(e, vals)
                if c == "attention":
                    acc["attn_b" if top == "backward" else "attn_f"] += f
                elif c == "gemm" and "/" not in path and path.endswith("lm_head"):
                    acc["head"] += f
                else:
                    acc[c] += f
        parts[rname] = {k: float(x) / G for k, x in acc.items()}
        parts.setdefault((rname, "none"), parts[rname])

    def eta(op, dtype, ms, variant=None):
        uniq = np.unique(ms)
        look = {int(u): efficiency(gpu.name, op, dtype=dtype, m=max(int(u), 1), variant=variant).eta_compute
                for u in uniq}
        return np.vectorize(look.get, otypes=[float])(ms)

    gd = precision
    e_g = eta("gemm", gd, rows)
    e_h = eta("gemm", "bf16", rows)
    if k_route:
        er = (k_route * rows * r_ep) // E
        try:
            e_x = eta("grouped_gemm", gd, er)
        except SymcostError:
            e_x = eta("gemm", gd, er)
    else:
        e_x = e_g
    from .compute import ATTENTION_IMPLS
    e_af = eta("attn_prefill", "bf16", rows, ATTENTION_IMPLS[attention_impl])
    e_ab = eta("attn_backward", "bf16", rows, ATTENTION_IMPLS[attention_impl])
    # per class, the whole model's seconds over the G GPUs (the average rank's): dense GEMMs, the LM
    # head, the routed experts, attention
    T_d, T_h, T_x, T_a = (np.zeros(len(rows)) for _ in range(4))
    N_d, N_x, N_a = (np.zeros(len(rows)) for _ in range(3))  # the same without the recomputation
    for rname in names:
        q, qn = parts[rname], parts[rname, "none"]
        sel = rc_name == rname
        T_d = np.where(sel, q["gemm"] / (P * e_g), T_d)
        N_d = np.where(sel, qn["gemm"] / (P * e_g), N_d)
        T_h = np.where(sel, q["head"] / (P16 * e_h), T_h)
        xf = padded_rows[rname] / G if padded_rows is not None else q["grouped_gemm"]
        T_x = np.where(sel, xf / (P * e_x), T_x)
        xn = xf * (qn["grouped_gemm"] / q["grouped_gemm"]) if q["grouped_gemm"] else 0.0
        N_x = np.where(sel, xn / (P * e_x), N_x)
        T_a = np.where(sel, q["attn_f"] / (P16 * e_af) + ATTN_BWD_FACTOR / 2 * q["attn_b"] / (P16 * e_ab), T_a)
        N_a = np.where(sel, qn["attn_f"] / (P16 * e_af) + ATTN_BWD_FACTOR / 2 * qn["attn_b"] / (P16 * e_ab), N_a)
    # the pipeline runs at its slowest rank (``run.kernel_step``: the largest per-rank time): each
    # rank's share of each class's forward FLOPs (its layers, the head on the last; ``plan.rank_stages``),
    # per (N_pp, v), weighting the class times of each candidate
    fwd = {path: float(exact(e, model.values_with(T=seq, B=1))) for path, e in
           model.flops(Phase(kind="prefill", attention="causal", logits="all")).flatten().items()}
    counts = {g.name: exact(g.count, v) for g in model.groups}
    gemm, attn, elem = T_d + T_h + T_x, T_a.copy(), np.zeros(len(rows))
    gemm_n, attn_n, elem_n = N_d + T_h + N_x, N_a.copy(), np.zeros(len(rows))
    r_acc = np.zeros_like(r_v) if r_acc is None else r_acc
    for pv in np.unique((r_pp * 1000 + r_v) * 2 + r_acc):
        a_ = int(pv % 2)
        p_, v_ = int(pv // 2 // 1000), int(pv // 2 % 1000)
        ranks = rank_stages(model, p_, v_, _slots(p_, a_))
        share = np.zeros((len(ranks), 3))  # dense GEMM, experts, attention FLOPs on each rank
        for i, st in enumerate(ranks):
            for path, f in fwd.items():
                g = path.split("/", 1)[0]
                if g not in counts:
                    continue
                c = kernel_class(path)
                share[i, ("gemm", "grouped_gemm", "attention").index(c)] += f * st["layers"].get(g, 0) / counts[g]
        tot = share.sum(axis=0)
        share = np.divide(share, tot, out=np.zeros_like(share), where=tot > 0) * p_
        # non-layer GEMMs (the head: on the last rank) are in T_h; layer GEMMs of the dense class in T_d
        sel = (r_pp == p_) & (r_v == v_) & (r_acc == a_)
        g_r = share[:, 0][:, None] * T_d[sel] + share[:, 1][:, None] * T_x[sel]
        g_r[-1] += p_ * T_h[sel]
        a_r = share[:, 2][:, None] * T_a[sel]
        e_r = np.zeros_like(a_r)  # each rank's elementwise seconds: its layers' saved bytes, the ends' sides
        if ew is not None:
            for i, st in enumerate(ranks):
                for g, n in st["layers"].items():
                    if g in ew["layers"]:
                        e_r[i] += n * ew["layers"][g][sel]
            e_r[0] += ew["pre"][sel]
            e_r[-1] += ew["post"][sel]
        worst = np.argmax(g_r + a_r + e_r, axis=0)
        cols = np.arange(worst.size)
        gemm[sel], attn[sel], elem[sel] = g_r[worst, cols], a_r[worst, cols], e_r[worst, cols]
        # the slowest rank's kernels without the recomputed forward (the windows of ``overlap``)
        gn = share[:, 0][:, None] * N_d[sel] + share[:, 1][:, None] * N_x[sel]
        gn[-1] += p_ * T_h[sel]
        gemm_n[sel], attn_n[sel] = gn[worst, cols], (share[:, 2][:, None] * N_a[sel])[worst, cols]
        elem_n[sel] = e_r[worst, cols] * (5 / touches[sel] if touches is not None else 1.0)
    out = gemm + attn + elem
    return out, out / m, gemm, attn, {"compute": gemm_n + attn_n + elem_n, "gemm": gemm_n, "attn": attn_n}


def _host_floor(model, precision, r_pp, r_v, r_acc, r_ep, rc_name, graphs=()):
    """Per R row: the busiest rank's host kernel-issue seconds per micro-batch (``host_launch``)."""
    from . import host_launch
    t_k, _ = host_launch.launch_seconds()
    out = np.zeros(len(r_pp))
    if "full_iteration" in graphs:
        return np.full(len(r_pp), 2 * t_k)
    per_ep = {int(e): host_launch.group_kernels(model, precision, int(e), graphs) for e in np.unique(r_ep)}
    lay_code = (r_pp.astype(np.int64) * 1000 + r_v) * 2 + r_acc
    rc_code = np.where(rc_name == "full", 2, np.where(rc_name == "selective", 1, 0))
    for pv in np.unique(lay_code):
        a_, p_, v_ = int(pv % 2), int(pv // 2 // 1000), int(pv // 2 % 1000)
        ranks = rank_stages(model, p_, v_, _slots(p_, a_))
        sel_l = lay_code == pv
        for ep_ in np.unique(r_ep[sel_l]):
            sel_e = sel_l & (r_ep == ep_)
            ks = [host_launch.rank_kernels(model, None, st, i == 0, i == len(ranks) - 1, precision,
                                           per_group=per_ep[int(ep_)], ep=int(ep_), recompute="none")
                  for i, st in enumerate(ranks)]
            # recomputation: full reissues the forward, selective the attention kernels
            attn = [sum(n * per_ep[int(ep_)][g][2] for g, n in st["layers"].items() if g in per_ep[int(ep_)])
                    for st in ranks]
            for code, extra in ((0, [0.0] * len(ks)), (1, attn), (2, [k["forward"] for k in ks])):
                sel = sel_e & (rc_code == code)
                if sel.any():
                    out[sel] = t_k * max(k["forward"] + k["backward"] + x for k, x in zip(ks, extra))
    return out


def _slots(pp: int, acc) -> Plan | None:
    """The uneven split of a layout with the embedding and loss slots (``Plan.chunk_sizes``), else None."""
    return Plan(pp=pp, embed_slot=True, loss_slot=True) if acc else None


def _host_step(Z, Z_bytes, gpu, bg, bw, K, framework, world):
    """Per Z row: (CPU-Adam seconds, the share of the host PCIe bytes that hides behind the last
    backward) — ``offload``'s rules as ``run.kernel_step`` applies them. Ψ_h from the host traffic:
    (b_g + b_w)·Ψ_h per step with optimizer offload, (2·b_w + b_g)·Ψ_h per micro-batch with parameter
    offload (``states.host_traffic``)."""
    from .optimizer_offload import cpu_adam_seconds, d2h_hides
    n = len(Z["off"])
    if "host" not in Z_bytes:
        return np.zeros(n), np.zeros(n)
    h0, h1 = Z_bytes["host"][0], Z_bytes["host"][1]
    off = Z["off"]
    psi = np.where(off == 1, h0 / (bg + bw), np.where(off == 2, h1 / (2 * bw + bg), 0.0))
    t_cpu = cpu_adam_seconds(1.0, gpu.name, world) * psi
    hides = (Z["zero"] >= 3) if not d2h_hides(framework, 0) else np.ones(n, dtype=bool)  # d2h_hides on arrays
    share = np.where((off == 1) & hides, bg / (bg + bw), 0.0)
    return t_cpu, share


def _kernel_step(framework, hide, compute, t_fb, t_gemm, t_attn, m, r_pp, r_v, t_r: dict, t_z: dict, space,
                 z_zero, grad_share, layers: int, host=None, gemm_recompute=0, w_extra=0, t_opt=None,
                 win=None):
    """``steptime.kernel_step`` on arrays: compute + the schedule's bubble (1F1B / interleaved,
    (p − 1)·(t_F + t_B)/v) + each dimension's exposed time by ``overlap``'s rules (min with the
    compute window it hides behind), per candidate. ``win``: the slowest rank's compute, GEMM and
    attention seconds without the recomputed forward — the windows ``overlap`` gives each dimension
    (``run.kernel_step``'s m·(t_F + t_B), t_gemm, t_attn); the bubble keeps the recomputation."""
    from .overlap import DEFAULT_HIDE
    hide = {**DEFAULT_HIDE.get(framework, {}), **(hide or {})}
    r, z = space.r, space.z
    bub = (r_pp - 1) * t_fb / r_v
    # zero-bubble ZB-H1 where a pipeline runs one chunk per rank: (p − 1)·(F + B − 2W), W the
    # weight-gradient GEMMs of one micro-batch (``schedule.bubble_seconds``); its p2p sends run
    # beside the steady state (``overlap``). The fastest of 1F1B and ZB-H1 is kept per row.
    t_w = t_gemm / (m * (3 + gemm_recompute)) + w_extra
    zb_ok = (r_pp > 1) & (r_v == 1)
    bub_zb = (r_pp - 1) * (t_fb - 2 * t_w)
    exposed_r = np.zeros(len(compute))
    pp_1f1b = pp_zb = np.zeros(len(compute))
    if win is None:
        win = {"compute": compute, "gemm": t_gemm, "attn": t_attn}
    w_all, w_gemm, w_attn = win["compute"], win["gemm"], win["attn"]
    t_f, t_b = w_all / (3 * m), 2 * w_all / (3 * m)
    for dim, tt in t_r.items():
        on = hide.get(dim, True)
        if not on:
            exposed_r += tt
            if dim == "pp":
                pp_1f1b = pp_zb = tt
        elif dim == "tp":
            exposed_r += np.maximum(tt - w_gemm, 0)
        elif dim == "cp":
            exposed_r += np.maximum(tt - w_attn, 0)
        elif dim == "pp":
            pp_1f1b = np.where(r_v > 1, np.maximum(tt - w_all, 0), tt)
            pp_zb = np.maximum(tt - w_all, 0)
        else:  # ep: behind another micro-batch's compute
            exposed_r += np.maximum(tt - w_all, 0)
    zb = zb_ok & (bub_zb + pp_zb < bub + pp_1f1b)
    base = compute + np.where(zb, bub_zb + pp_zb, bub + pp_1f1b) + exposed_r
    step = base[r].copy()
    mm, tf, tb, comp = m[r], t_f[r], t_b[r], w_all[r]
    zz = z_zero[z]
    if host is not None:  # the CPU optimizer step, serial after the backward (``offload``)
        step += host[0][z]
    if t_opt is not None:  # the GPU's optimizer step after the last backward (``compute.optimizer_seconds``)
        step += t_opt[z]
    for dim, (t0, t1) in t_z.items():
        tt = t0[z] + mm * t1[z]
        if dim == "host" and host is not None and hide.get(dim, True):
            sh = host[1][z]
            step += np.maximum(tt * sh - tb, 0) + tt * (1 - sh)
            continue
        if dim != "dp" or not hide.get(dim, True):
            step += tt
            continue
        share = np.where(zz == 0, 1.0, grad_share)  # DDP: all of it is the gradient all-reduce
        red, gat = tt * share, tt * (1 - share)
        low = np.maximum(red - tb, 0) + (gat if framework == "deepspeed" else np.maximum(gat - tf, 0))
        first = tt * r_pp[r] / (2 * layers)  # the first unit's gather of each pass (overlap.exposed)
        z3 = np.maximum(tt - first - comp, 0) + first
        step += np.where(zz >= 3, z3, low)
    return step, zb


def state_floor(model, setup: TrainSetup, gpus: int) -> int:
    """A floor under the per-GPU bytes of every candidate ``search(model, setup, gpus=gpus,
    offload="none")`` costs: ⌊β·Ψ/G⌋, Ψ the parameters of the one-stage split (``plan.stages(model,
    1)``, MTP modules as ``setup.mtp`` trains them), β the fewest state bytes per parameter
    (b_w + b_g + K, ``States.bytes``) of the framework's ZeRO stages, G = ``gpus``. A world size
    whose floor exceeds the card's budget holds no fitting candidate, so it need not be searched.

    Why it holds (``evaluate``): a candidate's bytes are the largest over its ranks of the model
    states plus terms that are never negative (activations in flight, working and loss memory, the
    ZeRO-3 gathered unit and pool, FP8 copies). Without offload a rank's states are
    ``states.zero_terms`` of Ψ_dense = split/N_tp + whole over N_sh·N_cp ranks and Ψ_exp =
    experts/(N_ep·N_tp) over N_sh·N_cp/N_ep, each state divided by its ZeRO group or not at all, so
    they are at least β·(split + whole + experts)/(N_tp·N_dp·N_cp) (N_sh ≤ N_dp), rounded up or, under
    DeepSpeed, their sum floored. The largest of the N_pp ranks holds at least the mean, and the
    ranks' parameters add up to at least the one-stage split's (every layer on one rank; the
    embedding on the first, the head on the last; a tied head's copy and shared weights run by layers
    on several ranks counted again), so the largest rank's states are at least ⌊β·Ψ/(N_tp·N_dp·N_cp·N_pp)⌋."""
    from .mtp import with_mtp
    from .plan import stages
    m = with_mtp(model, setup.mtp)
    st = stages(m, 1)[0]
    psi = st["split"] + st["whole"] + st["experts"]
    fw = framework(setup.states.framework)
    states = States(offload="none", optimizer=setup.states.optimizer, grad_dtype=setup.states.grad_dtype,
                    framework=fw.name)
    beta = min(sum(Fraction(*map(int, sympy.fraction(sympy.Rational(x)))) for x in states.bytes(z)) for z in fw.zeros)
    return int(beta * psi // gpus)


#: tokens a step (seq x global batch) the vectorised search takes: a step's activation bytes (tokens x
#: width x layers x bytes) must stay inside int64 (2^63), and 2^40 tokens leave 2^23 for the rest
SEARCH_TOKENS_MAX = 2**40


def search(model, setup: TrainSetup, *, gpus: int, gpu, top: int = 5, zero=None, recompute=None, sp=None,
           virtual=None, hsdp=None, offload=None, links: Links | None = None, mfu: float | None = None,
           overlap: float = 0.0, headroom_gib: float = HEADROOM_GIB, precision: str = "bf16",
           hide: dict | None = None, cuda_graphs=None) -> dict:
    """The ``top`` fastest candidates that fit (ties: less memory first). ``setup``: what is not
    swept (``evaluate``); ``zero``, ``recompute``, ``sp``, ``virtual``, ``hsdp`` (int or "none"),
    ``offload``: None sweeps, a value pins."""
    from .mtp import with_mtp
    model = with_mtp(model, setup.mtp)  # the MTP modules trained, as train counts them
    check_capacity(model, setup.capacity)
    if setup.seq * max(1, setup.batch.global_batch or 1) > SEARCH_TOKENS_MAX:
        raise SymcostError(f"--seq {setup.seq:,}: the layout search costs every candidate on int64 arrays, "
                           f"exact up to {SEARCH_TOKENS_MAX:,} tokens a step (seq x global batch); give a "
                           "layout instead of --search for more")
    links = links or Links.of(gpu)
    fw = framework(setup.states.framework)
    if zero is not None:
        fw.check(zero, offload or "none")
    space = candidates(model, gpus, setup.seq, setup.batch.global_batch, zeros=fw.zeros if zero is None else (zero,),
                       recomputes=RECOMPUTES if recompute is None else (recompute,), sp=sp, virtual=virtual,
                       hsdp=hsdp, offload=offload, max_tp=links.gpus_per_node)
    r = evaluate(model, space, setup, gpu=gpu, links=links, mfu=mfu, overlap=overlap, precision=precision, hide=hide,
                 cuda_graphs=cuda_graphs)
    mem, step = r.per_gpu_bytes, r.step_time_s
    # fits: the driver-reported memory minus the headroom (``framework.budget_bytes``), as ``train`` judges
    fits = (mem <= budget_bytes(gpu, headroom_gib)) & r.valid
    pp_c, zero_c = space.lay["pp"][space.R["L"][space.r]], space.Z["zero"][space.z]
    if fw.name == "deepspeed":  # what ``framework.Framework.check`` refuses: DeepSpeed's pipeline engine at ZeRO >= 2
        fits &= ~((pp_c > 1) & (zero_c >= 2))
    elif fw.name == "hf":  # transformers' Trainer has no pipeline stages
        fits &= pp_c == 1
    # proposed: CPU offload where it fits without --mfu (the host's CPU-Adam step and the PCIe copies
    # are costed, ``offload``); at a given --mfu only when pinned (that path costs no host step); one setup per
    # layout and schedule (dp, tp, pp, ep, cp, v, micro-batch, recompute, sp): the fastest of its
    # settings (ZeRO, HSDP, offload), so the five shown differ in layout or schedule
    offered = fits if offload is not None or mfu is None else fits & (space.Z["off"][space.z] == 0)
    fit = np.flatnonzero(offered)
    fit = fit[np.lexsort((mem[fit], step[fit]))]
    ir = space.r[fit]
    # one int64 per (layout, micro-batch, recompute, sp): a 1-D unique (a row-wise unique sorts
    # structured views, ~20x slower); the first index of each key is its fastest setup
    bq = space.R["b"][ir].astype(np.int64)
    key = ((space.R["L"][ir].astype(np.int64) * (int(bq.max(initial=0)) + 1) + bq) * (len(space.recomputes) + 1)
           + space.R["rc"][ir]) * 2 + space.R["sp"][ir].astype(np.int64)
    _, first = np.unique(key, return_index=True)
    best = fit[np.sort(first)][:top]
    pinned = {k: x for k, x in (("zero", zero), ("recompute", recompute), ("sp", sp), ("virtual_stages", virtual),
                                ("hsdp_shard", hsdp), ("offload", offload)) if x is not None}
    swept = {"virtual_stages": sorted(set(np.unique(space.lay["v"]).tolist())),
             "micro_batch": sorted(set(np.unique(space.R["b"]).tolist())),
             "zero": sorted(set(np.unique(space.Z["zero"]).tolist())),
             "offload": [OFFLOAD[i] for i in sorted(set(np.unique(space.Z["off"]).tolist()))],
             "hsdp_shard": [None] * bool((space.Z["sh"] == space.lay["dp"][space.Z["L"]]).any())
             + np.unique(space.Z["sh"][space.Z["sh"] < space.lay["dp"][space.Z["L"]]]).tolist(),
             "recompute": [space.recomputes[i] for i in sorted(set(np.unique(space.R["rc"]).tolist()))],
             "sp": sorted(set(np.unique(space.R["sp"]).tolist()))}
    n_bad = int((~r.valid).sum())
    return {"candidates": len(space) - n_bad, "fitting": int(fits.sum()), "pinned": pinned,
            "shown": ("the fastest setup of each layout and schedule; CPU offload costed by its host CPU-Adam "
                      "step and PCIe copies" if mfu is None else
                      "the fastest setup of each layout and schedule; CPU offload only when --offload is given "
                      "(at a given --mfu its host optimizer time is not modelled)"),
            "not_costed": n_bad,
            "swept": swept,
            "best": [{**space[i], "micro_batches": int(space.R["m"][space.r[i]]),
                      "schedule": _schedule_of(space[i], bool(r.tables.get("zb", np.zeros(1, bool))[space.r[i]])
                                               if "zb" in r.tables else False),
                      "per_gpu_bytes": int(mem[i]), "step_time_s": float(step[i])} for i in best]}


def _schedule_of(row: dict, zb: bool = False) -> str:
    """The pipeline schedule the search costs a row with (``_kernel_step``'s bubble): interleaved 1F1B
    with v > 1 virtual stages; with one chunk per rank the faster of 1F1B and ZB-H1 (no --mfu);
    "none" without a pipeline. DualPipe is costed by ``train --schedule dualpipe``, not swept: its two
    parameter copies and p + 1 in-flight micro-batches are not in ``train_memory``."""
    if row["pp"] == 1:
        return "none"
    if row["virtual_stages"] > 1:
        return "interleaved" + ("+slots" if row.get("account_embedding") else "")
    return "zb-h1" if zb else "1f1b"
