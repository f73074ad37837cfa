"""kimi_k3 (Kimi K3): transformers has no class for it, so the reference is SGLang's
``KimiK3LinearForCausalLM`` (python/sglang/srt/models/kimi_k3.py; files and commits in
tests/data/kimi_k3/shape_table.json). The proof:

* parameters, tensor by tensor: every weight of the reference's constructors, transcribed as a shape
  formula of text_config fields with the scope that decides which layers hold it
  (tests/data/kimi_k3/shape_table.json), evaluated on the published config and on random tiny
  configs covering every switch (full/low-rank KDA gate, MLA output gate, q LoRA, latent experts and
  their norm, shared experts, attention residuals, dense prefix and MoE cadence, no experts), and
  compared term by term with symcost's tree for each kind of layer, with the layer counts the
  reference's predicates give;
* attention residuals: the score rows per token (R_ar) against a step-by-step run of
  ``AttnResidual``'s bank counter, and the prefill/decode FLOPs of the score projections;
* the cache: SGLang's per-request state (``KimiLinearStateShape``) and the MLA latent per token;
* bad input: one line naming the field, exit 2.
"""
import ast
import json
import random
from pathlib import Path

import pytest
import sympy

import symcost
from symcost.cli import main
from symcost.core.conventions import Phase
from symcost.core.notation import sym

DATA = Path(__file__).parent / "data" / "kimi_k3"
TABLE = json.loads((DATA / "shape_table.json").read_text())
PUBLISHED = json.loads((DATA / "kimi-k3.config.json").read_text())


# -- the reference's predicates (KimiLinearConfig.is_kda_layer, KimiK3DecoderLayer._is_moe_layer) -------------
def is_kda(tc, l):
    lac = tc.get("linear_attn_config")
    return lac is not None and (l + 1) in lac["kda_layers"]


def is_moe(tc, l):
    return (tc.get("num_experts") is not None and l >= tc.get("first_k_dense_replace", 0)
            and l % tc.get("moe_layer_freq", 1) == 0)


def in_scope(scope, tc, l):
    lac = tc.get("linear_attn_config") or {}
    kda, moe = l is not None and is_kda(tc, l), l is not None and is_moe(tc, l)
    latent = moe and tc.get("routed_expert_hidden_size") is not None
    return {
        "model": l is None, "attn_res_model": l is None and tc.get("attn_res_block_size") is not None,
        "layer": l is not None, "attn_res": l is not None and tc.get("attn_res_block_size") is not None,
        "kda": kda, "kda_full_gate": kda and lac.get("use_full_rank_gate", False),
        "kda_low_rank_gate": kda and not lac.get("use_full_rank_gate", False),
        "mla": l is not None and not kda, "mla_q_lora": l is not None and not kda and tc.get("q_lora_rank") is not None,
        "mla_q_plain": l is not None and not kda and tc.get("q_lora_rank") is None,
        "mla_gate": l is not None and not kda and tc.get("mla_use_output_gate", False),
        "dense": l is not None and not moe, "moe": moe, "moe_buffer": moe, "moe_experts": moe,
        "moe_latent": latent, "moe_latent_norm": latent and tc.get("latent_moe_use_norm", False),
        "moe_shared": moe and (tc.get("num_shared_experts") or 0) > 0,
    }[scope]


def evaluate(expr: str, tc: dict) -> int:
    """A shape formula of the table: integers, config field names (dotted into linear_attn_config), + and *."""
    env = dict(tc, moe_hidden=tc.get("routed_expert_hidden_size") or tc["hidden_size"])

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return env[node.value.id][node.attr]
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            a, b = ev(node.left), ev(node.right)
            return a + b if isinstance(node.op, ast.Add) else a * b
        raise ValueError(f"not a shape formula: {ast.dump(node)}")
    return ev(ast.parse(expr, mode="eval"))


def table_terms(tc, l, buffers=False) -> dict:
    """symcost term -> numel, summed over the table's tensors that layer l (None: the model level) holds."""
    out = {}
    for t in TABLE["tensors"]:
        if (t["scope"] == "moe_buffer") != buffers or not in_scope(t["scope"], tc, l):
            continue
        n = 1
        for dim in t["shape"]:
            n *= evaluate(dim, tc)
        out[t["symcost"]] = out.get(t["symcost"], 0) + n
    return out


def symcost_layer_terms(group, values, which="params") -> dict:
    out = {}
    for c in group.components:
        for name, e in getattr(c, which)().flatten().items():
            out[f"{c.key}/{name}"] = int(sympy.sympify(e).subs(values))
    return out


def group_kind(group) -> tuple[bool, bool]:
    keys = {c.key: type(c).__name__ for c in group.components}
    return "linear_attn" in keys, "MoE" in keys["mlp"]


# -- tiny configs: every switch of the reference -------------------------------------------------------------
def tiny(seed: int) -> dict:
    rng = random.Random(f"kimi_k3-{seed}")
    L = rng.randint(2, 7)
    H, D = rng.choice([1, 2, 3]), rng.choice([4, 8])
    kda = sorted(rng.sample(range(1, L + 1), rng.randint(0, L)))
    moe = rng.random() < 0.8
    tc = {
        "model_type": "kimi_linear", "hidden_size": rng.choice([16, 24, 32]), "vocab_size": rng.randint(50, 120),
        "num_hidden_layers": L, "num_attention_heads": rng.choice([1, 2, 4]),
        "intermediate_size": rng.randint(20, 60), "hidden_act": rng.choice(["silu", "situ"]),
        "activation_situ_beta": 4.0, "activation_situ_linear_beta": rng.choice([None, 25.0]),
        "q_lora_rank": rng.choice([None, 8, 12]), "kv_lora_rank": rng.choice([4, 8]),
        "qk_nope_head_dim": rng.choice([4, 8]), "qk_rope_head_dim": rng.choice([2, 4]), "v_head_dim": rng.choice([4, 6]),
        "mla_use_nope": True, "mla_use_output_gate": rng.random() < 0.7,
        "first_k_dense_replace": rng.choice([0, 1, 2]), "moe_layer_freq": rng.choice([1, 1, 2]),
        "attn_res_block_size": rng.choice([None, 1, 2, 3]),
        "linear_attn_config": None if rng.random() < 0.15 else {
            "kda_layers": kda, "full_attn_layers": [i for i in range(1, L + 1) if i not in kda], "num_heads": H,
            "head_dim": D, "short_conv_kernel_size": rng.choice([2, 3, 4]),
            "use_full_rank_gate": rng.random() < 0.6},
    }
    if moe:
        tc.update(num_experts=rng.choice([2, 4, 6]), num_experts_per_token=rng.choice([1, 2]),
                  num_shared_experts=rng.choice([0, 1, 2]), moe_intermediate_size=rng.randint(8, 24),
                  routed_expert_hidden_size=rng.choice([None, 8, 12]), latent_moe_use_norm=rng.random() < 0.6)
    return {"model_type": "kimi_k3", "architectures": ["KimiK3ForConditionalGeneration"], "text_config": tc}


CASES = [("published", PUBLISHED)] + [(f"tiny-{s}", tiny(s)) for s in range(12)]


@pytest.mark.parametrize("raw", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_parameters_equal_the_reference_tensor_by_tensor(raw):
    tc = raw["text_config"]
    m = symcost.build(json.loads(json.dumps(raw)))
    L = tc["num_hidden_layers"]
    seen_layers = 0
    for g in m.groups:
        kda, moe = group_kind(g)
        layers = [l for l in range(L) if is_kda(tc, l) == kda and is_moe(tc, l) == moe]
        assert int(sympy.sympify(g.count).subs(m.values)) == len(layers), g.name
        seen_layers += len(layers)
        for l in layers:  # every layer of the group holds the same tensors
            assert symcost_layer_terms(g, m.values) == table_terms(tc, l), (g.name, l)
            assert symcost_layer_terms(g, m.values, "buffers") == table_terms(tc, l, buffers=True), (g.name, l)
    assert seen_layers == L
    top = {}
    for c in m.pre + m.post:
        for name, e in c.params().flatten().items():
            top[name] = int(sympy.sympify(e).subs(m.values))
    assert top == table_terms(tc, None)
    everything = sum(table_terms(tc, None).values()) + sum(
        sum(table_terms(tc, l).values()) for l in range(L))
    assert m.params().total_at(m.values) == everything


def bank_rows(L: int, b: int) -> int:
    """Score rows per token of one forward, stepping ``AttnResidual``'s bank as SGLang's decoder does:
    attention side (nvb > 0: nvb + 1 rows), the snapshot on layers l % b == 0, the MLP side, the output."""
    nvb = rows = 0
    for l in range(L):
        if nvb:
            rows += nvb + 1
        if l % b == 0:
            nvb += 1
        rows += nvb + 1
    return rows + nvb + 1


@pytest.mark.parametrize("raw", [c for _, c in CASES if c["text_config"].get("attn_res_block_size")],
                         ids=[i for i, c in CASES if c["text_config"].get("attn_res_block_size")])
def test_attention_residual_rows_and_flops(raw):
    tc = raw["text_config"]
    m = symcost.build(json.loads(json.dumps(raw)))
    R = bank_rows(tc["num_hidden_layers"], tc["attn_res_block_size"])
    assert m.values[sym.R_ar] == R
    d = tc["hidden_size"]
    for ph, rows in ((Phase(kind="prefill"), 3 * 7), (Phase(kind="decode"), 3)):
        got = m.flops(ph)["attn_res_scores"].subs({**m.values, sym.B: 3, sym.T: 7})
        assert got == 2 * rows * R * d


@pytest.mark.parametrize("raw", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_cache_is_sglangs_state_and_the_mla_latent(raw):
    tc = raw["text_config"]
    m = symcost.build(json.loads(json.dumps(raw)))
    lac = tc.get("linear_attn_config") or {}
    B, T = 2, 11
    want = 0
    for l in range(tc["num_hidden_layers"]):
        if is_kda(tc, l):  # KimiLinearStateShape.create: 3 conv states [H·D, K − 1] and [H, D, D]
            H, D, K = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
            want += B * (3 * H * D * (K - 1) + H * D * D)
        else:  # the MLA latent: kv_lora_rank + qk_rope_head_dim per token
            want += B * T * (tc["kv_lora_rank"] + tc["qk_rope_head_dim"])
    assert m.cache().total_at({**m.values, sym.B: B, sym.T: T}) == want


def test_published_config_counts_and_notes():
    """The published text_config: 93 layers (69 KDA, 24 MLA), 92 MoE layers; the total is the table's sum
    (the test above), and the vision tower is named as left out."""
    m = symcost.build(json.loads(json.dumps(PUBLISHED)))
    assert m.n_layers() == 93
    assert any("vision tower" in n for n in m.notes)
    assert m.active_params().total_at(m.values) < m.params().total_at(m.values)


@pytest.mark.parametrize("change,field", [
    (lambda tc: tc.update(hidden_act="gelu"), "hidden_act"),
    (lambda tc: tc["linear_attn_config"].pop("num_heads"), "linear_attn_config.num_heads"),
    (lambda tc: tc.update(kv_lora_rank=None), "kv_lora_rank"),
    (lambda tc: tc.update(num_experts_per_token=1000), "num_experts_per_token"),
    (lambda tc: tc["linear_attn_config"].update(kda_layers="1,2"), "linear_attn_config.kda_layers"),
    (lambda tc: tc.update(hidden_size=0), "hidden_size"),
], ids=["act", "kda-heads", "mla-rank", "top-k", "kda-list", "hidden"])
def test_bad_input_names_the_field(change, field, tmp_path, capsys):
    raw = json.loads(json.dumps(PUBLISHED))
    change(raw["text_config"])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    assert main(["params", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and field in err[0], err
    assert captured.out == "" and "Traceback" not in captured.err


ODD = [None, True, False, 0, -1, 1, 2, 10**30, 1.5, "x", [], {}, [1, 2], {"a": 1}]


def test_mutated_configs_give_counts_or_one_line():
    """The fuzz suite's rule (tests/test_config_fuzz.py) for this family, which tests/tiny does not hold:
    a mutated config gives non-negative integer counts or one SymcostError line, nothing else."""
    rng = random.Random("kimi_k3-fuzz")
    for _ in range(300):
        raw = tiny(rng.randint(0, 40)) if rng.random() < 0.8 else json.loads(json.dumps(PUBLISHED))
        tc = raw["text_config"]
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.15:
                raw["text_config"] = rng.choice(ODD)
                break
            lac = tc.get("linear_attn_config")
            if rng.random() < 0.3 and isinstance(lac, dict):
                lac[rng.choice(list(lac) + ["x"])] = rng.choice(ODD)
            else:
                tc[rng.choice(list(tc))] = rng.choice(ODD)
        try:
            m = symcost.build(raw)
        except symcost.core.errors.SymcostError as e:
            assert "\n" not in str(e)
            continue
        at = {**m.values, sym.B: 1, sym.T: 5}
        p, a = m.params().total_at(m.values), m.active_params().total_at(m.values)
        assert type(p) is int and 0 <= a <= p
        assert m.cache().total_at(at) >= 0 and m.flops(Phase(kind="decode")).total_at(at) >= 0
