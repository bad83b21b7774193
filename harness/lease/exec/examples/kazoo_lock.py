#!/usr/bin/python3
"""A fencecheck exec client using kazoo's Lock recipe (Debian python3-kazoo) against ZooKeeper.

kazoo's Lock creates an ephemeral sequential znode under the lock path and holds the lock
while its node is the lowest; the node lives as long as the client's session. The
fencing token is the node's sequence number (+1): contenders are served in sequence order,
so each grant's number is higher than every earlier holder's. The session timeout is
the lease TTL: a client stopped for longer loses its session, its node is deleted and
the next contender is granted the lock. kazoo reports that as the LOST state, which this
client forwards as {"event":"lost"}.

Run it with /usr/bin/python3 (Debian's python3-kazoo is installed for that interpreter).
Environment: FENCECHECK_CLIENT, FENCECHECK_LOCK_ADDRS (host:port of every ZooKeeper
server, each through this client's fault proxy), FENCECHECK_TTL_MS (the session
timeout asked for; the server may bound it). Protocol: docs/exec-protocol.md.
"""
import json
import logging
import os
import sys
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
HOSTS = os.environ["FENCECHECK_LOCK_ADDRS"]  # kazoo takes the comma-separated list as is
TTL_S = int(os.environ["FENCECHECK_TTL_MS"]) / 1000.0
LOCK_PATH = "/fencecheck/lock"

out_lock = threading.Lock()
held = threading.Event()  # we hold a grant that has not been released
lost = threading.Event()  # ... and its session ended meanwhile


def emit(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def on_state(state):
    # LOST: the session expired, every ephemeral node of ours (the lock's) is gone.
    if state == KazooState.LOST and held.is_set() and not lost.is_set():
        lost.set()
        emit({"event": "lost"})


zk = KazooClient(hosts=HOSTS, timeout=TTL_S)
zk.add_listener(on_state)
zk.start(timeout=30)
lock = zk.Lock(LOCK_PATH, "client-" + os.environ["FENCECHECK_CLIENT"])


def acquire(rid):
    try:
        ok = lock.acquire(timeout=20 * TTL_S)
    except LockTimeout:
        ok = False
    except KazooException as e:
        return {"id": rid, "ok": False, "error": repr(e), "definite": False}
    if not ok:
        return {"id": rid, "ok": False, "error": "lock busy", "definite": True}
    lost.clear()
    held.set()
    # lock.node is "<uuid>__lock__0000000042": the sequence number, plus 1 (the first
    # node is number 0, and fencecheck reserves 0 for "no token"), is the token.
    return {"id": rid, "ok": True, "token": int(lock.node.rsplit("__", 1)[-1]) + 1}


def release(rid):
    was_lost = lost.is_set()
    held.clear()
    try:
        lock.release()  # removes our node if it still exists
    except KazooException as e:
        return {"id": rid, "ok": False, "error": repr(e), "definite": False}
    if was_lost:
        return {"id": rid, "ok": False, "error": "the session expired: the lock was already gone", "definite": True}
    return {"id": rid, "ok": True}


for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "acquire":
        emit(acquire(req["id"]))
    elif req["op"] == "release":
        emit(release(req["id"]))
    else:
        emit({"id": req["id"], "ok": False, "error": "unknown op", "definite": True})
zk.stop()
zk.close()
