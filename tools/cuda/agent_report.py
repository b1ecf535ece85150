#!/usr/bin/env python3
"""tools/cuda/agent_report.py OUT: bench/agent.md's figures from agent_bench.sh's traces.

Reads OUT/agent-cold.jsonl, OUT/agent-warm.jsonl (ds4-agent --trace files: every line has "t",
seconds since the trace opened, i.e. after the model file was loaded), OUT/agent-bench.csv
(ds4-bench at the same frontier) and OUT/agent-files.txt (sizes after the save); prints one
CSV row per figure: name,value,unit.
"""
import csv
import json
import os
import sys


def events(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return [json.loads(line) for line in f if line.strip()]


def after(evs, i, pred):
    for j in range(i + 1, len(evs)):
        if pred(evs[j]):
            return j
    return None


def first(evs, pred, start=-1):
    return after(evs, start, pred)


def main():
    out = sys.argv[1]
    rows = []
    cold = events(os.path.join(out, "agent-cold.jsonl"))
    warm = events(os.path.join(out, "agent-warm.jsonl"))

    r = first(cold, lambda e: e["event"] == "ready")
    sysp = first(cold, lambda e: e["event"] == "prompt" and e["what"] == "system")
    rows += [("system_prompt_tokens", cold[sysp]["tokens"], "tokens"),
             ("cold_ready_after_load", cold[r]["t"], "s"),
             ("cold_ready_evaluated", cold[r]["evaluated"], "tokens")]
    u1 = first(cold, lambda e: e["event"] == "prompt" and e["what"] == "user")
    f1 = after(cold, u1, lambda e: e["event"] == "first_token")
    rows.append(("cold_first_token_after_submit", round(cold[f1]["t"] - cold[u1]["t"], 3), "s"))
    rows.append(("cold_first_token_after_load", cold[f1]["t"], "s"))
    u2 = after(cold, u1, lambda e: e["event"] == "prompt" and e["what"] == "user")
    pre = [cold[j] for j in range(u2 + 1, len(cold)) if cold[j]["event"] == "prefill"]
    pre = [p for p in pre if p["total"] == pre[0]["total"]]
    f2 = after(cold, u2, lambda e: e["event"] == "first_token")
    span = pre[-1]["t"] - cold[u2]["t"]
    rows += [("long_prompt_tokens", cold[u2]["tokens"], "tokens"),
             ("long_prompt_prefill_rate", round(pre[-1]["done"] / span, 1), "tokens/s"),
             ("long_prompt_first_token_after_submit", round(cold[f2]["t"] - cold[u2]["t"], 3), "s")]
    saved = first(cold, lambda e: e["event"] == "note" and e["text"].startswith("saved session"))
    last_round = max(j for j in range(saved) if cold[j]["event"] == "round")
    rows += [("session_tokens", int(cold[saved]["text"].split("(")[1].split()[0]), "tokens"),
             ("save_seconds", round(cold[saved]["t"] - cold[last_round]["t"], 3), "s")]

    r = first(warm, lambda e: e["event"] == "ready")
    rows += [("warm_ready_after_load", warm[r]["t"], "s"),
             ("warm_ready_evaluated", warm[r]["evaluated"], "tokens"),
             ("warm_from_checkpoint", int(warm[r]["from_checkpoint"]), "bool")]
    u1 = first(warm, lambda e: e["event"] == "prompt" and e["what"] == "user")
    f1 = after(warm, u1, lambda e: e["event"] == "first_token")
    rows.append(("warm_first_token_after_submit", round(warm[f1]["t"] - warm[u1]["t"], 3), "s"))
    rows.append(("warm_first_token_after_load", warm[f1]["t"], "s"))
    notes = [(j, e) for j, e in enumerate(warm) if e["event"] == "note"]
    sw = [(j, e) for j, e in notes if e["text"].startswith("switched to session")]
    st = [(j, e) for j, e in notes if e["text"].startswith("stripped session")]
    j1, e1 = sw[0]
    prev = max(j for j in range(j1) if warm[j]["event"] in ("round", "note", "ready"))
    rows += [("switch_seconds", round(e1["t"] - warm[prev]["t"], 3), "s"),
             ("switch_evaluated", e1["evaluated"] - warm[prev].get("evaluated", e1["evaluated"]),
              "tokens")]
    if len(sw) > 1 and st:
        j2, e2 = sw[1]
        rows += [("rebuild_from_text_seconds", round(e2["t"] - st[0][1]["t"], 3), "s"),
                 ("rebuild_evaluated", e2["evaluated"] - st[0][1]["evaluated"], "tokens")]
    try:
        with open(os.path.join(out, "agent-bench.csv"), encoding="utf-8") as f:
            b = list(csv.DictReader(line for line in f if not line.startswith("#")))
        if b:
            rows.append(("ds4_bench_prefill_rate", b[0].get("prefill_tps", ""), "tokens/s"))
            rows.append(("ds4_bench_frontier", b[0].get("frontier", ""), "tokens"))
    except OSError:
        pass
    try:  # the session files' sizes right after the save (agent_bench.sh lists them)
        with open(os.path.join(out, "agent-files.txt"), encoding="utf-8") as f:
            for line in f:
                size, name = line.split()
                kind = "sysprompt" if name.endswith("sysprompt.kv") else "session"
                rows.append((kind + "_file_bytes", int(size), "bytes"))
    except OSError:
        pass
    print("name,value,unit")
    for name, value, unit in rows:
        print(f"{name},{value},{unit}")


if __name__ == "__main__":
    main()
