#!/usr/bin/env python3
"""A fencecheck exec client for the naive lock server's HTTP API: the template to copy.

It speaks fencecheck's JSON-lines protocol (docs/exec-protocol.md) on stdin/stdout and
holds the lock the way a real client would: acquire, then renew from a background thread
every TTL/3 until released, and report {"event":"lost"} as soon as a renewal is refused
or the lease ran out without one. Python standard library only.

Environment: FENCECHECK_CLIENT (0-based id), FENCECHECK_LOCK_ADDRS (host:port of the
lock server, through this client's own fault proxy), FENCECHECK_TTL_MS.
"""
import http.client
import json
import os
import sys
import threading
import time

CLIENT = os.environ["FENCECHECK_CLIENT"]
ADDR = os.environ["FENCECHECK_LOCK_ADDRS"].split(",")[0]
TTL_MS = int(os.environ["FENCECHECK_TTL_MS"])
OWNER = "exec-c" + CLIENT
HOST, PORT = ADDR.rsplit(":", 1)

out_lock = threading.Lock()


def emit(obj):
    """One JSON object per line on stdout; the renewer thread writes too."""
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def post(path, body):
    """POST a JSON body; a fresh connection each time (the proxy may have cut the last)."""
    conn = http.client.HTTPConnection(HOST, int(PORT), timeout=max(TTL_MS / 1000.0, 1.0))
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError("%s: HTTP %d: %s" % (path, resp.status, data.decode(errors="replace").strip()))
        return json.loads(data)
    finally:
        conn.close()


class Holder:
    """The lease this client holds, renewed in the background."""

    def __init__(self, token):
        self.token = token
        self.stop = threading.Event()
        self.valid_until = time.monotonic() + TTL_MS / 1000.0
        self.thread = threading.Thread(target=self.renew, daemon=True)
        self.thread.start()

    def renew(self):
        while not self.stop.wait(TTL_MS / 3000.0):
            try:
                ok = post("/renew", {"owner": OWNER, "token": self.token, "ttl_ms": TTL_MS}).get("ok")
            except Exception as e:  # the server may just be slow: retry while the lease lasts
                print("renew failed: %s" % e, file=sys.stderr)
                ok = None
            if ok:
                self.valid_until = time.monotonic() + TTL_MS / 1000.0
            elif ok is False or time.monotonic() >= self.valid_until:
                if not self.stop.is_set():
                    why = "renewal refused" if ok is False else "no renewal confirmed for a TTL"
                    emit({"event": "lost", "reason": why})
                return


holder = None


def acquire(rid):
    global holder
    deadline = time.monotonic() + 20 * TTL_MS / 1000.0
    while True:
        try:
            resp = post("/acquire", {"owner": OWNER, "ttl_ms": TTL_MS})
        except Exception as e:
            if time.monotonic() >= deadline:  # the last try may have been granted
                return {"id": rid, "ok": False, "error": str(e), "definite": False}
            time.sleep(0.01)
            continue
        if resp.get("granted"):
            holder = Holder(resp["token"])
            return {"id": rid, "ok": True, "token": resp["token"]}
        if time.monotonic() >= deadline:  # the server said no: nothing happened
            return {"id": rid, "ok": False, "error": "lock busy", "definite": True}
        time.sleep(0.01)


def release(rid):
    global holder
    h, holder = holder, None
    if h is None:
        return {"id": rid, "ok": False, "error": "not holding the lock", "definite": True}
    h.stop.set()
    try:
        ok = post("/release", {"owner": OWNER, "token": h.token}).get("ok")
    except Exception as e:
        return {"id": rid, "ok": False, "error": str(e), "definite": False}
    if not ok:
        return {"id": rid, "ok": False, "error": "the lease was already gone", "definite": True}
    return {"id": rid, "ok": True}


def main():
    for line in sys.stdin:  # EOF: fencecheck is done with this client
        req = json.loads(line)
        if req["op"] == "acquire":
            emit(acquire(req["id"]))
        elif req["op"] == "release":
            emit(release(req["id"]))
        else:
            emit({"id": req["id"], "ok": False, "error": "unknown op " + req["op"], "definite": True})


if __name__ == "__main__":
    main()
