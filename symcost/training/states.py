"""Model states of training on one GPU: weights, gradients, optimizer state, where they live.

Each parameter group g (dense: TP-split and replicated parameters of a stage; routed experts:
split by EP and TP) is sharded over its own ZeRO group of n_g ranks and replicated over r groups
(``plan``): without HSDP n_dense = N_dp·N_cp and n_exp = N_dp·N_cp/N_ep, r = 1; with
``--hsdp-shard N_sh`` (hybrid sharding: PyTorch FSDP ``HYBRID_SHARD`` / FSDP2
``fully_shard(mesh=(replicate, shard))`` at ZeRO-3, ``_HYBRID_SHARD_ZERO2`` at ZeRO-2, Megatron's
``--num-distributed-optimizer-instances`` at ZeRO-1) the ZeRO group is N_sh·N_cp ranks for dense
parameters and N_sh·N_cp/N_ep for experts, and the states are replicated over the
r = N_dp/N_sh groups. Per GPU, with Ψ_g the group's parameters on that GPU:

    weights   b_w·Ψ_g / (n_g if ZeRO-3)
    gradients b_g·Ψ_g / (n_g if ZeRO ≥ 2)
    optimizer K·Ψ_g / (n_g if ZeRO ≥ 1)

b_g = 2 (bf16) or 4 (fp32 main grads); K = 12 AdamW (fp32 master, m, v), 8 SGD with momentum
(master, momentum), 6 + 1/256 8-bit Adam (master, two int8 moments, an fp32 absmax per
2048-element block and moment) (Rajbhandari et al. 2020, ZeRO; Megatron's distributed optimizer is
ZeRO-1 with ``--grad-dtype fp32``). This rule is written once, ``zero_terms``: ``train``
substitutes it for one layout (``memory.state_formula``), ``train --search`` compiles it.

CPU offload (``--offload``) moves states to host memory; what leaves the GPU is the GPU's own
shard, so host bytes are per GPU (a node's host holds the sum over its GPUs):

  optimizer  ZeRO-Offload (Ren et al. 2021; DeepSpeed ``offload_optimizer``, ZeRO ≥ 1): the
             optimizer state K·Ψ_g/n_g and the gradient shard b_g·Ψ_g/n_g live on the host, the
             optimizer step runs on the CPU; the GPU keeps the weights (b_w·Ψ_g, ÷n_g at
             ZeRO-3). PCIe per step: the reduced gradient shard to the host and the updated
             weights back, (b_g + b_w)·Ψ_g/n_g — for one GPU with bf16 the paper's 2Ψ + 2Ψ = 4Ψ.
  params     parameter offload (FSDP ``CPUOffload(offload_params=True)``, DeepSpeed
             ``offload_param``; ZeRO-3 only): the weight shard joins them on the host
             ((b_w + b_g + K)·Ψ_g/n_g), and every micro-batch copies it to the GPU before the
             forward and again before the backward all-gather and the gradient shard back:
             (2·m·b_w + m_rs·b_g)·Ψ_g/n_g per step (m_rs = m, or 1 when gradients sync on the
             last micro-batch only).
The bytes per parameter b_w, b_g, K are the framework's (``framework.Framework.state_bytes``:
``--framework``; an explicit ``--grad-dtype`` overrides it). The all-gathered working set of ZeRO-3 /
FSDP (the unit computed, the prefetched next one and the unit's unsharded gradients; everything
when parameters are not resharded after forward) is its own line, ``gathered`` (``gathered_terms``),
on the GPU under every offload mode. The reduce buckets of ZeRO-1/2 are not counted; the CPU
optimizer's time is not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy

from ..core.errors import SymcostError
from ..core.notation import sym
from ..core.terms import largest
from .framework import framework

OFFLOAD = ("none", "optimizer", "params")
#: PCIe 5.0 x16 per direction: 32 GT/s × 16 lanes × 128/130 encoding / 8 bits ≈ 63.0 GB/s
PCIE_GBS = 63.0
OPTIMIZER_BYTES = {"adamw": Fraction(12), "sgd": Fraction(8), "adam8bit": Fraction(6) + Fraction(2 * 4, 2048)}
GRAD_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
WEIGHT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclass(frozen=True)
class States:
    """How the model states are sharded and where they live (the layout is ``plan.Plan``), and what
    they are: the optimizer (K bytes per parameter) and the gradients' dtype (b_g)."""

    shard: int | None = None  # HSDP: ZeRO shard group in data-parallel ranks (N_sh); None = all N_dp
    offload: str = "none"
    optimizer: str = "adamw"
    grad_dtype: str | None = None  # None: the framework's (``framework.Framework.state_bytes``; bf16 by default)
    framework: str | None = None  # ``framework.FRAMEWORKS`` key; None: symcost's convention

    def check(self, plan) -> None:
        if self.offload not in OFFLOAD:
            raise SymcostError(f"--offload: unknown target {self.offload!r} ({', '.join(OFFLOAD)})")
        framework(self.framework).check(plan.zero, self.offload, plan.pp)
        if self.offload == "optimizer" and plan.zero < 1:
            raise SymcostError("--offload optimizer needs --zero 1, 2 or 3 (ZeRO-Offload moves each rank's "
                               "optimizer partition to the host)")
        if self.offload == "params" and plan.zero != 3:
            raise SymcostError("--offload params needs --zero 3 (only fully sharded parameters are offloaded)")
        if self.shard is None:
            return
        n = self.shard
        if plan.zero < 1:
            raise SymcostError(f"--hsdp-shard {n} needs --zero 1, 2 or 3 (nothing is sharded at ZeRO-0)")
        if n < 1 or plan.dp % n:
            raise SymcostError(f"--hsdp-shard {n} must divide --dp {plan.dp} (the shard groups tile the "
                               f"data-parallel ranks)")
        if n == plan.dp:
            raise SymcostError(f"--hsdp-shard {n} equals --dp: that is sharding over all data-parallel "
                               f"ranks, drop the option")
        if (n * plan.cp) % plan.ep:
            raise SymcostError(f"--ep {plan.ep} must divide hsdp-shard × cp = {n} × {plan.cp} = {n * plan.cp} "
                               f"(experts are sharded inside a shard group)")

    def check_dtypes(self) -> None:
        if self.optimizer not in OPTIMIZER_BYTES:
            raise SymcostError(f"--optimizer: unknown optimizer {self.optimizer!r} ({', '.join(OPTIMIZER_BYTES)})")
        if self.grad_dtype is not None and self.grad_dtype not in GRAD_BYTES:
            raise SymcostError(f"--grad-dtype: unknown dtype {self.grad_dtype!r} (bf16, fp16, fp32)")

    @property
    def K(self) -> sympy.Rational:
        """Optimizer bytes per parameter, exact (the framework's; ``bytes``)."""
        return self.bytes(0)[2]

    @property
    def bg(self) -> int:
        """Bytes per gradient element as it is reduced (``comm``): ``--grad-dtype``, else the framework's
        reduce dtype (fp32 for Megatron and FSDP2, bf16 for DeepSpeed and symcost's)."""
        if self.grad_dtype is not None:
            return GRAD_BYTES[self.grad_dtype]
        fw = framework(self.framework)
        return 2 if fw.name is None else fw.reduce_bytes

    def bytes(self, zero: int) -> tuple:
        """(b_w, b_g, K) at ZeRO stage ``zero`` under the framework's conventions (exact)."""
        bw, bg, K = framework(self.framework).state_bytes(zero, self.offload, self.grad_dtype, self.optimizer,
                                                          OPTIMIZER_BYTES[self.optimizer])
        return bw, bg, sympy.Rational(K.numerator, K.denominator) if isinstance(K, Fraction) else sympy.Integer(K)

    def groups(self, plan) -> tuple[tuple[int, int], tuple[int, int]]:
        """((n_dense, r), (n_experts, r)): ZeRO group sizes and replicas of the two parameter groups."""
        sh = plan.dp if self.shard is None else self.shard
        r = plan.dp // sh
        return (sh * plan.cp, r), (sh * plan.cp // plan.ep, r)

    def shard_symbol(self):
        """The data-parallel ranks one copy of the states spans: N_dp, or N_sh under HSDP."""
        return sym.N_dp if self.shard is None else sym.N_sh


def param_groups(split, whole, experts, shard=None):
    """The two parameter groups of a stage on one GPU, ((Ψ_dense, n_dense), (Ψ_experts, n_experts)),
    in the layout symbols: Ψ_dense = split/N_tp + whole over n = N_sh·N_cp ranks (N_sh is N_dp
    without HSDP), Ψ_experts = experts/(N_ep·N_tp) over N_sh·N_cp/N_ep."""
    shard = sym.N_dp if shard is None else shard
    n = shard * sym.N_cp
    return ((sympy.sympify(split) / sym.N_tp + whole, n),
            (sympy.sympify(experts) / (sym.N_ep * sym.N_tp), n / sym.N_ep))


def zero_terms(groups, zero: int, K, bg, bw, offload: str = "none") -> dict:
    """THE ZeRO rule: GPU bytes (weights, gradients, optimizer) and host bytes of parameter groups
    ``((Ψ_g, n_g), ...)``, each sharded over its own n_g ranks (the module docstring). Ψ and n may be
    numbers or expressions; the result is of the same kind."""
    w = g = o = host = 0
    for psi, n in groups:
        w += bw * psi / (n if zero >= 3 else 1)
        g += bg * psi / (n if zero >= 2 else 1)
        o += K * psi / (n if zero >= 1 else 1)
        if offload in ("optimizer", "params"):
            host += bg * psi / n  # the gradient shard goes to the host with the optimizer partition
    if offload in ("optimizer", "params"):
        host, o, g = host + o, 0, 0
    if offload == "params":
        host, w = host + w, 0
    return {"weights": w, "gradients": g, "optimizer": o, "host": host}


def rounded_states(st: dict, framework_name: str | None, evaluate: bool = True) -> dict:
    """The GPU states of ``zero_terms`` (weights, gradients, optimizer) rounded to whole bytes, as the
    convention rounds them. Every convention but DeepSpeed's rounds each state up (ceil). DeepSpeed's
    estimators (``stage_1_and_2.estimate_zero2_model_states_mem_needs``, ``stage3.
    estimate_zero3_model_states_mem_needs``) floor the sharded states once, ``int(18·Ψ/N)``
    (``int(2·Ψ/N)`` under optimizer offload): under ``--framework deepspeed`` the weights and gradients
    are floored and the optimizer line is floor(w + g + o) − ⌊w⌋ − ⌊g⌋, so the three add up to the
    estimator's single floor. Expressions stay unevaluated with ``evaluate=False`` (the search
    compiles them)."""
    w, g, o = (sympy.sympify(st[k]) for k in ("weights", "gradients", "optimizer"))
    if framework_name != "deepspeed":
        return {k: sympy.ceiling(x, evaluate=evaluate) for k, x in (("weights", w), ("gradients", g),
                                                                    ("optimizer", o))}
    fw_, fg = sympy.floor(w, evaluate=evaluate), sympy.floor(g, evaluate=evaluate)
    return {"weights": fw_, "gradients": fg,
            "optimizer": sympy.Add(sympy.floor(w + g + o, evaluate=evaluate), -fw_, -fg, evaluate=evaluate)}


def shard_bytes(psi, n: int, zero: int, K, bg, bw, offload: str) -> dict:
    """GPU and host bytes of ``psi`` parameters of one group sharded over ``n`` ZeRO ranks."""
    return {k: Fraction(x) for k, x in zero_terms(((Fraction(psi), n),), zero, K, bg, bw, offload).items()}


def host_traffic(psi, n, m, bg, bw, offload: str, grad_sync: str = "every"):
    """PCIe bytes per step (both directions) one GPU moves for ``psi`` parameters over ``n`` ranks
    (numbers or expressions)."""
    if offload == "optimizer":
        return (bg + bw) * psi / n
    if offload == "params":
        rs = m if grad_sync == "every" else 1
        return (2 * m * bw + rs * bg) * psi / n
    return 0


def host_ops(m: int, offload: str, grad_sync: str = "every") -> int:
    """Copies over PCIe per step and parameter group (for the α term)."""
    if offload == "optimizer":
        return 2
    if offload == "params":
        return 2 * m + (m if grad_sync == "every" else 1)
    return 0


def unit_params(split, whole, experts):
    """A unit's parameters on one GPU, in the layout symbols: split/N_tp + whole + experts/(N_ep·N_tp)."""
    return sympy.sympify(split) / sym.N_tp + whole + sympy.sympify(experts) / (sym.N_ep * sym.N_tp)


def _undominated(units) -> list:
    """The units no other unit bounds in every part: ``split/N_tp + whole + experts/(N_ep·N_tp)`` has
    positive coefficients, so a unit with each part ≤ another's is never the max and is left out
    exactly. SymPy's ``Max`` compares its arguments pairwise and symbolically, which on a model with
    hundreds of distinct blocks (Nemotron-Ultra's 162 layers) took tens of seconds."""
    out = []
    for u in dict.fromkeys(tuple(sympy.sympify(x) for x in u) for u in units):
        if all(x.is_number for x in u):
            if any(all(a >= b for a, b in zip(w, u)) for w in out if all(x.is_number for x in w)):
                continue
            out = [w for w in out if not (all(x.is_number for x in w) and all(a >= b for a, b in zip(u, w)))]
        out.append(u)
    return out


def gathered_terms(units, rank, fw, zero: int, resharded: bool, pp: int) -> sympy.Expr:
    """ZeRO-3 / FSDP's working set on one GPU (``framework`` docstring), as an expression in N_tp and
    N_ep: ``units`` the (split, whole, experts) parameters of each wrapping unit on the rank (its
    decoder layers, its embedding, its final norm + head; DeepSpeed: each module), ``rank`` the rank's
    own (split, whole, experts). Resharded after forward: ``fw.unit_bytes``·max_u U_u (the unit being
    computed, the prefetched next one, the unit's unsharded gradients); not resharded: 2·Ψ_rank (every
    unit unsharded in bf16 from forward to backward) plus, under PP (gradient sync off until the last
    micro-batch), the gradients accumulated unsharded in the reduce dtype, b_r·Ψ_rank, else one unit's.
    0 below ZeRO-3: the parameters are whole on every rank."""
    if zero < 3 or not units:
        return sympy.Integer(0)
    U = largest(*[unit_params(*u) for u in _undominated(units)])  # the same maxima for every candidate N_dp
    if resharded:
        return fw.unit_bytes * U
    psi = unit_params(*rank)
    grads = fw.reduce_bytes * psi if pp > 1 else (fw.unit_bytes - 4) * U
    return 2 * psi + grads


def estimator_host_node(zero: int, offload: str, psi, largest, gpus: int, gpus_per_node: int, host_per_gpu=0):
    """Host bytes per node as DeepSpeed's estimators charge them (``--framework deepspeed``;
    ``stage3.estimate_zero3_model_states_mem_needs`` with zero.Init, ``stage_1_and_2.
    estimate_zero2_model_states_mem_needs``), times their ``additional_buffer_factor`` 3/2:

      ZeRO-3, offload      the node's GPUs' offloaded states, gpus_per_node·host_per_gpu
                           (18·Ψ/nodes with parameters, 16·Ψ/nodes with the optimizer only)
      ZeRO-3, no offload   each process builds the largest module in fp32 under zero.Init: 4·U·gpus_per_node
      ZeRO-2, offload      max(4·N_gpus·Ψ, 16·Ψ): every process loads the fp32 model, or the whole
                           model's fp32 gradients and optimizer states (the estimator does not divide
                           them over nodes)
      ZeRO ≤ 2, no offload each process loads the fp32 model: 4·Ψ·gpus_per_node
    Exact rationals of Ψ (parameters), U (the largest module's) and the GPU counts, floored — except
    the one figure the estimator computes in floating point, which is its definition: ZeRO-3 with
    offload is ``int(Ψ·b·gpus_factor·1.5)`` with ``gpus_factor = 1/num_nodes`` a float (b·Ψ is the
    node count times the per-node bytes, an exact integer), on 3 nodes 1 B below the exact floor
    for some Ψ; that product is reproduced operation by operation."""
    f = sympy.Rational(3, 2)
    psi, largest = sympy.sympify(psi), sympy.sympify(largest)
    if zero >= 3 and offload != "none":
        nodes = gpus // gpus_per_node
        per_node = gpus_per_node * sympy.sympify(host_per_gpu)
        whole = per_node * nodes  # Ψ·b, an integer when the states divide as the estimator's do
        if whole.is_Integer and whole < 2**53:
            return sympy.Integer(int(int(whole) * (1 / nodes) * 1.5))  # stage3.py: total_params * 18 * gpus_factor * 1.5
        return sympy.floor(f * per_node)
    if zero >= 3:
        return sympy.floor(f * 4 * largest * gpus_per_node)
    if offload != "none":
        return sympy.floor(f * sympy.Max(4 * gpus * psi, 16 * psi))
    return sympy.floor(f * 4 * psi * gpus_per_node)
