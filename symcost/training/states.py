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
    optimizer K·Ψ_g / (n_g if ZeRO ≥ 1)        K = 12 AdamW, 8 SGD+momentum, 6 + 1/256 8-bit Adam

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
The reduce buckets and the all-gathered unit being computed are transient working memory and are
not counted (as without offload); the CPU optimizer's time is not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..errors import SymcostError

OFFLOAD = ("none", "optimizer", "params")
#: PCIe 5.0 x16 per direction: 32 GT/s × 16 lanes × 128/130 encoding / 8 bits ≈ 63.0 GB/s
PCIE_GBS = 63.0


@dataclass(frozen=True)
class States:
    """How the model states are sharded and where they live (the layout is ``plan.Plan``)."""

    shard: int | None = None  # HSDP: ZeRO shard group in data-parallel ranks (N_sh); None = all N_dp
    offload: str = "none"

    def check(self, plan) -> None:
        if self.offload not in OFFLOAD:
            raise SymcostError(f"--offload: unknown target {self.offload!r} ({', '.join(OFFLOAD)})")
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

    def groups(self, plan) -> tuple[tuple[int, int], tuple[int, int]]:
        """((n_dense, r), (n_experts, r)): ZeRO group sizes and replicas of the two parameter groups."""
        sh = plan.dp if self.shard is None else self.shard
        r = plan.dp // sh
        return (sh * plan.cp, r), (sh * plan.cp // plan.ep, r)


def shard_bytes(psi, n: int, zero: int, K, bg, bw, offload: str) -> dict:
    """GPU and host bytes of ``psi`` parameters of one group sharded over ``n`` ZeRO ranks."""
    w = Fraction(bw) * psi / (n if zero >= 3 else 1)
    g = Fraction(bg) * psi / (n if zero >= 2 else 1)
    o = K * psi / (n if zero >= 1 else 1)
    host = Fraction(0)
    if offload in ("optimizer", "params"):
        host += o + Fraction(bg) * psi / n  # the optimizer partition and its gradient shard
        o, g = Fraction(0), Fraction(0)
    if offload == "params":
        host += w
        w = Fraction(0)
    return {"weights": w, "gradients": g, "optimizer": o, "host": host}


def host_traffic(psi, n: int, m: int, bg, bw, offload: str, grad_sync: str = "every") -> Fraction:
    """PCIe bytes per step (both directions) one GPU moves for ``psi`` parameters over ``n`` ranks."""
    if offload == "optimizer":
        return Fraction(bg + bw) * psi / n
    if offload == "params":
        rs = m if grad_sync == "every" else 1
        return Fraction(2 * m * bw + rs * bg) * psi / n
    return Fraction(0)


def host_ops(m: int, offload: str, grad_sync: str = "every") -> int:
    """Copies over PCIe per step and parameter group (for the α term)."""
    if offload == "optimizer":
        return 2
    if offload == "params":
        return 2 * m + (m if grad_sync == "every" else 1)
    return 0
