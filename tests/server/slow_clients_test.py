#!/usr/bin/env python3
"""tests/server/slow_clients_test.py DS4_SERVER MODEL: the real ds4-server against hostile and
pipelining clients on loopback.

- 100 connections that send their request header one byte per second hold no server thread: while
  they do, /health and a chat completion are answered promptly, several times over; when the
  header deadline (--header-timeout) passes they get 408 and are closed.
- Pipelined requests on one connection (a chat completion, /health, a model lookup) are answered
  in order.
- --max-client-connections bounds one address's connections (503, closed at once), and the place
  is free again once a connection closes.
"""
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time

SERVER, MODEL = sys.argv[1], sys.argv[2]
HEADER_TIMEOUT = 8  # seconds: the slow clients outlast the checks below (sanitizers too), then meet it
# The bound on an answer while 100 slow clients are connected: /health is a few microseconds of
# work, so this is about a blocked server (which would answer after HEADER_TIMEOUT or never),
# not about speed.
HEALTH_WITHIN = 1.0
IDLE_TIMEOUT = 60  # seconds: keep-alive connections held by the limit check stay open
COMPLETION_WITHIN = 5.0  # a 2-token completion of the tiny model, on a loaded CI machine
SLOW = 100
CLIENT_LIMIT = 120  # above SLOW + the checks' own connections, below what the limit test opens

CHAT = json.dumps({"model": "deepseek-chat", "max_tokens": 2,
                   "messages": [{"role": "user", "content": "Hi"}]})


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def start():
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([SERVER, "-m", MODEL, "--port", "0", "-t", "2", "--ctx", "4096",
                             "--header-timeout", str(HEADER_TIMEOUT),
                             "--idle-timeout", str(IDLE_TIMEOUT),
                             "--max-client-connections", str(CLIENT_LIMIT)],
                            stdout=subprocess.PIPE, stderr=err, text=True)
    line = proc.stdout.readline()
    if "listening on http://127.0.0.1:" not in line:
        err.seek(0)
        fail("server did not start: " + line + err.read().decode(errors="replace"))
    return proc, int(line.split("127.0.0.1:")[1].split()[0])


def read_response(sock, deadline):
    """One response (Content-Length bodies only): (status, head, body); status 0 when none."""
    buf = getattr(sock, "_rest", b"")
    while b"\r\n\r\n" not in buf:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            return 0, "", ""
        if not chunk:
            return 0, "", ""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    head = head.decode()
    length = 0
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
    while len(rest) < length:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    sock._rest = rest[length:]
    return int(head.split()[1]), head, rest[:length].decode()


class Conn(socket.socket):
    pass


def connect(port):
    s = Conn(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", port))
    return s


def request(port, method, path, body="", within=COMPLETION_WITHIN):
    s = connect(port)
    data = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    data += f"Content-Length: {len(body)}\r\n\r\n{body}"
    t0 = time.monotonic()
    s.sendall(data.encode())
    status, _, text = read_response(s, t0 + within + 5)
    s.close()
    return status, text, time.monotonic() - t0


def slow_clients(port):
    conns = [connect(port) for _ in range(SLOW)]
    stop = threading.Event()

    def drip():
        text = b"POST /v1/chat/completions HTTP/1.1\r\n"
        i = 0
        while not stop.is_set() and i < len(text):
            for c in conns:
                try:
                    c.send(text[i:i + 1])
                except OSError:
                    pass
            i += 1
            stop.wait(1.0)

    t = threading.Thread(target=drip)
    t.start()
    started = time.monotonic()
    try:
        for _ in range(3):
            status, text, took = request(port, "GET", "/health", within=HEALTH_WITHIN)
            if status != 200 or took > HEALTH_WITHIN:
                fail(f"/health with {SLOW} slow clients: status {status} after {took:.2f} s")
            status, text, took = request(port, "POST", "/v1/chat/completions", CHAT)
            if status != 200 or took > COMPLETION_WITHIN:
                fail(f"a completion with {SLOW} slow clients: status {status} after {took:.2f} s"
                     f": {text[:200]}")
            time.sleep(0.5)
        if time.monotonic() - started >= HEADER_TIMEOUT:
            fail("the checks outlasted the header deadline; they proved nothing")
        # Each slow client now meets the header deadline: a 408, then the connection closes.
        answered = 0
        for c in conns:
            status, _, body = read_response(c, started + HEADER_TIMEOUT + 10)
            if status == 408 and "did not arrive" in body:
                answered += 1
        if answered != SLOW:
            fail(f"{answered} of {SLOW} slow clients got 408 at the header deadline")
    finally:
        stop.set()
        t.join()
        for c in conns:
            c.close()
    print(f"{SLOW} slow clients: /health and completions answered meanwhile; all got 408")


def pipelined(port):
    s = connect(port)
    s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(CHAT)}"
               f"\r\n\r\n{CHAT}GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
               "GET /v1/models/nothing-here HTTP/1.1\r\nHost: x\r\n\r\n").encode())
    deadline = time.monotonic() + 30
    got = [read_response(s, deadline) for _ in range(3)]
    s.close()
    statuses = [g[0] for g in got]
    if statuses != [200, 200, 404] or '"chat.completion"' not in got[0][2] \
            or "model_not_found" not in got[2][2]:
        fail(f"pipelined requests answered {statuses}: {[g[2][:80] for g in got]}")
    print("three pipelined requests answered in order")


def held_connection(port, deadline):
    """A keep-alive connection the server has accepted and counts: it answered a /health on it.
    A 503 means places of connections just closed (the slow clients') are not free yet: retry."""
    while True:
        s = connect(port)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = read_response(s, deadline)
        if status == 200:
            return s
        s.close()
        if status != 503 or time.monotonic() > deadline:
            fail(f"a connection below the limit was answered {status}: {body[:200]}")
        time.sleep(0.1)


def client_limit(port):
    # Each held connection has had a request answered, so the server has accepted and counted it
    # before the next one opens; the idle timeout (IDLE_TIMEOUT) outlasts the check.
    deadline = time.monotonic() + 20
    held = [held_connection(port, deadline) for _ in range(CLIENT_LIMIT)]
    extra = connect(port)
    status, _, body = read_response(extra, time.monotonic() + 10)
    extra.close()
    if status != 503 or "too many open connections from 127.0.0.1" not in body:
        fail(f"connection {CLIENT_LIMIT + 1} from one address: status {status}: {body[:200]}")
    held.pop().close()
    for _ in range(50):
        status, _, _ = request(port, "GET", "/health")
        if status == 200:
            break
        time.sleep(0.1)
    for c in held:
        c.close()
    if status != 200:
        fail(f"a place freed by a closed connection was not reused: {status}")
    print(f"connection {CLIENT_LIMIT + 1} from one address refused with 503; a freed place reused")


def main():
    proc, port = start()
    try:
        slow_clients(port)
        pipelined(port)
        client_limit(port)
        if proc.poll() is not None:
            fail(f"the server exited with {proc.returncode}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


main()
