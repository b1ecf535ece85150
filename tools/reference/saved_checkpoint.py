"""A DeepSeek V4 checkpoint written by transformers itself, and transformers' logits on it.

Run on the GPU machine (its python3 has torch + transformers 5.x), float32 on the CPU:

    python3 tools/reference/saved_checkpoint.py OUT_DIR

Builds DeepseekV4ForCausalLM with dimensions of its own (not one of the engine's test shapes) from
the legacy config keys, fills every parameter and buffer from a seeded torch generator (a uniform
law scaled by fan-in, so activations keep their size and the logits are not flat), and writes
OUT_DIR/ckpt with `save_pretrained` -- the config.json and tensor names that fine-tuned V4
checkpoints are published with (layer_types, mlp_layer_types, compress_rates; official tensor names
under `model.`). It reloads the directory with `from_pretrained` to check that the files are
transformers' own, then records, like make_vectors.py, for a few token sequences: every position's
top-k, the last position's logits and a greedy continuation (OUT_DIR/saved.json,
OUT_DIR/saved.logits.f32), which `ds4-ref-check` compares with the converted GGUF.
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM

SEED = 20261201
TOPK = 8
N_CONTINUE = 16
N_VOCAB = 129280
LAYERS = 5  # sliding, sliding, CSA, HCA, CSA


def ratio(il):
    return 0 if il < 2 else (4 if il % 2 == 0 else 128)


def make_config():
    return DeepseekV4Config(
        vocab_size=N_VOCAB, hidden_size=512, num_hidden_layers=LAYERS, num_attention_heads=6,
        num_key_value_heads=1, head_dim=512, qk_rope_head_dim=64, q_lora_rank=96, o_lora_rank=64,
        o_groups=3, moe_intermediate_size=256, n_routed_experts=12, num_experts_per_tok=3,
        n_shared_experts=1, num_hash_layers=2, routed_scaling_factor=1.5, swiglu_limit=10.0,
        hc_mult=4, hc_sinkhorn_iters=20, hc_eps=1e-6, index_n_heads=64, index_head_dim=128,
        index_topk=6, sliding_window=24, rms_norm_eps=1e-6, rope_theta=10000.0,
        compress_rope_theta=160000.0,
        rope_parameters={"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 65536,
                         "beta_fast": 32.0, "beta_slow": 1.0},
        max_position_embeddings=1048576, compress_ratios=[ratio(i) for i in range(LAYERS)],
        tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, attention_dropout=0.0)


def fill(model, gen):
    """Every parameter and buffer from `gen`: uniform laws, matrices scaled by their fan-in."""
    def uniform(shape, half):
        return (torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1) * half

    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                half = 0.0625 if name.endswith("norm.weight") or "layernorm" in name else 0.5
                base = 1.0 if half == 0.0625 else 0.0
                p.copy_(base + uniform(p.shape, half))
            elif "position_bias" in name:
                p.copy_(uniform(p.shape, 0.25))
            else:
                p.copy_(uniform(p.shape, (3.0 / p.shape[-1]) ** 0.5))
        for name, b in model.named_buffers():
            if name.endswith("tid2eid"):
                n_tok, k = b.shape
                e = model.config.n_routed_experts
                start = torch.randint(0, e, (n_tok, 1), generator=gen)
                b.copy_((start + torch.arange(k).view(1, k)) % e)
            elif name.endswith("e_score_correction_bias"):
                b.copy_(uniform(b.shape, 0.125))


def sequences():
    rng = np.random.default_rng(SEED)
    return [[0] + rng.integers(1000, 100000, size=n - 1).tolist() for n in (7, 48, 300)]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    gen = torch.Generator().manual_seed(SEED)
    model = DeepseekV4ForCausalLM(make_config()).to(torch.float32).eval()
    fill(model, gen)
    ckpt = os.path.join(out, "ckpt")
    model.save_pretrained(ckpt, safe_serialization=True)
    model = DeepseekV4ForCausalLM.from_pretrained(ckpt, torch_dtype=torch.float32).eval()
    record = {"shape": "saved", "seed": SEED, "topk": TOPK, "transformers": transformers.__version__,
              "torch": torch.__version__, "config": json.load(open(os.path.join(ckpt, "config.json"))),
              "cases": []}
    logits_out = []
    with torch.no_grad():
        for seq in sequences():
            ids = torch.tensor([seq], dtype=torch.long)
            logits = model(input_ids=ids, use_cache=False).logits[0].float()
            top = torch.topk(logits, TOPK, dim=-1)
            gen_ids = model.generate(ids, max_new_tokens=N_CONTINUE, do_sample=False, use_cache=True,
                                     pad_token_id=1, eos_token_id=None)
            cont = gen_ids[0, len(seq):].tolist()
            full = model(input_ids=gen_ids[:, :-1], use_cache=False).logits[0]
            steps = full[len(seq) - 1:]
            nocache = steps.argmax(-1).tolist()
            two = torch.topk(steps, 2, dim=-1).values
            logits_out.append(logits[-1].numpy().astype("<f4"))
            record["cases"].append({
                "tokens": seq, "continuation": cont, "continuation_without_cache": nocache,
                "cache_consistent": nocache == cont, "topk_ids": top.indices.tolist(),
                "continuation_top1_margins": [round(float(a - b), 6) for a, b in two.tolist()],
            })
            print("saved", len(seq), "tokens, continuation", cont[:8], "cache-consistent",
                  nocache == cont, "smallest top-1 margin", float((two[:, 0] - two[:, 1]).min()),
                  flush=True)
    with open(os.path.join(out, "saved.json"), "w") as f:
        json.dump(record, f, separators=(",", ":"))
    np.concatenate(logits_out).tofile(os.path.join(out, "saved.logits.f32"))
    print("config.json keys:", sorted(record["config"]), flush=True)


if __name__ == "__main__":
    main()
