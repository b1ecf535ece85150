"""Prints HF's indexer intermediates (query head 0, compressed key 0, head weights) at one
position of one reference case, for the first CSA layer. Usage: debug_indexer.py SHAPE CASE POS"""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import make_vectors as mv  # noqa: E402
from transformers import DeepseekV4ForCausalLM  # noqa: E402

shape, case, pos = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = mv.SHAPES[shape]
model = DeepseekV4ForCausalLM(mv.make_config(s)).to(torch.float32).eval()
model.load_state_dict(mv.state_dict(s), strict=False)
seq = mv.sequences(s)[case]
cap = {}
idx = model.model.layers[2].self_attn.compressor.indexer
idx.scorer.register_forward_hook(lambda m, i, o: cap.update(q=i[0], k=i[1], h=i[2]))
cap2 = {}
idx.register_forward_hook(lambda m, i, o: cap2.update(qres=i[1]))
with torch.no_grad():
    model(input_ids=torch.tensor([seq]), use_cache=False)
    q, k, h = cap["q"][0, pos], cap["k"][0], cap["h"][0, pos]
    w = idx.scorer.weights_proj(h) * idx.scorer.weights_scaling * idx.scorer.softmax_scale
    print("q0", q[0, :4].tolist(), "q0tail", q[0, 64:66].tolist())
    print("k0", k[0, :4].tolist(), "k0tail", k[0, 64:66].tolist())
    print("w", w.tolist())
    print("h", h[:6].tolist())
    attn = model.model.layers[2].self_attn
    print("proj row0", idx.scorer.weights_proj.weight[0, :6].tolist())
    print("qres", cap2["qres"][0, pos, :6].tolist())
