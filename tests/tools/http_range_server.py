#!/usr/bin/env python3
"""Loopback HTTP file server for tests/tools/download_model_test.sh (standard library only).

Serves the plain files of --dir at /files/NAME; /resolve/main/NAME answers 302 to /files/NAME, the
way Hugging Face redirects to its CDN. Supports GET and HEAD, single byte ranges (bytes=N- and
bytes=N-M, answered 206 with Content-Range), and logs every request as "METHOD PATH RANGE" (RANGE
is "-" without a Range header) to --log. Test knobs:
  --token T           answer 401 unless the request carries "Authorization: Bearer T"
  --cut-after K       on the first GET of each file, send K body bytes and drop the connection
  --head-size-offset D  add D to the Content-Length of HEAD answers for files (a size mismatch)
It binds 127.0.0.1 (port 0 = ephemeral), prints the chosen port on stdout and, with --port-file,
writes it to that file atomically.
"""
import argparse
import http.server
import os
import re
import socket
import socketserver
import sys
import threading
import urllib.parse


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client hanging up mid-body is expected in these tests; keep stderr quiet about it.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def make_handler(opts):
    lock = threading.Lock()
    cut_files = set()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # no default access log on stderr
            pass

        def do_HEAD(self):
            self.serve(head=True)

        def do_GET(self):
            self.serve(head=False)

        def reply(self, status, headers=(), body=b""):
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def serve(self, head):
            rng = self.headers.get("Range")
            with lock, open(opts.log, "a", encoding="utf-8") as log:
                log.write(f"{self.command} {self.path} {rng or '-'}\n")
            if opts.token and self.headers.get("Authorization") != f"Bearer {opts.token}":
                self.reply(401, body=b"unauthorized\n")
                return
            path = urllib.parse.urlsplit(self.path).path
            if path.startswith("/resolve/main/"):
                self.reply(302, [("Location", "/files/" + path[len("/resolve/main/"):])])
                return
            name = urllib.parse.unquote(path[len("/files/"):]) if path.startswith("/files/") else ""
            full = os.path.join(opts.dir, name)
            if "/" in name or name in ("", ".", "..") or not os.path.isfile(full):
                self.reply(404, body=b"not found\n")
                return
            size = os.path.getsize(full)
            start, end, status = 0, size - 1, 200
            if rng:
                m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
                if not m:
                    self.reply(400, body=b"bad range\n")
                    return
                start = int(m.group(1))
                end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
                if start >= size or end < start:
                    self.reply(416, [("Content-Range", f"bytes */{size}")])
                    return
                status = 206
            length = end - start + 1
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(length + (opts.head_size_offset if head else 0)))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if head:
                return
            cut = False
            if opts.cut_after is not None:
                with lock:
                    if name not in cut_files:
                        cut_files.add(name)
                        cut = True
                        length = min(length, opts.cut_after)
            with open(full, "rb") as f:
                f.seek(start)
                while length > 0:
                    chunk = f.read(min(length, 1 << 16))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    length -= len(chunk)
            if cut:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

        def finish(self):
            try:
                super().finish()
            except OSError:
                pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="directory whose files are served")
    parser.add_argument("--log", required=True, help="request log file (appended)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (0 = ephemeral)")
    parser.add_argument("--port-file", help="write the chosen port here")
    parser.add_argument("--token", help="require this bearer token")
    parser.add_argument("--cut-after", type=int, help="drop the first GET of a file after K bytes")
    parser.add_argument("--head-size-offset", type=int, default=0,
                        help="add this to Content-Length in HEAD answers for files")
    opts = parser.parse_args()
    server = Server(("127.0.0.1", opts.port), make_handler(opts))
    port = server.server_address[1]
    print(port, flush=True)
    if opts.port_file:
        tmp = opts.port_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{port}\n")
        os.replace(tmp, opts.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
