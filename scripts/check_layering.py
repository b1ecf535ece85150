#!/usr/bin/env python3
"""Include-layering lint (design/architecture.md §5.2).

Every `#include "X/..."` in src/<module>/ must name the module itself or one of the modules it may
depend on; public headers (include/ds4/...) are open to everyone. Apps and tools have their own
allow-lists. Exits 1 and lists each offending line.
"""
import pathlib
import re
import sys

# Direct dependencies; the check uses their transitive closure.
DEPS = {
    "base": [],
    "gguf": ["base"],
    "quant": ["gguf"],
    "tokenizer": ["gguf"],
    "model": ["quant", "backend"],
    "backend": ["quant"],
    "kv": ["model"],
    "sampling": ["base"],
    "chat": ["tokenizer"],
    "tools": ["model", "tokenizer", "quant"],  # tools/ (synth, convert, split): offline, never linked by the engine
    "engine": ["model", "kv", "backend", "tokenizer", "sampling", "chat"],
    "gen": ["chat", "sampling"],
    "decode": ["engine", "gen", "sampling"],  # a request's decode loop: a session + the generation core
    "serve": ["engine", "chat", "gen", "decode"],
    "api": ["serve"],
    "http": ["api"],
    "agent": ["engine", "chat", "gen", "decode", "base"],  # tools, prompt and turn loop; never serve
    "tui": ["base"],  # ds4-agent's terminal UI: keys, line editor, footer text, screen
    "dist": ["base"],  # distributed inference: wire, routes, ZeroMQ data plane (engine: include/ds4)
    "eval": ["base"],  # ds4-eval's model-free core: questions, extraction, traces, baseline; never engine
}
# Apps see the public API plus the serving stack; the GGUF tool is a tool (§5.2: tools may use
# gguf, quant, model and tokenizer), and ds4-steer drives its tool (tools/steer) over the engine.
APP_DEPS = {"default": ["serve", "api", "http", "agent", "gen", "decode", "tui", "dist", "eval"], "gguf": ["model", "tokenizer", "quant", "chat", "tools"], "steer": ["tools", "chat", "tokenizer"]}


def closure(mods):
    seen, stack = set(), list(mods)
    while stack:
        m = stack.pop()
        if m not in seen:
            seen.add(m)
            stack.extend(DEPS.get(m, []))
    return seen


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    inc = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')
    errors = []
    for path in sorted(root.glob("src/**/*")) + sorted(root.glob("apps/**/*")) + sorted(root.glob("bench/**/*")):
        if path.suffix not in {".h", ".hpp", ".cpp", ".cu", ".cuh", ".inc"}:
            continue
        rel = path.relative_to(root).parts
        if rel[0] == "src":
            module = rel[1]
            if module not in DEPS:
                errors.append(f"{path.relative_to(root)}: module '{module}' is not in the layering table")
                continue
            allowed = closure([module])
        elif rel[0] == "apps":
            allowed = closure(APP_DEPS.get(rel[1], APP_DEPS["default"]) + ["base"]) | {"apps"}
        else:  # bench/: micro-benchmarks of kernels
            allowed = closure(["quant", "backend", "base", "tokenizer"])
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = inc.match(line)
            if m and m.group(1) != "ds4" and m.group(1) not in allowed:
                errors.append(f"{path.relative_to(root)}:{n}: includes '{m.group(1)}/' (allowed: {sorted(allowed)})")
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
