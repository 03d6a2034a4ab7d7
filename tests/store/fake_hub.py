#!/usr/bin/env python3
"""A loopback stand-in for the HuggingFace hub, for the store's tests and benchmark (stdlib only).

Serves ROOT/<repo>/<file> at /<repo>/resolve/main/<file> (and at /<repo>/<file>, a plain folder base) with
HTTP Range support. Binds 127.0.0.1 on an ephemeral port and prints the port on stdout.

Faults are read from the JSON control file (--control, re-read on every request):
  {"rules": [{"match": "params_shard_1.bin", "kind": "...", "times": 1, ...}, ...]}
The first rule whose "match" is a substring of the path and whose "times" is not used up applies
(times -1 = forever). Kinds:
  drop      send headers for the full body, then "after_bytes" bytes, then cut the connection
  truncate  declare a Content-Length "cut" bytes short of the truth and send that much (a lying server)
  status    answer with HTTP "status" (404, 500, ...) and a small error body
  stall     send headers and "after_bytes" bytes, then sleep "delay_s" seconds before continuing
  corrupt   flip one byte of the body
Every request is appended to the log file (--log) as a JSON line: {"path", "range", "status", "fault"}.
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
USED = {}  # rule key -> times applied


def load_rules(path):
    if not path or not os.path.exists(path):
        return []
    try:
        with open(path) as f:
            return json.load(f).get("rules", [])
    except (OSError, ValueError):
        return []


def pick_fault(path, control):
    with LOCK:
        for i, rule in enumerate(load_rules(control)):
            if rule.get("match", "") not in path:
                continue
            key = json.dumps(rule, sort_keys=True) + str(i)
            times = rule.get("times", 1)
            if times >= 0 and USED.get(key, 0) >= times:
                continue
            USED[key] = USED.get(key, 0) + 1
            return rule
    return None


def parse_range(header, size):
    """(start, end) inclusive for 'bytes=a-' or 'bytes=a-b'; None if absent; 'bad' if unsatisfiable."""
    if not header or not header.startswith("bytes="):
        return None
    first = header[len("bytes="):].split(",")[0].strip()
    a, _, b = first.partition("-")
    if a == "":
        return "bad"
    start = int(a)
    end = int(b) if b else size - 1
    if start >= size:
        return "bad"
    return start, min(end, size - 1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, status, fault):
        if not self.server.log_path:
            return
        entry = {"path": self.path, "range": self.headers.get("Range"), "status": status,
                 "fault": fault.get("kind") if fault else None}
        with LOCK, open(self.server.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def local_file(self):
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        if "resolve" in parts:
            i = parts.index("resolve")
            parts = parts[:i] + parts[i + 2:]
        if any(p in ("..", ".") for p in parts):
            return None
        return os.path.join(self.server.root, *parts)

    def send_error_body(self, status, fault):
        body = ("error %d\n" % status).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.record(status, fault)

    def do_GET(self):
        fault = pick_fault(self.path, self.server.control)
        if fault and fault["kind"] == "status":
            return self.send_error_body(int(fault["status"]), fault)
        path = self.local_file()
        if not path or not os.path.isfile(path):
            return self.send_error_body(404, fault)
        size = os.path.getsize(path)
        rng = parse_range(self.headers.get("Range"), size)
        if rng == "bad":
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % size)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return self.record(416, fault)
        start, end = rng if rng else (0, size - 1)
        status = 206 if rng else 200
        self.send_body(path, start, end, size, status, fault)

    def send_body(self, path, start, end, size, status, fault):
        length = end - start + 1
        kind = fault["kind"] if fault else None
        declared = length - int(fault.get("cut", 1)) if kind == "truncate" else length
        self.send_response(status)
        self.send_header("Content-Length", str(max(declared, 0)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        self.record(status, fault)
        with open(path, "rb") as f:
            f.seek(start)
            try:
                self.stream(f, declared if kind == "truncate" else length, fault)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    def stream(self, f, length, fault):
        kind = fault["kind"] if fault else None
        after = int(fault.get("after_bytes", 0)) if fault else 0
        sent = 0
        flipped = False
        while sent < length:
            if kind in ("drop", "stall") and sent >= after:
                if kind == "drop":
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                time.sleep(float(fault.get("delay_s", 5)))
                kind = None
            limit = min(1 << 16, length - sent)
            if kind in ("drop", "stall"):
                limit = min(limit, max(after - sent, 1))
            chunk = f.read(limit)
            if not chunk:
                break
            if kind == "corrupt" and not flipped:
                chunk = bytes([chunk[0] ^ 0xFF]) + chunk[1:]
                flipped = True
            self.wfile.write(chunk)
            sent += len(chunk)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--control", default="")
    ap.add_argument("--log", default="")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.root, server.control, server.log_path = args.root, args.control, args.log
    os.write(1, b"%d\n" % server.server_address[1])  # one write: the reader may close after the first line
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
