"""Parallel layouts: one notation and one set of constraints for serving and training.

A layout has five sizes, the notation's symbols:

    N_dp  data-parallel size (replicas of the dense weights; serving: attention data parallel)
    N_tp  tensor-parallel size
    N_pp  pipeline stages
    N_cp  context-parallel size (training only; serving has N_cp = 1)
    N_ep  expert-parallel factor: a routed-expert layer is split over N_tp·N_ep ranks

    world = N_dp·N_tp·N_pp·N_cp,  N_ep divides N_dp·N_cp (EP folded inside the data-parallel ranks).

One routed-expert layer is spread over N_tp·N_ep ranks in both layers of the engine; what differs
is how an expert is placed:
  - training (Megatron-LM, MoE parallel folding, expert-tensor-parallel size = N_tp): the E
    experts are split into N_ep groups of whole experts, each expert sliced over N_tp ranks, and
    replicated over the expert-data-parallel size N_dp·N_cp/N_ep; E must be a multiple of N_ep;
  - serving (vLLM ``--enable-expert-parallel``; ``whole_experts``): experts are whole, spread over
    the expert-parallel group of N_tp·N_ep ranks; with attention data parallel (``--dp``) the
    group spans the TP ranks of every DP replica, N_ep = N_dp (vLLM's EP size = TP × DP). E must be
    a multiple of N_tp·N_ep. Without expert parallelism every expert is sliced: over the N_tp ranks
    (N_ep = 1) with one replica, and with attention data parallel over all N_tp·N_dp ranks of the
    stage (``flat_experts``, N_ep = N_dp): vLLM flattens the MoE layers' tensor parallelism across the
    DP ranks (``FusedMoEParallelConfig.make``, ``flatten_tp_across_dp``: "the experts are split between
    the devices" with DP 2, TP 1 and no EP), each MoE layer gathering the replicas' tokens; SGLang's
    ``--enable-dp-attention`` does the same (its MoE TP is the whole ``--tp`` group).

``Layout.check`` is the one place the constraints are checked; each failure is a ``SymcostError``
naming the constraint and the flag:
  - tensor parallel: N_tp divides the query heads H_q, Mamba heads H_m and linear-attention value
    heads H_lv; KV heads H_kv are split when N_tp divides them and replicated when H_kv divides N_tp
    (vLLM and Megatron replicate a KV head over N_tp/H_kv ranks);
  - expert parallel: N_ep > 1 needs routed experts, N_ep divides N_dp·N_cp, the experts divide as above;
  - pipeline: N_pp ≤ L, the text layers (a stage holds at least one);
  - world: the layout needs at most the GPUs given.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.primitives import Linear
from ..core.terms import exact


@dataclass(frozen=True)
class Layout:
    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1  # N_ep: the expert-parallel factor (expert layer over N_tp·N_ep ranks)
    cp: int = 1
    whole_experts: bool = False  # vLLM expert parallelism: whole experts over N_tp·N_ep ranks
    flat_experts: bool = False  # serving, attention DP without EP: every expert sliced over N_tp·N_ep ranks

    @classmethod
    def vllm(cls, model=None, *, tp: int = 1, pp: int = 1, dp: int = 1, ep: int = 1) -> "Layout":
        """vLLM's flags: ``ep`` is the expert-parallel group size (1 = off), N_tp·N_ep."""
        for name, v in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep)):
            if not isinstance(v, int) or v < 1:
                raise SymcostError(f"--{name}: must be a positive integer, got {v!r}")
        if ep == 1:
            if dp > 1 and model is not None and sym.E in model.values:  # vLLM's MoE TP over the DP ranks
                return cls(dp=dp, tp=tp, pp=pp, ep=dp, flat_experts=True)
            return cls(dp=dp, tp=tp, pp=pp)
        if model is not None and sym.E not in model.values:
            raise SymcostError(f"--ep {ep}: the model has no routed experts")
        if ep % tp or dp % (ep // tp):
            raise SymcostError(f"--ep {ep} must be tp × N_ep with N_ep dividing dp, a multiple of --tp {tp} "
                               f"that divides tp·dp = {tp * dp} (vLLM's expert-parallel group spans the "
                               f"tensor- and data-parallel ranks of a stage)")
        return cls(dp=dp, tp=tp, pp=pp, ep=ep // tp, whole_experts=True)

    @property
    def x_ep(self) -> int:
        """The experts' placement, the value of the symbol x_ep: 1 whole experts (expert parallelism), 0 sliced."""
        return int(self.whole_experts)

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    gpus = world

    @property
    def expert_dp(self) -> int:
        return self.dp * self.cp // self.ep

    @property
    def expert_ranks(self) -> int:
        """Ranks one routed-expert layer is split over: N_tp·N_ep."""
        return self.tp * self.ep

    @property
    def ep_group(self) -> int:
        """The ``--ep`` flag's value: vLLM's expert-parallel group size (serving; 1 when the experts are
        sliced over the DP ranks, ``flat_experts``), N_ep (training)."""
        if self.whole_experts:
            return self.tp * self.ep
        return 1 if self.flat_experts else self.ep

    def label(self) -> str:
        cp = f"·CP{self.cp}" if self.cp > 1 else ""
        return f"TP{self.tp}·PP{self.pp}·DP{self.dp}·EP{self.ep_group}{cp}"

    def values(self) -> dict:
        """The layout symbols' values: N_dp, N_tp, N_pp, N_ep, N_cp."""
        return {sym.N_dp: sympy.Integer(self.dp), sym.N_tp: sympy.Integer(self.tp),
                sym.N_pp: sympy.Integer(self.pp), sym.N_ep: sympy.Integer(self.ep),
                sym.N_cp: sympy.Integer(self.cp)}

    def check(self, model, *, gpus: int | None = None) -> None:
        """Reject layouts that do not factor, naming the constraint (see the module docstring)."""
        v = model.values
        for name, n in (("dp", self.dp), ("tp", self.tp), ("pp", self.pp), ("ep", self.ep), ("cp", self.cp)):
            if n < 1:
                raise SymcostError(f"--{name}: must be a positive integer, got {n}")
        self._check_tp(v)
        self._check_ep(v)
        layers = model.n_layers()
        if self.pp > layers:
            raise SymcostError(f"--pp {self.pp} exceeds the layers L={layers} (a stage needs at least one layer)")
        if gpus is not None and self.world > gpus:
            raise SymcostError(f"layout {self.label()} needs {self.world} GPUs, more than --gpus {gpus}")

    def _check_tp(self, v) -> None:
        tp = self.tp
        for s, what in ((sym.H_q, "query heads H_q"), (sym.H_m, "Mamba heads H_m"),
                        (sym.H_lv, "linear-attention value heads H_lv")):
            if s in v and int(v[s]) % tp:
                raise SymcostError(f"--tp {tp} does not divide the {what} ({int(v[s])})")
        if sym.H_kv in v:
            n = int(v[sym.H_kv])
            if n % tp and tp % n:
                raise SymcostError(f"--tp {tp} does not divide the KV heads H_kv ({n}); they can be split "
                                   f"or replicated only when one divides the other")

    def _check_ep(self, v) -> None:
        if self.ep == 1 and not self.whole_experts or self.flat_experts:  # sliced experts: as under TP
            return
        flag = f"--ep {self.ep_group}"
        if sym.E not in v:
            raise SymcostError(f"{flag}: the model has no routed experts")
        if (self.dp * self.cp) % self.ep:
            raise SymcostError(f"{flag} must divide dp × cp = {self.dp} × {self.cp} = {self.dp * self.cp} "
                               f"(experts are folded into the data-parallel ranks)")
        E = int(v[sym.E])
        n = self.expert_ranks if self.whole_experts else self.ep
        # vLLM's expert parallelism places whole experts unevenly when they do not divide
        # (``determine_expert_map``: the first E mod n ranks hold one more); it needs one per rank
        if E % n and (not self.whole_experts or n > E):
            raise SymcostError(f"{flag} does not divide the routed experts E={E}"
                               + (f" (and exceeds them: {n} ranks)" if n > E else ""))


def tp_blocks(components) -> int:
    """TP blocks among one layer's ``components``: each component that ends in a row-parallel
    projection (``Linear`` tagged ``tp="row"``: attention's o_proj, an MLP's down_proj, a Mamba or
    DeltaNet out_proj) or routes tokens to experts (a MoE layer) is one block, which costs one
    collective forward and one backward (Megatron's f/g operators: all-reduce, or with sequence
    parallelism all-gather + reduce-scatter). A Llama layer has two (attention, MLP), a Nemotron-H
    layer one (its one mixer), a replicated mixer none."""
    from ..components.moe import MoE  # lazy: `memory` loads parallel but counts no TP blocks
    return sum(1 for c in components
               if isinstance(c, MoE) or any(isinstance(p, Linear) and p.tp == "row" for p in c.primitives(None)))


def text_tp_blocks(model) -> int:
    """TP blocks of all the decoder layers (tower blocks run none on text tokens)."""
    return sum(exact(g.count, model.values) * tp_blocks(g.components) for g in model.groups if not g.tower)
