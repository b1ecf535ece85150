"""Rotary tables of transformers' deepseek_v4, for the engine's RoPE/YaRN test.

Run on the GPU machine: python3 tools/reference/rope_vectors.py OUT.json
Builds the rotary embedding of a model configured like the real config.json (YaRN on compressed
layers) and records, for the "main" (sliding layers) and "compress" (compressed layers) rope types,
the float32 bit patterns of inv_freq and cos/sin at positions from 0 to 1,048,575.
"""
import json
import struct
import sys

import torch
import transformers
from transformers import DeepseekV4Config
from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4RotaryEmbedding

cfg = DeepseekV4Config(
    vocab_size=512, hidden_size=256, num_hidden_layers=4, num_attention_heads=4, head_dim=512,
    qk_rope_head_dim=64, rope_theta=10000.0, compress_rope_theta=160000.0,
    rope_parameters={"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 65536,
                     "beta_fast": 32.0, "beta_slow": 1.0},
    max_position_embeddings=1048576, compress_ratios=[0, 0, 4, 128])
rope = DeepseekV4RotaryEmbedding(cfg)
positions = [0, 1, 2, 3, 7, 127, 128, 1000, 4095, 65535, 65536, 100003, 262143, 524287, 1048575]
bits = lambda t: [struct.unpack("<I", struct.pack("<f", float(v)))[0] for v in t.reshape(-1).tolist()]
out = {"transformers": transformers.__version__, "torch": torch.__version__, "positions": positions, "types": {}}
x = torch.zeros(1, 1, dtype=torch.float32)
for kind in ("main", "compress"):
    cos, sin = rope(x, torch.tensor([positions], dtype=torch.long), layer_type=kind)
    out["types"][kind] = {
        "rope_parameters": cfg.rope_parameters[kind],
        "attention_scaling": getattr(rope, f"{kind}_attention_scaling"),
        "inv_freq_bits": bits(getattr(rope, f"{kind}_inv_freq")),
        "cos_bits": bits(cos[0]),
        "sin_bits": bits(sin[0]),
    }
json.dump(out, open(sys.argv[1], "w"), indent=1)
print("ok", {k: v["attention_scaling"] for k, v in out["types"].items()})
