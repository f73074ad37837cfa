"""Training frameworks' memory conventions, as data: what each engine keeps per parameter, what it
gathers and when it reshards.

One ``Framework`` record per engine (``FRAMEWORKS``; ``--framework``), read by the ZeRO rule
(``states.zero_terms``: the bytes per parameter of each state) and by the working set of ZeRO-3 /
FSDP (``memory``'s ``gathered`` line). The other layers key their own rules on ``Framework.name``
(the step time's overlap rules live with the step time, not here). ``None`` (no ``--framework``)
is symcost's own convention, ``GENERIC``: bf16 weights, gradients in ``--grad-dtype`` (bf16),
AdamW's fp32 master and moments (12 B), and an FSDP-style working set.

Bytes per parameter of each state (b_w, b_g, K; sharded by the ZeRO rule):

  generic     2, 2, 12 (16 B)
  megatron    2, 4, 12 (18 B): Megatron-LM forces fp32 gradient accumulation and all-reduce with bf16
              (``arguments.py`` validate_args: ``accumulate_allreduce_grads_in_fp32 = True`` under
              ``--bf16``); its distributed optimizer is ZeRO-1 (6 + 12/N_dp B, docs/source/api-guide/
              dist_optimizer.md).
  deepspeed   2, 6, 12 at ZeRO ≤ 2 (18 B: a bf16 and an fp32 copy of the gradient partition,
              ``stage_1_and_2.estimate_zero2_model_states_mem_needs``: "18 = 2_grads_16bit +
              4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit"); 2, 4, 12 at ZeRO-3
              (``stage3.estimate_zero3_model_states_mem_needs``: 18 B/param over the ranks). Under CPU
              offload the 16-bit gradient partition is not kept (the reduced gradients are copied into
              the host's fp32 buffer): b_g = 4, on the host.
  fsdp2       4, 4, 8 (16 B): ``fully_shard`` with ``MixedPrecisionPolicy(param_dtype=bf16,
              reduce_dtype=fp32)`` keeps one fp32 sharded parameter — the optimizer's master —, fp32
              sharded gradients and Adam's two fp32 moments (torch ``_fsdp_param.py``).
  torchtitan  fsdp2's, with torchtitan's defaults (``parallelize.py`` apply_fsdp:
              ``reshard_after_forward`` "default" = not under pipeline parallelism) and its DTensor
              tensor parallelism (``apply_tp``): loss parallel under N_tp > 1 and a head that saves
              its all-gathered input (``dtensor_tp``; ``activations.loss_peak``, ``activations``).
  hf          4, 4, 8 (16 B): transformers' Trainer with ``bf16=True`` trains fp32 weights under
              autocast; AdamW's two fp32 moments.

The working set of ZeRO-3 / FSDP (``gathered``; per GPU, U = the largest wrapping unit's parameters
on the GPU: a decoder layer (dense part ÷ N_tp, routed experts ÷ N_ep·N_tp), or the embedding, or the
final norm + head, whichever is larger; DeepSpeed: the largest module's own parameters,
``stage3.model_to_params``):

  generic      (2·b_w16 + b_g16)·U = 6·U: the unit computed and the prefetched next one in bf16,
               the unit's unsharded bf16 gradients before their reduce-scatter
  fsdp2        (2·2 + 4)·U = 8·U: the same, the unsharded gradients cast to the fp32 reduce dtype
               (``foreach_reduce``'s reduce-scatter input)
  deepspeed    4·U: the estimator's ``largest_layer_memory`` (16-bit parameters and gradients of the
               largest module, no prefetch)
  megatron     as fsdp2, 8·U: gradients in fp32 (Megatron-FSDP; ZeRO-3 is not Megatron's default)

Without resharding after forward (``reshard_after_forward=False``; torchtitan's default under PP,
where ``torch.distributed.pipelining`` also turns gradient sync off until the last micro-batch,
``stage.py`` ``backward_maybe_with_nosync``) the rank's whole stage stays unsharded in bf16 from
its forward to its backward (2·Ψ_rank), and under PP its gradients accumulate unsharded in the
reduce dtype over the micro-batches (b_r·Ψ_rank; FSDP2 ``to_accumulated_grad_if_needed``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import SymcostError

NAMES = ("megatron", "deepspeed", "fsdp2", "torchtitan", "hf")
RESHARD = ("default", "on", "off")


@dataclass(frozen=True)
class Framework:
    """One engine's memory conventions (module docstring). ``name`` None: symcost's generic one."""

    name: str | None
    label: str
    weight_bytes: int  # b_w of the persistent (sharded) parameter
    grad_bytes: int | None  # b_g of the sharded gradient; None: --grad-dtype (bf16)
    adam_bytes: int  # AdamW's K: 12 with an fp32 master copy in the optimizer, 8 when the weight is the master
    unit: str  # "layer" (FSDP's wrapping unit) or "module" (DeepSpeed's largest module)
    unit_bytes: int  # bytes per parameter of the gathered unit (params now + prefetched + unsharded grads)
    reduce_bytes: int  # bytes per element of the gradient reduction (fp32 4, bf16 2)
    reshard: str  # reshard_after_forward: "on", or "default" (off under PP, torchtitan)
    zeros: tuple  # the ZeRO stages the engine runs
    source: str
    logits_held: bool = True  # the model's output keeps the logits through backward (torchtitan: del pred)
    #: DTensor tensor parallelism (torchtitan's apply_tp): the loss runs under ``loss_parallel()`` when
    #: N_tp > 1 (``activations.loss_peak`` kind "parallel") and the head saves its all-gathered input
    #: (``activations(gathered_head=True)``)
    dtensor_tp: bool = False

    def state_bytes(self, zero: int, offload: str, grad_dtype: str | None, optimizer: str, K_default):
        """(b_w, b_g, K) of the ZeRO rule under this convention; an explicit ``--grad-dtype`` (not
        None) and a non-AdamW optimizer override the framework's."""
        from .states import GRAD_BYTES  # states imports this module at the top
        bw = self.weight_bytes
        if grad_dtype is not None:
            bg = GRAD_BYTES[grad_dtype]
        elif self.name == "deepspeed":
            bg = 6 if zero <= 2 and offload == "none" else 4
        else:
            bg = 2 if self.grad_bytes is None else self.grad_bytes
        K = self.adam_bytes if optimizer == "adamw" else K_default
        if optimizer != "adamw" and self.adam_bytes == 8:
            K = K_default - 4  # the weight is the fp32 master: the optimizer keeps only its moments
        return bw, bg, K

    def holds_logits(self, pp: int) -> bool:
        """Whether the logits stay alive through the loss backward: the engine's own rule, and always
        under pipeline parallelism (``torch.distributed.pipelining`` keeps the last stage's output
        in ``fwd_cache`` until that micro-batch's backward; torchtitan's ``del pred`` is its non-PP path)."""
        return self.logits_held or pp > 1

    def resharded(self, pp: int, choice: str = "default") -> bool:
        """Whether parameters reshard after forward: ``choice`` on/off, or the engine's default."""
        if choice != "default":
            return choice == "on"
        return not (self.reshard == "default" and pp > 1)

    def check(self, zero: int, offload: str, pp: int = 1) -> None:
        """Reject what the engine cannot run: a ZeRO stage it lacks; DeepSpeed's pipeline engine with
        ZeRO-2/3 (``PipelineEngine`` asserts stage < 2); transformers' Trainer with pipeline stages."""
        if self.name == "deepspeed" and pp > 1 and zero >= 2:
            raise SymcostError(f"--framework deepspeed with --pp {pp} and --zero {zero}: DeepSpeed's pipeline "
                               f"engine runs ZeRO 0 or 1 only")
        if self.name == "hf" and pp > 1:
            raise SymcostError(f"--framework hf with --pp {pp}: transformers' Trainer has no pipeline parallelism")
        if zero not in self.zeros:
            hint = (" (FSDP2's fully_shard is ZeRO-3; ZeRO-2's keep-parameters-after-forward is "
                    "--reshard-after-forward off)" if self.name in ("fsdp2", "torchtitan", "hf") else "")
            raise SymcostError(f"--framework {self.name} with --zero {zero}: the engine runs ZeRO "
                               f"{', '.join(map(str, self.zeros))} only{hint}")


GENERIC = Framework(None, "symcost (bf16 weights and gradients, AdamW fp32 master+m+v: 16 B/param)",
                    2, None, 12, "layer", 6, 2, "on", (0, 1, 2, 3),
                    "symcost's convention (states.py)")
FRAMEWORKS = {
    "megatron": Framework("megatron", "Megatron-LM (bf16 weights, fp32 main grads, distributed optimizer = "
                          "ZeRO-1: 18 B/param)", 2, 4, 12, "layer", 8, 4, "on", (0, 1, 2, 3),
                          "Megatron-LM arguments.py (bf16 => accumulate_allreduce_grads_in_fp32), "
                          "docs/source/api-guide/dist_optimizer.md"),
    "deepspeed": Framework("deepspeed", "DeepSpeed (its estimators: 18 B/param, ZeRO-3's largest module 4 B/param "
                           "gathered)", 2, 6, 12, "module", 4, 2, "on", (0, 1, 2, 3),
                           "deepspeed/runtime/zero/stage_1_and_2.py, stage3.py estimate_*_model_states_mem_needs"),
    "fsdp2": Framework("fsdp2", "FSDP2 (one fp32 shard = master, fp32 grads, Adam m+v: 16 B/param; bf16 "
                       "unit + prefetch gathered)", 4, 4, 8, "layer", 8, 4, "on", (0, 3),
                       "torch/distributed/fsdp/_fully_shard (MixedPrecisionPolicy bf16/fp32)"),
    "torchtitan": Framework("torchtitan", "torchtitan (FSDP2; reshard_after_forward off under PP)", 4, 4, 8,
                            "layer", 8, 4, "default", (0, 3),
                            "torchtitan/models/llama3/infra/parallelize.py apply_fsdp; train.py del pred "
                            "before backward; apply_tp's loss parallel and ColwiseParallel head",
                            logits_held=False, dtensor_tp=True),
    "hf": Framework("hf", "transformers Trainer (fp32 weights under bf16 autocast, fp32 grads, Adam m+v: "
                    "16 B/param)", 4, 4, 8, "layer", 8, 4, "on", (0, 3),
                    "transformers Trainer bf16=True (torch.autocast over fp32 parameters)"),
}


def framework(name: str | None) -> Framework:
    if name is None:
        return GENERIC
    if name not in FRAMEWORKS:
        raise SymcostError(f"--framework: unknown framework {name!r} ({', '.join(NAMES)})")
    return FRAMEWORKS[name]


#: the default ``--headroom-gib``: memory outside PyTorch's allocator (CUDA context, NCCL buffers) and
#: allocator fragmentation. vLLM's start-up logs (tests/data/vllm_startup.json) measure 0.35-1.38 GiB
#: of non-torch memory per GPU; 2 GiB leaves about 0.6 GiB for fragmentation (not measured here).
HEADROOM_GIB = 2.0


def budget_bytes(gpu, headroom_gib: float = HEADROOM_GIB) -> int:
    """Bytes a training step may use on ``gpu``: the driver-reported memory (``GPU.usable_bytes``, the
    catalogue's, shared with serving) minus the headroom. A headroom the card cannot give exits 2."""
    room = int(round(headroom_gib * 2**30))
    if headroom_gib < 0 or room >= gpu.usable_bytes:
        raise SymcostError(f"--headroom-gib {headroom_gib:g} must be >= 0 and below the {gpu.name}'s "
                           f"driver-reported {gpu.usable_bytes / 2**30:.2f} GiB")
    return gpu.usable_bytes - room


def padded_vocab(model, multiple: int, tp: int = 1):
    """The model with its vocabulary padded up to a multiple of ``multiple``·N_tp (Megatron-LM's
    ``--make-vocab-size-divisible-by``, ``training/tokenizer _vocab_size_with_padding``: the embedding,
    the head and the logits all grow to the padded V)."""
    from dataclasses import replace

    from ..core.notation import sym
    if multiple < 1:
        raise SymcostError(f"--vocab-pad must be a positive integer, got {multiple}")
    if sym.V not in model.values:
        raise SymcostError("--vocab-pad: the model has no vocabulary size V")
    V, step = int(model.values[sym.V]), multiple * tp
    return replace(model, values={**model.values, sym.V: -(-V // step) * step})
