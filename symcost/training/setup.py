"""One training setup: the settings every training cost reads, as one frozen value.

    TrainSetup(batch, plan, states, recompute, backward, virtual, activations, capacity)

  batch      ``Batch``: seq T, micro-batch B, global batch (m = global / (B·N_dp) micro-batches)
  plan       ``plan.Plan``: N_dp, N_tp, N_pp, N_ep, N_cp, the ZeRO stage and sequence parallelism
  virtual    interleaved 1F1B's model chunks per pipeline stage (v)
  states     ``states.States``: HSDP shard group N_sh, CPU offload, optimizer, gradient dtype
  recompute  ``recompute.Recompute``: none | selective | full, Megatron's method and N
  backward   ``conventions.Backward``: attention kernel, activation dtype, recurrent scans (its
             ``recompute`` mirrors ``recompute.mode``)
  activations  engine (each component's declaration) | korthikanti (the 2022 paper's preset)
  capacity   the MoE capacity factor (an exact Fraction), None = dropless

``TrainSetup.of(**options)`` builds one from the command line's flat option names (the one place
they are taken apart); ``check(model)`` rejects a setup that does not fit the model, once, with the
command line's messages. ``train_memory(model, setup)``, ``comm(model, setup)`` and the search take
it whole.

>>> s = TrainSetup.of(seq=4096, micro_batch=1, global_batch=64, dp=8, tp=2, zero=1)
>>> s.plan.dp, s.plan.zero, s.micro_batches
(8, 1, 8)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ..components.moe import MoE
from ..core.conventions import Backward
from ..core.errors import SymcostError
from ..core.notation import sym
from .framework import RESHARD
from .framework import framework as framework_record
from .plan import Plan
from .recompute import Recompute
from .states import States

ACT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclass(frozen=True)
class Batch:
    """Tokens of one step: sequences of ``seq`` tokens, ``micro_batch`` per micro-batch, and the
    global batch (None: one micro-batch per data-parallel rank)."""

    seq: int
    micro_batch: int = 1
    global_batch: int | None = None

    def micro_batches(self, dp: int) -> int:
        return micro_batches(self.global_batch, self.micro_batch, dp)


@dataclass(frozen=True)
class TrainSetup:
    """Everything one training step's costs depend on besides the model (module docstring)."""

    batch: Batch
    plan: Plan = field(default_factory=Plan)
    states: States = field(default_factory=States)
    recompute: Recompute = field(default_factory=Recompute)
    backward: Backward = field(default_factory=Backward)
    virtual: int = 1
    activations: str = "engine"
    capacity: Fraction | None = None
    reshard: str = "default"  # FSDP reshard_after_forward: on | off | default (the framework's)
    loss_chunks: int = 1  # cross-entropy chunks (``activations.loss_peak``)
    precision: str = "bf16"  # GEMM precision: bf16 | fp8 | mxfp8 (``fp8.weight_copies`` in memory)
    schedule: str | None = None  # pipeline schedule (``schedule.SCHEDULES``; None: 1F1B / interleaved)
    #: activation offload (``activation_offload.py``): layers per stage whose saved activations go to the host,
    #: None = off, -1 = all but one of each stage's layers (Megatron's largest --cpu-offloading-num-layers)
    act_offload: int | None = None
    mtp: object = "auto"  # --mtp: MTP modules trained (``mtp.with_mtp``: auto = the config's, 0, N)
    compiled_loss: bool = False  # --compiled-loss: torch.compile of the cross-entropy (``activations.loss_peak``)
    #: --attention-impl: the attention kernels' speed class (``compute.ATTENTION_IMPLS``): fused = cuDNN /
    #: FlashAttention-3 class, fa2 = FlashAttention-2 (the saved activations are the same: ``backward.kernel``)
    attention_impl: str = "fused"

    @classmethod
    def of(cls, *, seq: int, micro_batch: int = 1, global_batch: int | None = None, dp=1, tp=1, pp=1, ep=1,
           cp=1, zero=0, sp=False, virtual=1, hsdp_shard=None, offload="none", optimizer="adamw",
           grad_dtype=None, recompute="none", recompute_method="uniform", recompute_layers=1,
           kernel="flash", act_dtype="bf16", scan="fused", activation_model="engine",
           capacity=None, framework=None, reshard="default", loss_chunks=1,
           recompute_modules=None, etp=None, first_stage_layers=None, last_stage_layers=None,
           account_embedding=False, account_loss=False, pipeline_layout=None, precision="bf16",
           schedule=None, act_offload=None, mtp="auto", compiled_loss=False,
           attention_impl="fused") -> "TrainSetup":
        """A setup from the command line's option names (``symcost train`` / ``comm``). ``etp`` is
        Megatron's expert-tensor-parallel size: experts over ep·etp ranks, folded here into the
        engine's N_ep = ep·etp/N_tp (``fold_experts``)."""
        return cls(batch=Batch(seq, micro_batch, global_batch),
                   plan=Plan(dp=dp, tp=tp, pp=pp, ep=fold_experts(ep, etp, tp, dp, cp), cp=cp, zero=zero, sp=sp,
                             first=first_stage_layers, last=last_stage_layers, embed_slot=bool(account_embedding),
                             loss_slot=bool(account_loss), etp=etp,
                             layout=None if pipeline_layout is None else tuple(pipeline_layout)),
                   states=States(shard=hsdp_shard, offload=offload, optimizer=optimizer, grad_dtype=grad_dtype,
                                 framework=framework),
                   recompute=Recompute(recompute, recompute_method, recompute_layers,
                                       None if recompute_modules is None else tuple(recompute_modules)),
                   backward=Backward(kernel=kernel, recompute="none" if recompute == "op" else recompute,
                                     act_dtype=act_dtype, scan=scan),
                   virtual=virtual, activations=activation_model, capacity=capacity, reshard=reshard,
                   loss_chunks=loss_chunks, precision=precision, schedule=schedule, act_offload=act_offload,
                   mtp=mtp, compiled_loss=compiled_loss, attention_impl=attention_impl)

    def replace(self, **options) -> "TrainSetup":
        """This setup with some options (``of``'s names) changed."""
        return TrainSetup.of(**{**self.options(), **options})

    def options(self) -> dict:
        """``of``'s keywords for this setup."""
        p, s, r, b = self.plan, self.states, self.recompute, self.backward
        out = dict(seq=self.batch.seq, micro_batch=self.batch.micro_batch, global_batch=self.batch.global_batch,
                   dp=p.dp, tp=p.tp, pp=p.pp, ep=p.ep, cp=p.cp, zero=p.zero, sp=p.sp, virtual=self.virtual,
                   hsdp_shard=s.shard, offload=s.offload, optimizer=s.optimizer, grad_dtype=s.grad_dtype,
                   recompute=r.mode, recompute_method=r.method, recompute_layers=r.layers, kernel=b.kernel,
                   act_dtype=b.act_dtype, scan=b.scan, activation_model=self.activations,
                   capacity=self.capacity, framework=s.framework, reshard=self.reshard,
                   loss_chunks=self.loss_chunks, recompute_modules=r.modules, etp=p.etp,
                   first_stage_layers=p.first, last_stage_layers=p.last, account_embedding=p.embed_slot,
                   account_loss=p.loss_slot, pipeline_layout=p.layout, precision=self.precision,
                   schedule=self.schedule, act_offload=self.act_offload, mtp=self.mtp,
                   compiled_loss=self.compiled_loss, attention_impl=self.attention_impl)
        if p.etp is not None:  # ``of`` folds --ep with --etp: give it the flag's value back
            out["ep"] = p.ep * p.tp // p.etp
        return out

    # -- derived -------------------------------------------------------------------------------------
    @property
    def seq(self) -> int:
        return self.batch.seq

    @property
    def micro_batch(self) -> int:
        return self.batch.micro_batch

    @property
    def micro_batches(self) -> int:
        """m, the micro-batches per step (raises when the global batch does not split)."""
        return self.batch.micro_batches(self.plan.dp)

    @property
    def framework(self):
        """The ``framework.Framework`` record of ``--framework`` (its ``name`` is None without one): the
        conventions other costs key their own rules on (``states.framework`` holds the name)."""
        return framework_record(self.states.framework)

    @property
    def loss_kind(self) -> str:
        """How the cross-entropy runs (``activations.loss_peak``'s ``kind``): "compiled" under
        ``--compiled-loss``, else "parallel" where the framework runs DTensor's loss parallel
        (torchtitan; the formula applies it from N_tp > 1), else "eager"."""
        return "compiled" if self.compiled_loss else "parallel" if self.framework.dtensor_tp else "eager"

    @property
    def head_saved(self) -> dict:
        """``activations``' keywords for what the head and loss save: the loss chunks, the compiled
        loss, and the head's gathered input under DTensor TP (``Framework.dtensor_tp``)."""
        return dict(loss_chunks=self.loss_chunks, compiled_loss=self.compiled_loss,
                    gathered_head=self.framework.dtensor_tp)

    @property
    def act_bytes(self) -> int:
        return ACT_BYTES[self.backward.act_dtype]

    # -- validation ----------------------------------------------------------------------------------
    def check(self, model) -> None:
        """Reject a setup the model cannot train with, naming the constraint (the CLI's messages)."""
        p = self.plan
        if p.etp is not None and sym.E in model.values:
            ep_flag = p.ep * p.tp // p.etp
            E = int(model.values[sym.E])
            if E % ep_flag:
                raise SymcostError(f"--ep {ep_flag} does not divide the routed experts E={E} (each expert-parallel "
                                   f"rank holds E/ep whole experts, sliced over --etp {p.etp})")
        self.plan.check(model, self.seq)
        self.states.check(self.plan)
        if self.reshard not in RESHARD:
            raise SymcostError(f"--reshard-after-forward: must be one of {', '.join(RESHARD)}, got {self.reshard!r}")
        if self.reshard != "default" and self.plan.zero != 3:
            raise SymcostError(f"--reshard-after-forward {self.reshard} needs --zero 3 (only fully sharded "
                               f"parameters are gathered and resharded)")
        if isinstance(self.loss_chunks, bool) or not isinstance(self.loss_chunks, int) or self.loss_chunks < 1:
            raise SymcostError(f"--loss-chunks: must be a positive integer, got {self.loss_chunks!r}")
        if self.compiled_loss and self.loss_chunks > 1:
            raise SymcostError(f"--compiled-loss with --loss-chunks {self.loss_chunks}: a chunked loss is its own "
                               "kernel; symcost models one or the other")
        self.recompute.check()
        if self.activations == "korthikanti" and not (self.recompute.per_layer or self.recompute.mode != "full"):
            raise SymcostError("--recompute-method / --recompute-layers need --activations engine "
                               "(the preset has no per-layer split)")
        check_capacity(model, self.capacity)
        check_pipeline(model, self.plan, self.micro_batches, self.virtual)
        self.states.check_dtypes()
        if self.precision not in ("bf16", "fp8", "mxfp8"):
            raise SymcostError(f"--precision: unknown {self.precision!r} (bf16, fp8, mxfp8)")
        if self.schedule is not None:
            from .schedule import check_schedule
            check_schedule(self.schedule, self.plan.pp, self.micro_batches, self.virtual)
        if self.act_offload is not None:
            from .activation_offload import check
            check(model, self)


def micro_batches(global_batch: int | None, micro_batch: int, dp: int) -> int:
    gb = global_batch or micro_batch * dp
    if gb % (micro_batch * dp):
        raise SymcostError(f"--global-batch {gb} is not a multiple of micro-batch × dp "
                           f"({micro_batch} × {dp})")
    return gb // (micro_batch * dp)


def fold_experts(ep: int, etp, tp: int, dp: int, cp: int) -> int:
    """Megatron's MoE parallel folding with its own expert-TP size: a routed-expert layer spans
    ep·etp ranks of the N_tp·N_dp·N_cp ranks of a stage (expert-data-parallel size
    N_tp·N_dp·N_cp/(ep·etp); ``megatron/core/parallel_state.py``, ``initialize_model_parallel``:
    the expert groups must tile tp·dp·cp). The engine spreads an expert layer over N_tp·N_ep ranks,
    so N_ep = ep·etp/N_tp, which must be a whole number (N_tp dividing ep·etp). Returns N_ep."""
    if etp is None or etp == tp:
        return ep
    if etp < 1:
        raise SymcostError(f"--etp: must be a positive integer, got {etp}")
    if (tp * dp * cp) % (ep * etp):
        raise SymcostError(f"--ep {ep} × --etp {etp} = {ep * etp} must divide tp × dp × cp = {tp * dp * cp} "
                           f"(Megatron's expert groups tile the tensor-, data- and context-parallel ranks)")
    if (ep * etp) % tp:
        raise SymcostError(f"--ep {ep} × --etp {etp} = {ep * etp} must be a multiple of --tp {tp}: this engine "
                           f"places an expert layer over whole tensor-parallel groups")
    return ep * etp // tp


def check_pipeline(model, plan: Plan, m: int, virtual: int) -> None:
    """Interleaved 1F1B's constraints (Megatron-LM): v > 1 needs a pipeline, the layers split
    evenly into N_pp·v chunks (or by the plan's uneven rule, ``Plan.chunk_sizes``), and m a
    multiple of N_pp (micro-batch groups of N_pp)."""
    L = model.n_layers()
    if plan.uneven:
        plan.chunk_sizes(L, virtual)
    if virtual == 1:
        return
    if plan.pp == 1:
        raise SymcostError(f"--virtual-stages {virtual} needs --pp > 1 (interleaving splits pipeline stages)")
    if not plan.uneven and L % (plan.pp * virtual):
        raise SymcostError(f"--virtual-stages {virtual}: pp × v = {plan.pp} × {virtual} = {plan.pp * virtual} "
                           f"must divide the layers L={L} (equal model chunks; or give the first/last stages their own "
                           f"counts, --first-stage-layers / --last-stage-layers, or --account-embedding / "
                           f"--account-loss)")
    if m % plan.pp:
        raise SymcostError(f"--virtual-stages {virtual}: the micro-batches per step ({m}) must be a multiple "
                           f"of --pp {plan.pp} (Megatron's interleaved schedule runs them in groups of pp)")


def has_experts(model) -> bool:
    return any(isinstance(c, MoE) for g in model.groups for c in g.components)


def check_capacity(model, capacity) -> None:
    if capacity is None:
        return
    if not has_experts(model):
        raise SymcostError("--capacity-factor: the model has no routed experts")
    if capacity <= 0:
        raise SymcostError(f"--capacity-factor must be > 0, got {capacity}")
