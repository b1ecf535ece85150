"""Reference vectors from Hugging Face transformers' deepseek_v4, for the engine's correctness gates.

Run on the GPU machine (its python3 has torch + transformers 5.17); everything runs in float32 on
the CPU, deterministically:

    python3 tools/reference/make_vectors.py OUT_DIR

For each test shape (tiny, small -- the same dimensions as src/model/shape.cpp) it builds
DeepseekV4ForCausalLM configured like the real checkpoint's config.json (YaRN on the compressed
layers), fills every parameter with the synthetic weights of `ds4-gguf synth --quant f32 --seed 1`
(the value law in docs/synth.md, regenerated here in numpy, bit-identical), and records for several
token sequences: the full logits at the last position, the top-k (id, logit) at every position, and
a 32-token greedy continuation. The engine regenerates the same weights, so matching these vectors
checks the engine's whole forward pass against an implementation nobody here wrote.

Output per shape: SHAPE.json (config, sequences, top-k, continuations, environment) and
SHAPE.logits.f32 (float32 little-endian, the last-position logits of each sequence in order).
"""
import json
import math
import os
import sys

import numpy as np
import torch
import transformers
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM

SEED = 1
TOPK = 8
N_CONTINUE = 32
GOLDEN = np.uint64(0x9E3779B97F4A7C15)

SHAPES = {
    # name: (layers, width, heads, out groups, q lora, o lora, experts, used, expert ffn, window,
    #        indexer heads, indexer top-k)
    "tiny": dict(n_layer=6, n_embd=256, n_head=4, n_out_group=2, n_lora_q=64, n_lora_o=64, n_expert=8,
                 n_expert_used=2, n_ff_exp=256, n_swa=16, n_indexer_head=64, indexer_top_k=4),
    "small": dict(n_layer=8, n_embd=1024, n_head=8, n_out_group=2, n_lora_q=256, n_lora_o=256, n_expert=32,
                  n_expert_used=6, n_ff_exp=512, n_swa=128, n_indexer_head=64, indexer_top_k=64),
}
N_VOCAB = 129280
N_HASH = 3
HC = 4


def ratio(il):
    return 0 if il < 2 else (4 if il % 2 == 0 else 128)


# ---- the synthetic value law (docs/synth.md) ----
def tensor_key(name, seed):
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h ^ ((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)


def element_bits(key, idx):
    z = np.uint64(key) + (idx + np.uint64(1)) * GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def fan_in_scale(fan_in):
    target = math.sqrt(3.0 / fan_in)
    return float(2.0 ** math.floor(math.log2(target) + 0.5))


def law(role, ne):
    if role == "embedding":
        return 0.0, 1.0
    if role in ("matrix", "expert", "router", "hcfn"):
        return 0.0, fan_in_scale(ne[0])
    return {"norm": (1.0, 0.0625), "hcbase": (0.0, 0.5), "hcscale": (0.5, 0.125), "sinks": (0.0, 1.0),
            "ape": (0.0, 0.25), "bias": (0.0, 0.125)}[role]


def values(name, ne, role):
    """float32 array of the tensor in torch layout (reversed ne)."""
    n = int(np.prod(ne))
    key = tensor_key(name, SEED)
    idx = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = element_bits(key, idx)
    u = (z >> np.uint64(40)).astype(np.int64) - (1 << 23)
    r = ((2 * u + 1).astype(np.float32)) * np.float32(1.0 / 16777216.0)
    center, scale = law(role, ne)
    v = np.float32(center) + r * np.float32(scale)
    return v.reshape(tuple(reversed(ne)))


def token_experts(name, n_used, n_expert):
    key = tensor_key(name, SEED)
    tokens = np.arange(N_VOCAB, dtype=np.uint64)
    with np.errstate(over="ignore"):
        start = (element_bits(key, tokens) >> np.uint64(32)) % np.uint64(n_expert)
    k = np.arange(n_used, dtype=np.uint64)
    return ((start[:, None] + k[None, :]) % np.uint64(n_expert)).astype(np.int64)


# ---- cross-check against a GGUF written by `ds4-gguf synth --quant f32 --seed 1` ----
def read_gguf_f32(path):
    """Minimal GGUF v3 reader: {name: float32/int32 array in torch layout} for F32/I32 tensors."""
    import struct
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return vals

    def string():
        nonlocal pos
        (n,) = take("Q")
        s = data[pos:pos + n].decode()
        pos += n
        return s

    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip_value(t):
        nonlocal pos
        if t == 8:
            string()
        elif t == 9:
            et, n = take("IQ")
            for _ in range(n):
                skip_value(et)
        else:
            pos += sizes[t]

    magic, version, n_tensors, n_kv = take("IIQQ")
    assert magic == 0x46554747 and version == 3
    for _ in range(n_kv):
        string()
        (t,) = take("I")
        skip_value(t)
    infos = []
    for _ in range(n_tensors):
        name = string()
        (nd,) = take("I")
        ne = take("Q" * nd)
        t, off = take("IQ")
        infos.append((name, ne, t, off))
    base = (pos + 31) // 32 * 32
    out = {}
    for name, ne, t, off in infos:
        n = int(np.prod(ne))
        if t == 0:
            out[name] = np.frombuffer(data, dtype="<f4", count=n, offset=base + off).reshape(tuple(reversed(ne)))
        elif t == 26:
            out[name] = np.frombuffer(data, dtype="<i4", count=n, offset=base + off).reshape(tuple(reversed(ne)))
    return out


def verify_against_gguf(sd, path):
    """Every weight handed to HF must equal the C++ synthesizer's bytes exactly."""
    g = read_gguf_f32(path)
    rev = {}
    for gname, arr in g.items():
        rev[gname] = arr
    checked = 0
    for gname, arr in g.items():
        if gname.endswith("ffn_gate_exps.weight") or gname.endswith("ffn_up_exps.weight"):
            continue  # fused in HF; checked below
        if gname not in GGUF_TO_HF and gname.endswith("exp_probs_b.bias"):
            continue  # a hash layer's selection bias: in the published layout, never read, not in HF
        hf = GGUF_TO_HF[gname]
        want = sd[hf].numpy()
        assert want.shape == arr.shape and np.array_equal(want.astype(arr.dtype), arr), gname
        checked += 1
    for hf, t in sd.items():
        if hf.endswith("experts.gate_up_proj"):
            g_prefix = HF_TO_GGUF_PREFIX[hf]
            fused = np.concatenate([rev[g_prefix + "ffn_gate_exps.weight"], rev[g_prefix + "ffn_up_exps.weight"]], axis=1)
            assert np.array_equal(t.numpy(), fused), hf
            checked += 2
    return checked


GGUF_TO_HF = {}
HF_TO_GGUF_PREFIX = {}


# ---- config and state dict ----
def make_config(s):
    return DeepseekV4Config(
        vocab_size=N_VOCAB, hidden_size=s["n_embd"], num_hidden_layers=s["n_layer"],
        num_attention_heads=s["n_head"], num_key_value_heads=1, head_dim=512, qk_rope_head_dim=64,
        q_lora_rank=s["n_lora_q"], o_lora_rank=s["n_lora_o"], o_groups=s["n_out_group"],
        moe_intermediate_size=s["n_ff_exp"], n_routed_experts=s["n_expert"],
        num_experts_per_tok=s["n_expert_used"], n_shared_experts=1, num_hash_layers=N_HASH,
        routed_scaling_factor=1.5, swiglu_limit=10.0, hc_mult=HC, hc_sinkhorn_iters=20, hc_eps=1e-6,
        index_n_heads=s["n_indexer_head"], index_head_dim=128, index_topk=s["indexer_top_k"],
        sliding_window=s["n_swa"], rms_norm_eps=1e-6, rope_theta=10000.0, compress_rope_theta=160000.0,
        rope_parameters={"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 65536,
                         "beta_fast": 32.0, "beta_slow": 1.0},
        max_position_embeddings=1048576, compress_ratios=[ratio(i) for i in range(s["n_layer"])],
        tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, attention_dropout=0.0,
    )


def state_dict(s):
    D, F, E = s["n_embd"], s["n_ff_exp"], s["n_expert"]
    sd = {}

    def put(gguf, hf, ne, role):
        sd[hf] = torch.from_numpy(values(gguf, ne, role))
        GGUF_TO_HF[gguf] = hf

    put("token_embd.weight", "model.embed_tokens.weight", [D, N_VOCAB], "embedding")
    put("output_norm.weight", "model.norm.weight", [D], "norm")
    put("output.weight", "lm_head.weight", [D, N_VOCAB], "matrix")
    put("output_hc_fn.weight", "model.hc_head.hc_fn", [HC * D, HC], "hcfn")
    put("output_hc_base.weight", "model.hc_head.hc_base", [HC], "hcbase")
    put("output_hc_scale.weight", "model.hc_head.hc_scale", [1], "hcscale")
    mix = 2 * HC + HC * HC
    for il in range(s["n_layer"]):
        g, h = f"blk.{il}.", f"model.layers.{il}."
        for sub, hsub in (("attn", "attn_hc"), ("ffn", "ffn_hc")):
            put(f"{g}hc_{sub}_fn.weight", f"{h}{hsub}.fn", [HC * D, mix], "hcfn")
            put(f"{g}hc_{sub}_scale.weight", f"{h}{hsub}.scale", [3], "hcscale")
            put(f"{g}hc_{sub}_base.weight", f"{h}{hsub}.base", [mix], "hcbase")
        a = h + "self_attn."
        put(g + "attn_norm.weight", h + "input_layernorm.weight", [D], "norm")
        put(g + "attn_q_a.weight", a + "q_a_proj.weight", [D, s["n_lora_q"]], "matrix")
        put(g + "attn_q_a_norm.weight", a + "q_a_norm.weight", [s["n_lora_q"]], "norm")
        put(g + "attn_q_b.weight", a + "q_b_proj.weight", [s["n_lora_q"], s["n_head"] * 512], "matrix")
        put(g + "attn_kv.weight", a + "kv_proj.weight", [D, 512], "matrix")
        put(g + "attn_kv_a_norm.weight", a + "kv_norm.weight", [512], "norm")
        put(g + "attn_sinks.weight", a + "sinks", [s["n_head"]], "sinks")
        hpg = s["n_head"] // s["n_out_group"]
        put(g + "attn_output_a.weight", a + "o_a_proj.weight", [hpg * 512, s["n_out_group"] * s["n_lora_o"]], "matrix")
        put(g + "attn_output_b.weight", a + "o_b_proj.weight", [s["n_out_group"] * s["n_lora_o"], D], "matrix")
        r = ratio(il)
        if r:
            w = (2 if r == 4 else 1) * 512
            c = a + "compressor."
            put(g + "attn_compressor_ape.weight", c + "position_bias", [w, r], "ape")
            put(g + "attn_compressor_kv.weight", c + "kv_proj.weight", [D, w], "matrix")
            put(g + "attn_compressor_gate.weight", c + "gate_proj.weight", [D, w], "matrix")
            put(g + "attn_compressor_norm.weight", c + "kv_norm.weight", [512], "norm")
        if r == 4:
            i = a + "compressor.indexer."
            put(g + "indexer.attn_q_b.weight", i + "q_b_proj.weight", [s["n_lora_q"], s["n_indexer_head"] * 128], "matrix")
            put(g + "indexer.proj.weight", i + "scorer.weights_proj.weight", [D, s["n_indexer_head"]], "matrix")
            put(g + "indexer_compressor_ape.weight", i + "position_bias", [256, 4], "ape")
            put(g + "indexer_compressor_kv.weight", i + "kv_proj.weight", [D, 256], "matrix")
            put(g + "indexer_compressor_gate.weight", i + "gate_proj.weight", [D, 256], "matrix")
            put(g + "indexer_compressor_norm.weight", i + "kv_norm.weight", [128], "norm")
        m = h + "mlp."
        put(g + "ffn_norm.weight", h + "post_attention_layernorm.weight", [D], "norm")
        put(g + "ffn_gate_inp.weight", m + "gate.weight", [D, E], "router")
        if il < N_HASH:
            sd[m + "gate.tid2eid"] = torch.from_numpy(
                token_experts(g + "ffn_gate_tid2eid.weight", s["n_expert_used"], E))
            GGUF_TO_HF[g + "ffn_gate_tid2eid.weight"] = m + "gate.tid2eid"
        else:
            put(g + "exp_probs_b.bias", m + "gate.e_score_correction_bias", [E], "bias")
        gate = values(g + "ffn_gate_exps.weight", [D, F, E], "expert")
        up = values(g + "ffn_up_exps.weight", [D, F, E], "expert")
        sd[m + "experts.gate_up_proj"] = torch.from_numpy(np.concatenate([gate, up], axis=1))
        HF_TO_GGUF_PREFIX[m + "experts.gate_up_proj"] = g
        put(g + "ffn_down_exps.weight", m + "experts.down_proj", [F, D, E], "expert")
        for part, hp in (("gate", "gate_proj"), ("up", "up_proj")):
            put(f"{g}ffn_{part}_shexp.weight", f"{m}shared_experts.{hp}.weight", [D, F], "matrix")
        put(g + "ffn_down_shexp.weight", m + "shared_experts.down_proj.weight", [F, D], "matrix")
    return sd


def sequences(s):
    rng = np.random.default_rng(20261129)
    lengths = [7, 48, 600] if s["n_embd"] <= 256 else [48, 300]
    return [[0] + rng.integers(1000, 100000, size=n - 1).tolist() for n in lengths]


def main():
    out_dir = sys.argv[1]
    # Optional NAME=FILE.gguf arguments: synthesized F32 files whose weights must equal ours.
    ggufs = dict(a.split("=", 1) for a in sys.argv[2:])
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name, s in SHAPES.items():
        cfg = make_config(s)
        model = DeepseekV4ForCausalLM(cfg).to(torch.float32).eval()
        sd = state_dict(s)
        verified = verify_against_gguf(sd, ggufs[name]) if name in ggufs else 0
        print(name, "weights identical to the C++ synthesizer for", verified, "tensors", flush=True)
        missing, unexpected = model.load_state_dict(sd, strict=False)
        missing = [k for k in missing if "inv_freq" not in k]
        assert not missing and not unexpected, (missing, unexpected)
        rope = model.model.rotary_emb
        bufs = {k: v.clone() for k, v in rope.named_buffers()}
        plain = 1.0 / (160000.0 ** (torch.arange(0, 64, 2, dtype=torch.float32) / 64))
        yarn_changed = float((bufs["compress_inv_freq"] - plain).abs().max()) if "compress_inv_freq" in bufs else None
        record = {
            "shape": name, "dims": s, "seed": SEED, "topk": TOPK, "tensors_verified_against_cpp_synth": verified,
            "transformers": transformers.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "config": json.loads(cfg.to_json_string()), "rope_buffers": sorted(bufs),
            "yarn_max_abs_change_vs_plain_rope": yarn_changed, "cases": [],
        }
        logits_out = []
        with torch.no_grad():
            for seq in sequences(s):
                ids = torch.tensor([seq], dtype=torch.long)
                logits = model(input_ids=ids, use_cache=False).logits[0].float()
                top = torch.topk(logits, TOPK, dim=-1)
                gen = model.generate(ids, max_new_tokens=N_CONTINUE, do_sample=False, use_cache=True,
                                     pad_token_id=1, eos_token_id=None)
                cont = gen[0, len(seq):].tolist()
                # HF self-consistency: the cached generation must equal argmax of a full forward.
                full = model(input_ids=gen[:, :-1], use_cache=False).logits[0]
                nocache = full[len(seq) - 1:].argmax(-1).tolist()
                logits_out.append(logits[-1].numpy().astype("<f4"))
                record["cases"].append({
                    "tokens": seq, "continuation": cont, "continuation_without_cache": nocache,
                    "cache_consistent": nocache == cont,
                    "topk_ids": top.indices.tolist(),
                    "topk_logits": [[round(float(x), 6) for x in row] for row in top.values],
                })
                print(name, len(seq), "cont", cont[:8], "consistent", nocache == cont, flush=True)
        with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
            json.dump(record, f, separators=(",", ":"))
        np.concatenate(logits_out).tofile(os.path.join(out_dir, f"{name}.logits.f32"))


if __name__ == "__main__":
    main()
