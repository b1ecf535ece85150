#!/usr/bin/env python3
"""tools/cuda/server_drive.py: drives a running ds4-server for bench/server.md (GPU machine).

Standard library only (the GPU machine has no npm). Each subcommand sends real requests over
loopback, reads the SSE stream as a client does, and prints one JSON line of timings:

  chat URL PROMPT_FILE [MAX_TOKENS] [CHARS]
      one streaming /v1/chat/completions request (stream_options.include_usage) with the first
      CHARS characters of PROMPT_FILE as the user turn: time to first token (first content or
      reasoning delta), decode tokens/s after it, usage (prompt / cached / completion tokens)
  toolrt URL
      an OpenAI tool-call round trip (the server runs with --test-forced-output making the model
      call get_weather, then answer): request 1 with the tool declared, request 2 with the call
      and its result sent back; cached tokens of request 2
  anthropic URL BODY1 [BODY2]
      replays Anthropic Messages bodies captured from the real Claude Code (request 1, and
      request 2 = its tool-result turn); the tool_use id of BODY2 is replaced by the one this
      server returned for request 1, as Claude Code itself would send it; MAX_TOKENS (in the
      environment) caps each body's max_tokens
  health URL [PID]
      waits (up to 600 s, or until process PID is gone) until GET /health answers, prints the
      wait

Times are wall-clock seconds measured by this client (time.monotonic).
"""
import json
import os
import sys
import time
import urllib.request


def post_stream(url, path, body, headers=None):
    """POSTs body, yields (t, event_name, data) per SSE data line; t since the request was sent."""
    h = {"Content-Type": "application/json", "Authorization": "Bearer local"}
    h.update(headers or {})
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers=h)
    t0 = time.monotonic()
    event = None
    with urllib.request.urlopen(req, timeout=1800) as r:
        for raw in r:
            line = raw.decode("utf-8").rstrip("\r\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                yield time.monotonic() - t0, event, json.loads(data)


def rate(n_tokens, t_first, t_last):
    return (n_tokens - 1) / (t_last - t_first) if n_tokens > 1 and t_last > t_first else None


def chat(url, messages, max_tokens, tools=None):
    body = {"model": "deepseek-v4-flash", "messages": messages, "max_tokens": max_tokens,
            "stream": True, "stream_options": {"include_usage": True}}
    if tools:
        body["tools"] = tools
    first = last = None
    usage, calls, text = None, {}, ""
    for t, _, d in post_stream(url, "/v1/chat/completions", body):
        if d.get("usage"):
            usage = d["usage"]
        for c in d.get("choices", []):
            delta = c.get("delta", {})
            if delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"):
                first = first if first is not None else t
                last = t
            text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(tc["index"], {"id": None, "name": None, "arguments": ""})
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function", {})
                slot["name"] = fn.get("name") or slot["name"]
                slot["arguments"] += fn.get("arguments") or ""
    n = usage["completion_tokens"] if usage else 0
    return {"ttft_s": first, "total_s": last, "decode_tps": rate(n, first or 0, last or 0),
            "usage": usage, "tool_calls": [calls[k] for k in sorted(calls)], "text": text}


def cmd_chat(url, prompt_file, max_tokens="256", chars="0"):
    with open(prompt_file, encoding="utf-8") as f:
        text = f.read()
    if int(chars) > 0:
        text = text[: int(chars)]
    r = chat(url, [{"role": "user", "content": text}], int(max_tokens))
    r.pop("text")
    print(json.dumps({"what": "chat", "chars": len(text), **r}))


WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather forecast for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]


def cmd_toolrt(url):
    msgs = [{"role": "user", "content": "What will the weather be in Paris for the next 3 days?"}]
    r1 = chat(url, msgs, 256, WEATHER)
    call = r1["tool_calls"][0]
    msgs.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": call["id"], "type": "function",
         "function": {"name": call["name"], "arguments": call["arguments"]}}]})
    msgs.append({"role": "tool", "tool_call_id": call["id"],
                 "content": json.dumps({"forecast": ["sun", "rain", "sun"]})})
    r2 = chat(url, msgs, 64, WEATHER)
    for r in (r1, r2):
        r.pop("text")
    print(json.dumps({"what": "toolrt", "first": r1, "second": r2}))


def anthropic(url, body):
    first = last = None
    usage, tool_ids = {}, []
    for t, ev, d in post_stream(url, "/v1/messages", body, {"anthropic-version": "2023-06-01"}):
        if ev == "message_start":
            usage.update(d["message"].get("usage", {}))
        elif ev == "content_block_start" and d["content_block"]["type"] == "tool_use":
            tool_ids.append(d["content_block"]["id"])
        elif ev == "content_block_delta":
            first = first if first is not None else t
            last = t
        elif ev == "message_delta":
            usage.update(d.get("usage", {}))
    n = usage.get("output_tokens", 0)
    return {"ttft_s": first, "total_s": last, "decode_tps": rate(n, first or 0, last or 0),
            "usage": usage, "tool_use_ids": tool_ids}


def cmd_anthropic(url, body1, body2=None):
    cap = int(os.environ.get("MAX_TOKENS", "0"))

    def capped(body):
        if cap:
            body["max_tokens"] = min(body.get("max_tokens", cap), cap)
        return body

    with open(body1, encoding="utf-8") as f:
        b1 = capped(json.load(f))
    r1 = anthropic(url, b1)
    out = {"what": "anthropic", "first": r1}
    if body2:
        with open(body2, encoding="utf-8") as f:
            text = f.read()
        old = [b["id"] for m in json.loads(text)["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_use"]
        if old and r1["tool_use_ids"]:
            text = text.replace(old[-1], r1["tool_use_ids"][0])
        out["second"] = anthropic(url, capped(json.loads(text)))
    print(json.dumps(out))


def cmd_health(url, pid=None):
    t0 = time.monotonic()
    while time.monotonic() - t0 < 600:
        if pid and not os.path.exists(f"/proc/{pid}"):
            sys.exit(f"server process {pid} exited before answering /health")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                print(json.dumps({"what": "health", "wait_s": time.monotonic() - t0,
                                  "health": json.loads(r.read())}))
                return
        except OSError:
            time.sleep(0.5)
    sys.exit("server did not answer /health in 600 s")


if __name__ == "__main__":
    cmds = {"chat": cmd_chat, "toolrt": cmd_toolrt, "anthropic": cmd_anthropic,
            "health": cmd_health}
    if len(sys.argv) < 3 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])
