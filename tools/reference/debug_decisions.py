"""Dumps Hugging Face's discrete decisions (indexer top-k per CSA layer, router experts per MoE
layer) and per-layer hidden-state norms for one reference case, to locate engine divergences.

Usage: python3 debug_decisions.py OUT.json SHAPE CASE_INDEX [POS ...]
"""
import json
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import make_vectors as mv  # noqa: E402
from transformers import DeepseekV4ForCausalLM  # noqa: E402


def main():
    out, shape, case = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s = mv.SHAPES[shape]
    model = DeepseekV4ForCausalLM(mv.make_config(s)).to(torch.float32).eval()
    model.load_state_dict(mv.state_dict(s), strict=False)
    seq = mv.sequences(s)[case]
    rec = {"indexer": {}, "router": {}, "layer_out": {}, "index_scores": {}}
    hooks = []
    for il, layer in enumerate(model.model.layers):
        comp = layer.self_attn.compressor
        if comp is not None and hasattr(comp, "indexer"):
            def ih(mod, inp, outp, il=il):
                rec["indexer"][il] = outp[0].tolist()
            hooks.append(comp.indexer.register_forward_hook(ih))
            def sh(mod, inp, outp, il=il):
                rec["index_scores"][il] = outp[0].tolist()
            hooks.append(comp.indexer.scorer.register_forward_hook(sh))
        def rh(mod, inp, outp, il=il):
            rec["router"][il] = outp[2].tolist()
        hooks.append(layer.mlp.gate.register_forward_hook(rh))
        def lh(mod, inp, outp, il=il):
            o = outp[0] if isinstance(outp, tuple) else outp
            rec["layer_out"][il] = o[0].tolist()
        hooks.append(layer.register_forward_hook(lh))
    with torch.no_grad():
        model(input_ids=torch.tensor([seq]), use_cache=False)
    with open(out, "w") as f:
        json.dump(rec, f)


if __name__ == "__main__":
    main()
