"""Dev helper (run on the GPU machine): prints what transformers' deepseek_v4 expects -- the config
fields and defaults, and the state-dict keys and shapes of a tiny model -- so the reference
script's name map can be checked against the real module tree."""
import inspect
import json
import sys

import torch
import transformers
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM

print("transformers", transformers.__version__, "torch", torch.__version__)
cfg = DeepseekV4Config()
print(json.dumps(cfg.to_dict(), indent=1, default=str)[:6000])
small = dict(vocab_size=512, hidden_size=256, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=1,
             head_dim=512, qk_rope_head_dim=64, q_lora_rank=64, o_lora_rank=64, o_groups=2,
             moe_intermediate_size=256, n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1,
             num_hash_layers=3, sliding_window=16, index_n_heads=4, index_head_dim=128, index_topk=4,
             compress_ratios=[0, 0, 4, 128, 4, 128])
try:
    c = DeepseekV4Config(**small)
    m = DeepseekV4ForCausalLM(c)
    for k, v in m.state_dict().items():
        print(k, tuple(v.shape), v.dtype)
    print("layer_types", getattr(c, "layer_types", None), "mlp_layer_types", getattr(c, "mlp_layer_types", None))
    print("rope", getattr(c, "rope_parameters", None), getattr(c, "rope_scaling", None))
except Exception as e:  # noqa: BLE001
    print("tiny config failed:", repr(e))
src = inspect.getsourcefile(DeepseekV4ForCausalLM)
print("source", src)
with open(src) as f:
    text = f.read()
open(sys.argv[1], "w").write(text)
cfgsrc = inspect.getsourcefile(DeepseekV4Config)
open(sys.argv[2], "w").write(open(cfgsrc).read())
