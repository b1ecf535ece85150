"""Agreement of the engines' dumps that tools/compat/compat.sh collects (bench/compat.md).

    python3 tools/compat/compare.py WORK_DIR

WORK_DIR holds ENGINE-BACKEND-PROMPT.logits.json (--dump-logits: the last position's full logits
and the prompt's token count) and ENGINE-BACKEND-PROMPT.logprobs.json (--dump-logprobs: a greedy
continuation, the top 128 log-probabilities per step) for ENGINE in {ds4, ours}, BACKEND in {cpu,
cuda}. Per prompt and pair it prints a markdown row:
  - prompt tokens of each side (the chat rendering and tokenizer must agree);
  - relative L2 distance of the last-position logits, and the KL divergence (nats) of the second
    side's softmax from the first's over the full vocabulary;
  - per-step top-1 agreement and mean KL divergence over the greedy steps both sides share (the KL
    over the first side's top 128 tokens, the second side's log-probability of a token outside its
    own top 128 taken as its 128th -- an upper bound on that term);
  - whether the 16-token greedy continuations are identical, and the smallest top-1 margin (logit
    gap between the two best tokens) the first side saw along it.
"""
import json
import math
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def softmax_logs(logits):
    m = max(x for x in logits if x is not None)
    s = sum(math.exp(x - m) for x in logits if x is not None)
    lse = m + math.log(s)
    return [(-math.inf if x is None else x - lse) for x in logits]


def last_position(a, b):
    la, lb = a["logits"], b["logits"]
    num = sum((x - y) ** 2 for x, y in zip(la, lb))
    den = sum(x * x for x in la)
    pa, pb = softmax_logs(la), softmax_logs(lb)
    kld = sum(math.exp(x) * (x - y) for x, y in zip(pa, pb) if x > -50)
    return math.sqrt(num / den), kld


def steps(a, b):
    sa, sb = a["steps"], b["steps"]
    agree, klds, margins = 0, [], []
    shared = 0
    for x, y in zip(sa, sb):
        shared += 1
        agree += x["selected"]["id"] == y["selected"]["id"]
        qa = {t["token"]["id"]: t["logprob"] for t in x["top_logprobs"]}
        qb = {t["token"]["id"]: t["logprob"] for t in y["top_logprobs"]}
        floor = min(qb.values())
        klds.append(sum(math.exp(lp) * (lp - qb.get(i, floor)) for i, lp in qa.items()))
        top = sorted((t["logit"] for t in x["top_logprobs"]), reverse=True)
        margins.append(top[0] - top[1])
        if x["selected"]["id"] != y["selected"]["id"]:
            break  # later steps continue from different tokens
    same = [s["selected"]["id"] for s in sa] == [s["selected"]["id"] for s in sb]
    return agree, shared, sum(klds) / max(1, len(klds)), same, min(margins) if margins else float("nan")


def main():
    work = sys.argv[1]
    prompts = ["p1", "p3", "p2", "r-think", "r-system"]
    pairs = [("ds4-cpu", "ds4-cuda"), ("ds4-cpu", "ours-cpu"), ("ds4-cpu", "ours-cuda"),
             ("ds4-cuda", "ours-cpu"), ("ds4-cuda", "ours-cuda"), ("ours-cpu", "ours-cuda")]
    print("| prompt | A | B | prompt tokens A / B | last-logits rel L2 | last-logits KLD | "
          "top-1 agree (steps) | mean step KLD | greedy 16 | min top-1 margin (A) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in prompts:
        for a, b in pairs:
            la = load(os.path.join(work, f"{a}-{p}.logits.json"))
            lb = load(os.path.join(work, f"{b}-{p}.logits.json"))
            pa = load(os.path.join(work, f"{a}-{p}.logprobs.json"))
            pb = load(os.path.join(work, f"{b}-{p}.logprobs.json"))
            if la is None or lb is None:
                print(f"| {p} | {a} | {b} | missing | | | | | | |")
                continue
            err, kld = last_position(la, lb)
            row = f"| {p} | {a} | {b} | {la['prompt_tokens']} / {lb['prompt_tokens']} | {err:.3g} | {kld:.3g} |"
            if pa is not None and pb is not None:
                agree, shared, skld, same, margin = steps(pa, pb)
                row += f" {agree}/{shared} | {skld:.3g} | {'identical' if same else 'DIFFERENT'} | {margin:.3g} |"
            else:
                row += " missing | | | |"
            print(row)


if __name__ == "__main__":
    main()
