"""The notation: the only place symcost constructs SymPy symbols.

Every symbol of the seed documents (and the few this project adds) is one row of ``TABLE``:
python name, LaTeX, meaning, the ``config.json`` fields it usually comes from, and its kind.
All symbols are positive integers. Formulas are built from ``sym.<name>`` attributes, never
from strings (``E`` and ``N`` would collide with SymPy's Euler number and ``N()``).

>>> from symcost.core.notation import sym
>>> sym.H_kv * sym.D_h
D_h*H_kv
>>> sym.E.is_integer, sym.E.is_positive
(True, True)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import SimpleNamespace

import sympy


@dataclass(frozen=True)
class Entry:
    name: str
    latex: str
    meaning: str
    fields: str = ""
    kind: str = "count"


TABLE: tuple[Entry, ...] = (
    # -- core transformer dimensions (seed 000 §1, 003) --
    Entry("d", "d", "hidden size", "hidden_size, n_embd, d_model", "length"),
    Entry("V", "V", "vocabulary size", "vocab_size"),
    Entry("L", "L", "decoder layers", "num_hidden_layers, n_layer"),
    Entry("H_q", "H_{q}", "query heads", "num_attention_heads, n_head"),
    Entry("H_kv", "H_{kv}", "key/value heads", "num_key_value_heads"),
    Entry("D_h", "D_{h}", "attention head dim", "head_dim (default d/H_q)", "length"),
    Entry("d_ff", "d_{ff}", "dense FFN intermediate size", "intermediate_size, n_inner", "length"),
    Entry("P", "P", "learned absolute positions", "max_position_embeddings, n_positions"),
    # -- mixture of experts (seed 000 §1.4, 002) --
    Entry("E", "E", "routed experts", "n_routed_experts, num_experts, num_local_experts"),
    Entry("E_s", "E_{s}", "shared experts", "n_shared_experts"),
    Entry("k", "k", "experts per token", "num_experts_per_tok, top_k_experts"),
    Entry("d_moe", "d_{moe}", "routed expert intermediate size", "moe_intermediate_size", "length"),
    Entry("d_sh", "d_{sh}", "shared expert intermediate size",
          "shared_expert_intermediate_size, moe_shared_expert_intermediate_size", "length"),
    Entry("d_lat", "d_{lat}", "LatentMoE latent size", "moe_latent_size", "length"),
    Entry("E_z", "E_{z}", "zero-computation (identity) experts in the router's pool (LongCat-Flash)",
          "zero_expert_num"),
    # -- multi-head latent attention (seed 001 §2.3) --
    Entry("d_q", "d_{q}", "MLA query LoRA rank", "q_lora_rank", "length"),
    Entry("d_kv", "d_{kv}", "MLA key/value LoRA rank", "kv_lora_rank", "length"),
    Entry("D_nope", "D_{nope}", "MLA non-rotary q/k head dim", "qk_nope_head_dim", "length"),
    Entry("D_rope", "D_{rope}", "MLA rotary q/k head dim", "qk_rope_head_dim", "length"),
    Entry("D_v", "D_{v}", "value head dim (MLA; MiMo-V2-Flash attention)", "v_head_dim", "length"),
    # -- sparse indexer (DeepSeek V3.2 DSA, MiniMax M3 MSA) --
    Entry("H_I", "H_{I}", "indexer heads", "index_n_heads", "count"),
    Entry("D_I", "D_{I}", "indexer head dim", "index_head_dim", "length"),
    Entry("k_I", "k_{I}", "indexer top-k keys", "index_topk", "count"),
    Entry("L_I", "L_{I}", "layers running their own DSA indexer (the others reuse its top-k)",
          "indexer_types, index_topk_freq, index_topk_pattern"),
    # -- Mamba-2 (seed 001 §2.4) --
    Entry("N", "N", "SSM state size", "ssm_state_size, state_size", "length"),
    Entry("H_m", "H_{m}", "Mamba heads", "mamba_num_heads, num_heads", "count"),
    Entry("D_m", "D_{m}", "Mamba head dim", "mamba_head_dim, head_dim", "length"),
    Entry("G", "G", "Mamba groups", "n_groups", "count"),
    Entry("K_c", "K_{c}", "causal conv kernel", "conv_kernel, linear_conv_kernel_dim", "length"),
    # -- Mamba-1 selective scan (Mamba, Falcon-Mamba, Jamba) --
    Entry("d_ssm", "d_{ssm}", "Mamba-1 inner size (expand·d)", "intermediate_size = expand·hidden_size, "
          "mamba_expand·hidden_size", "length"),
    Entry("R_dt", "R_{dt}", "Mamba-1 time-step (dt) rank", "time_step_rank, mamba_dt_rank (auto: ⌈d/16⌉)",
          "length"),
    # -- RWKV-4 (time mix) --
    Entry("d_att", "d_{att}", "RWKV time-mix (attention) width", "attention_hidden_size (default hidden_size)",
          "length"),
    # -- xLSTM (mLSTM matrix memory) --
    Entry("H_ml", "H_{ml}", "mLSTM heads", "num_heads", "count"),
    Entry("D_mk", "D_{mk}", "mLSTM query/key head dim", "int(hidden_size·qk_dim_factor) / num_heads", "length"),
    Entry("D_mv", "D_{mv}", "mLSTM value head dim", "int(hidden_size·v_dim_factor) / num_heads", "length"),
    Entry("C_ml", "C_{ml}", "mLSTM chunk size of the chunkwise kernel", "chunk_size", "length"),
    # -- Zamba / Zamba2 (shared attention blocks with per-invocation LoRA adapters) --
    Entry("L_hyb", "L_{hyb}", "hybrid layers: a shared transformer block, then a Mamba layer (Zamba)",
          "layers_block_type 'hybrid', attn_layer_period"),
    Entry("N_blk", "N_{blk}", "stored shared transformer blocks (each stored once, run by several layers)",
          "min(num_mem_blocks, hybrid layers) when tie_word_embeddings, else hybrid layers"),
    Entry("N_ad", "N_{ad}", "stored LoRA adapter sets of the shared blocks",
          "hybrid layers when tie_word_embeddings, else Σ_b k_b² (k_b layers per block)"),
    Entry("r_a", "r_{a}", "LoRA adapter rank of the shared blocks' projections", "adapter_rank", "length"),
    # -- RG-LRU (RecurrentGemma / Griffin recurrent blocks) --
    Entry("D_lru", "D_{lru}", "RG-LRU gate block width (lru_width = H_q·D_lru)",
          "lru_width // num_attention_heads", "length"),
    Entry("L_rec", "L_{rec}", "recurrent (RG-LRU) layers", "block_types 'recurrent'"),
    # -- Gated DeltaNet (seed 001 §2.6) --
    Entry("H_lk", "H_{lk}", "linear-attention key heads", "linear_num_key_heads", "count"),
    Entry("H_lv", "H_{lv}", "linear-attention value heads", "linear_num_value_heads", "count"),
    Entry("D_lk", "D_{lk}", "linear-attention key head dim", "linear_key_head_dim", "length"),
    Entry("D_lv", "D_{lv}", "linear-attention value head dim", "linear_value_head_dim", "length"),
    # -- Kimi Delta Attention (Kimi Linear): one head count and head dim for q, k and v --
    Entry("H_kda", "H_{kda}", "KDA heads (q, k and v alike)", "linear_num_heads, linear_attn_config.num_heads",
          "count"),
    Entry("D_kda", "D_{kda}", "KDA head dim (q, k and v alike; also the gates' low rank)",
          "linear_head_dim, linear_attn_config.head_dim", "length"),
    # -- lightning attention (MiniMax-Text-01) --
    Entry("C_la", "C_{la}", "lightning-attention block size (the prefill scan runs block by block)",
          "block_size", "length"),
    # -- windows --
    Entry("W", "W", "sliding window", "sliding_window", "length"),
    # -- layer counts per kind (heterogeneous stacks) --
    Entry("L_dense", "L_{dense}", "dense-FFN layers", "first_k_dense_replace, mlp_only_layers"),
    Entry("L_moe", "L_{moe}", "MoE layers", "num_hidden_layers - dense layers"),
    Entry("L_swa", "L_{swa}", "sliding-window attention layers", "layer_types, sliding_window_pattern"),
    Entry("L_full", "L_{full}", "full-attention layers", "layer_types, full_attention_interval"),
    Entry("L_lin", "L_{lin}", "linear-attention layers (Gated DeltaNet, KDA, lightning attention)", "layer_types"),
    Entry("L_M", "L_{M}", "Mamba layers of a hybrid (Mamba-2; Mamba-1 in Jamba)",
          "hybrid_override_pattern 'M', attn_layer_period"),
    Entry("L_A", "L_{A}", "attention layers of a hybrid", "hybrid_override_pattern '*'"),
    Entry("L_F", "L_{F}", "MLP layers of a hybrid", "hybrid_override_pattern '-'"),
    Entry("L_E", "L_{E}", "MoE layers of a hybrid", "hybrid_override_pattern 'E'"),
    Entry("L_conv", "L_{conv}", "short-convolution layers (LFM2)", "layer_types 'conv', full_attn_idxs"),
    # -- Mamba-2 / Nemotron-H (SSD chunking, MTP) --
    Entry("C", "C", "Mamba-2 SSD chunk size (the scan pads T to a multiple)", "chunk_size", "length"),
    Entry("L_mtp", "L_{mtp}", "multi-token-prediction (next-n) modules", "num_nextn_predict_layers"),
    # -- SigLIP vision tower (Gemma 3) --
    Entry("d_vis", "d_{vis}", "vision tower hidden size", "vision_config.hidden_size", "length"),
    Entry("d_ff_vis", "d_{ff,vis}", "vision tower MLP size", "vision_config.intermediate_size", "length"),
    Entry("L_vis", "L_{vis}", "vision tower layers", "vision_config.num_hidden_layers, depth"),
    Entry("p_vis", "p_{vis}", "vision patch size (pixels per side)", "vision_config.patch_size", "length"),
    Entry("C_img", "C_{img}", "image channels", "vision_config.num_channels, in_channels"),
    Entry("N_pat", "N_{pat}", "patches per image", "(image_size // patch_size)^2"),
    # -- DeepSeek / Kimi (MoonViT patch merger) --
    Entry("m_vis", "m_{vis}", "vision patches merged into one token", "vision_config.merge_kernel_size, spatial_merge_size²"),
    # -- Gated DeltaNet (Qwen3-Next) --
    Entry("C_dn", "C_{dn}", "Gated DeltaNet / KDA chunk size (the torch scan pads T to a multiple)",
          "(64, fixed in transformers)", "length"),
    # -- Kimi K3 (attention residuals) --
    Entry("R_ar", "R_{ar}", "attention-residual score rows per token, summed over a forward's aggregation "
          "points (each scores its banked block summaries and the running prefix)",
          "num_hidden_layers, attn_res_block_size"),
    # -- MiniMax M3 (MSA block-sparse index attention, vision patch merger) --
    Entry("S_I", "S_{I}", "MSA key-block size (keys pooled per indexer block)",
          "sparse_attention_config.sparse_block_size, index_block_size", "length"),
    Entry("k_blk", "k_{blk}", "MSA key blocks kept per query (incl. the local block)",
          "sparse_attention_config.sparse_topk_blocks, index_topk_blocks"),
    Entry("t_vis", "t_{vis}", "vision temporal patch size (frames per Conv3d patch)",
          "vision_config.temporal_patch_size", "length"),
    Entry("d_proj", "d_{proj}", "vision projector hidden size",
          "projector_hidden_size, vision_config.projector_input_dim", "length"),
    # -- DeepSeek V4 (compressed attention, grouped output projection, mHC, hash routing) --
    Entry("n_hc", "n_{hc}", "hyper-connection residual streams", "hc_mult"),
    Entry("m_csa", "m_{csa}", "CSA compression ratio (tokens per compressed entry)",
          "compress_rates.compressed_sparse_attention (4)", "length"),
    Entry("m_hca", "m_{hca}", "HCA compression ratio (tokens per compressed entry)",
          "compress_rates.heavily_compressed_attention (128)", "length"),
    Entry("g_o", "g_{o}", "grouped output projection: head groups", "o_groups"),
    Entry("d_o", "d_{o}", "grouped output projection: rank per group", "o_lora_rank", "length"),
    Entry("L_csa", "L_{csa}", "compressed-sparse-attention (CSA) layers", "layer_types, compress_ratios 4"),
    Entry("L_hca", "L_{hca}", "heavily-compressed-attention (HCA) layers", "layer_types, compress_ratios 128"),
    Entry("L_hash", "L_{hash}", "hash-routed MoE layers", "num_hash_layers, mlp_layer_types"),
    # -- Llama 4 (chunked local attention, vision adapter) --
    Entry("C_att", "C_{att}", "attention chunk size (a query attends only within its chunk)",
          "attention_chunk_size", "length"),
    Entry("L_chunk", "L_{chunk}", "chunked local attention layers", "layer_types 'chunked_attention'"),
    Entry("d_pout", "d_{pout}", "vision adapter output size", "vision_config.projector_output_dim", "length"),
    # -- vision tokens per image (Gemma 3 pooled projector) --
    Entry("N_img", "N_{img}", "text tokens one image fills (pooled vision features)", "mm_tokens_per_image"),
    # -- Qwen3-VL / Qwen3.5 vision tower (learned position table, deepstack mergers) --
    Entry("P_vis", "P_{vis}", "vision learned position-embedding entries (resampled to each image's grid)",
          "vision_config.num_position_embeddings"),
    Entry("n_ds", "n_{ds}", "deepstack patch mergers (vision features fed into early text layers)",
          "len(vision_config.deepstack_visual_indexes)"),
    Entry("d_vout", "d_{vout}", "vision tower / merger output size, where it differs from the text hidden size",
          "vision_config.out_hidden_size, vision_config.vision_output_dim", "length"),
    # -- Gemma 4 (global-layer attention shape, per-layer inputs, KV-shared layers, towers) --
    Entry("D_g", "D_{g}", "head dim of global (full-attention) layers", "global_head_dim, per_layer_config",
          "length"),
    Entry("H_kvg", "H_{kv,g}", "key/value heads of global (full-attention) layers",
          "num_global_key_value_heads, per_layer_config"),
    Entry("d_pl", "d_{pl}", "per-layer input (PLE) width", "hidden_size_per_layer_input", "length"),
    Entry("V_pl", "V_{pl}", "per-layer input (PLE) vocabulary", "vocab_size_per_layer_input"),
    Entry("L_sh_full", "L_{sh,full}", "full-attention layers that reuse another layer's KV (no cache)",
          "num_kv_shared_layers, layer_types"),
    Entry("L_sh_swa", "L_{sh,swa}", "sliding-window layers that reuse another layer's KV (no cache)",
          "num_kv_shared_layers, layer_types"),
    # -- Gemma 3n (AltUp, LAuReL) --
    Entry("n_alt", "n_{alt}", "AltUp streams (predictions) of the hidden state", "altup_num_inputs"),
    Entry("r_lau", "r_{lau}", "LAuReL (learned augmented residual) rank", "laurel_rank", "length"),
    Entry("H_vis", "H_{vis}", "vision tower attention heads", "vision_config.num_attention_heads"),
    Entry("H_kv_vis", "H_{kv,vis}", "vision tower key/value heads", "vision_config.num_key_value_heads"),
    Entry("D_vis", "D_{vis}", "vision tower head dim", "vision_config.head_dim", "length"),
    Entry("P_axis", "P_{axis}", "vision position table size per image axis (Gemma 4)",
          "vision_config.position_embedding_size"),
    Entry("d_aud", "d_{aud}", "audio tower hidden size", "audio_config.hidden_size", "length"),
    Entry("L_aud", "L_{aud}", "audio tower (conformer) layers", "audio_config.num_hidden_layers"),
    Entry("H_aud", "H_{aud}", "audio tower attention heads", "audio_config.num_attention_heads"),
    Entry("D_aud", "D_{aud}", "audio tower head dim", "audio_config.hidden_size // num_attention_heads",
          "length"),
    Entry("K_aud", "K_{aud}", "audio tower depthwise conv kernel", "audio_config.conv_kernel_size", "length"),
    Entry("c_aud0", "c_{aud,0}", "audio subsampling conv channels, first conv", "audio_config.subsampling_conv_channels[0]"),
    Entry("c_aud1", "c_{aud,1}", "audio subsampling conv channels, second conv", "audio_config.subsampling_conv_channels[1]"),
    Entry("d_aud_out", "d_{aud,out}", "audio tower output projection size", "audio_config.output_proj_dims", "length"),
    # -- user inputs --
    Entry("T", "T", "tokens: sequence / context length", "(input)", "length"),
    Entry("B", "B", "batch size", "(input)"),
    Entry("b_w", "b_{w}", "bytes per weight", "(dtype)", "bytes"),
    Entry("b_kv", "b_{kv}", "bytes per cache element", "(dtype)", "bytes"),
    Entry("b_state", "b_{state}", "bytes per recurrent/conv state element (fp32 in transformers)",
          "(dtype)", "bytes"),
    # -- serving engine and hardware (symcost.serving) --
    Entry("M", "M", "tokens per chunked-prefill step (max_num_batched_tokens)", "(engine)"),
    Entry("M_gpu", "M_{gpu}", "memory budget per GPU: usable bytes x gpu_memory_utilization", "(GPU)",
          "bytes"),
    Entry("F_gpu", "F_{gpu}", "dense peak FLOP/s of the GPU for the compute dtype", "(GPU)"),
    Entry("BW_hbm", "BW_{hbm}", "GPU memory bandwidth, bytes/s", "(GPU)"),
    Entry("BW_link", "BW_{link}", "scale-up link bandwidth per GPU, one direction, bytes/s", "(GPU)"),
    # -- calibrated latency (symcost.serving.roofline; values: symcost.hardware.calibration) --
    Entry("BW_net", "BW_{net}", "scale-out link bandwidth per GPU (InfiniBand/RoCE), one direction, bytes/s",
          "(cluster: Links.ib_bytes_s)"),
    Entry("D_nv", "D_{nv}", "GPUs in one NVLink domain (8 on HGX boards, 72 on NVL72)", "(cluster: Links.gpus_per_node)"),
    Entry("x_ep", "x_{ep}", "expert parallelism on (1: whole experts, all-to-all dispatch/combine) or off (0: "
          "experts sliced over TP)", "(--ep)", "switch"),
    Entry("F_moe", "F_{moe}", "dense peak FLOP/s for the routed experts' compute dtype", "(GPU, quantization)"),
    Entry("F_attn", "F_{attn}", "dense peak FLOP/s for attention (bf16)", "(GPU)"),
    Entry("eta_cg", "\\eta_{c,g}", "dense-GEMM share of the peak reached (calibrated by M regime)", "(calibration)",
          "ratio"),
    Entry("eta_mg", "\\eta_{m,g}", "dense-GEMM share of the HBM bandwidth reached", "(calibration)", "ratio"),
    Entry("t_g", "t_{0,g}", "dense-GEMM kernel floor, seconds", "(calibration)", "seconds"),
    Entry("F_gb", "F_{gb}", "dense peak FLOP/s for the linears a quantised checkpoint keeps at its base dtype",
          "(GPU, quantization)"),
    Entry("eta_cgb", "\\eta_{c,gb}", "base-dtype dense-GEMM share of the peak reached (a quantised checkpoint's "
          "unquantised linears)", "(calibration)", "ratio"),
    Entry("eta_mgb", "\\eta_{m,gb}", "base-dtype dense-GEMM share of the HBM bandwidth reached", "(calibration)",
          "ratio"),
    Entry("t_gb", "t_{0,gb}", "base-dtype dense-GEMM kernel floor, seconds", "(calibration)", "seconds"),
    Entry("eta_cx", "\\eta_{c,x}", "grouped (MoE) GEMM share of the peak reached (by rows per expert)",
          "(calibration)", "ratio"),
    Entry("eta_mx", "\\eta_{m,x}", "grouped (MoE) GEMM share of the HBM bandwidth reached", "(calibration)", "ratio"),
    Entry("t_x", "t_{0,x}", "fused-MoE kernel floor, seconds", "(calibration)", "seconds"),
    Entry("eta_ca", "\\eta_{c,a}", "attention kernel share of the bf16 peak reached", "(calibration)", "ratio"),
    Entry("eta_ma", "\\eta_{m,a}", "attention kernel share of the HBM bandwidth reached", "(calibration)", "ratio"),
    Entry("t_a", "t_{0,a}", "attention kernel floor, seconds", "(calibration)", "seconds"),
    Entry("eta_me", "\\eta_{m,e}", "elementwise kernels' share of the HBM bandwidth", "(calibration)", "ratio"),
    Entry("t_e", "t_{0,e}", "elementwise kernel floor, seconds", "(calibration)", "seconds"),
    Entry("eta_ar", "\\eta_{ar}", "all-reduce share of the link bandwidth (by message size)", "(calibration)",
          "ratio"),
    Entry("alpha_ar", "\\alpha_{ar}", "all-reduce latency per call, seconds", "(calibration)", "seconds"),
    Entry("eta_aa", "\\eta_{aa}", "all-to-all share of the link bandwidth (by message size)", "(calibration)",
          "ratio"),
    Entry("alpha_aa", "\\alpha_{aa}", "all-to-all latency per call, seconds", "(calibration)", "seconds"),
    # -- serving under load (symcost.serving.workload) --
    Entry("S_in", "S_{in}", "input tokens per request (ISL)", "(--isl)", "length"),
    Entry("S_out", "S_{out}", "output tokens per request (OSL)", "(--osl)", "length"),
    Entry("C_req", "C_{req}", "requests in flight in all, closed loop (benchmark_serving/aiperf --concurrency)",
          "(--concurrency)"),
    Entry("lambda_r", "\\lambda_{r}", "request arrival rate per replica, requests/s, Poisson (open loop)",
          "(--request-rate / N_dp)", "ratio"),
    Entry("t_pf", "t_{pf}", "step: prefill chunk of G prompts of S_in tokens (step_formula, B = G, T = S_in)",
          "(step_formula)", "seconds"),
    Entry("t_dc", "t_{dc}", "step: decode of B sequences at context S_in + S_out/2 (step_formula)", "(step_formula)",
          "seconds"),
    Entry("t_ad", "t_{ad}", "decode attention of the rows riding along a prefill step (step_formula's attention "
          "term)", "(step_formula)", "seconds"),
    Entry("t_p1", "t_{p1}", "step: prefill of one prompt of S_in tokens (step_formula, B = 1)", "(step_formula)",
          "seconds"),
    Entry("t_pr", "t_{pr}", "step: prefill of the last, partial group of prompts of a prefill-only cycle (SGLang: "
          "step_formula, B = the remainder r, T = S_in)", "(step_formula)", "seconds"),
    Entry("a_acc", "a_{acc}", "speculative decoding: acceptance rate of one draft token", "(--accept-rate)", "ratio"),
    Entry("n_d", "n_{d}", "speculative decoding: draft tokens per step (the model's MTP modules)", "(config: MTP layers)"),
    # -- training: activation bytes --
    Entry("b_a", "b_{a}", "bytes per activation element (compute dtype)", "(--act-dtype)", "bytes"),
    # -- parallel layouts, serving and training (symcost.model.parallel) --
    Entry("N_dp", "N_{dp}", "data-parallel size (serving: attention data-parallel replicas)", "(--dp)"),
    Entry("N_tp", "N_{tp}", "tensor-parallel size", "(--tp)"),
    Entry("N_pp", "N_{pp}", "pipeline-parallel stages", "(--pp)"),
    Entry("N_ep", "N_{ep}", "expert-parallel factor: a routed-expert layer is split over N_tp·N_ep ranks "
          "(serving with expert parallelism: N_ep = N_dp, vLLM's EP size N_tp·N_dp; without: 1)",
          "(--ep: training N_ep, serving N_tp·N_ep)"),
    Entry("N_cp", "N_{cp}", "context-parallel size", "(--cp)"),
    Entry("N_sh", "N_{sh}", "HSDP shard group: data-parallel ranks one copy of the states is sharded over",
          "(--hsdp-shard)"),
    Entry("m_mb", "m_{mb}", "micro-batches per step (gradient accumulation)",
          "(global batch / (micro-batch × dp))"),
)

#: the assumptions of a kind: counts, lengths and bytes are positive integers; calibration ratios and
#: seconds are positive reals; a switch is 0 or 1
_ASSUME = {"ratio": {"positive": True, "real": True}, "seconds": {"positive": True, "real": True},
           "switch": {"integer": True, "nonnegative": True}}

_SYMBOLS: dict[str, sympy.Symbol] = {
    e.name: sympy.Symbol(e.name, **_ASSUME.get(e.kind, {"integer": True, "positive": True})) for e in TABLE
}
ENTRIES: dict[str, Entry] = {e.name: e for e in TABLE}

#: The namespace formulas are written with: ``sym.d``, ``sym.H_kv``, ...
sym = SimpleNamespace(**_SYMBOLS)

#: LaTeX name of every symbol, for the printer.
def _upright(tex: str) -> str:
    """Multi-letter subscripts are names, set upright: ``d_{ff}`` → ``d_{\\mathrm{ff}}``;
    a single-letter one stays a variable (``H_{q}``)."""
    return re.sub(r"_\{([A-Za-z]{2,})\}", r"_{\\mathrm{\1}}", tex)


LATEX_NAMES: dict[sympy.Symbol, str] = {_SYMBOLS[e.name]: _upright(e.latex) for e in TABLE}


def by_name(name: str) -> sympy.Symbol:
    """The notation symbol called ``name`` (KeyError if there is none)."""
    return _SYMBOLS[name]


def values(**kw: int) -> dict:
    """Symbol values from keyword names of the notation: ``values(d=4096, L=32)`` (``None`` skipped)."""
    return {_SYMBOLS[k]: sympy.Integer(v) for k, v in kw.items() if v is not None}


def names() -> list[str]:
    return [e.name for e in TABLE]


def markdown_table() -> str:
    """The notation as a Markdown table (README and formula sheets are generated from it)."""
    rows = ["| symbol | meaning | config fields |", "| --- | --- | --- |"]
    rows += [f"| `{e.name}` | {e.meaning} | {e.fields} |" for e in TABLE]
    return "\n".join(rows)
