#!/usr/bin/python3
"""A fencecheck exec client using kazoo's Lock recipe (Debian python3-kazoo) against ZooKeeper.

kazoo's Lock creates an ephemeral sequential znode under the lock path and holds the lock
while its node is the lowest; the node lives as long as the client's session. The
fencing token is the node's czxid, the zxid of the transaction that created it, read
with exists() right after the grant: zxids are handed out by the leader in one total
order (its epoch in the high 32 bits) and logged on a quorum before anyone hears of
them, so a later holder's node always has a higher czxid, across leader changes and
restarts. The node's sequence number is no token: it counts per parent node and starts
again at 0 when the parent is recreated (a container parent, as Curator makes it, is
deleted by the server once it is empty; so is any parent a cleanup job removes), and it
goes negative past 2^31.

The session timeout is the TTL: a client stopped for longer loses its session, its node
is deleted and the next contender is granted the lock. kazoo reports that as the LOST
state (and a dropped connection as SUSPENDED, when the lock may already be gone), which
this client forwards as {"event":"lost"}; so is its node being deleted.

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

from kazoo import version as kazoo_version
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.protocol.states import EventType
from kazoo.retry import KazooRetry, RetryFailedError

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
HOSTS = os.environ["FENCECHECK_LOCK_ADDRS"]  # kazoo takes the comma-separated list as is
TTL_S = int(os.environ["FENCECHECK_TTL_MS"]) / 1000.0
LOCK_PATH = "/fencecheck/lock"

# out_lock orders stdout and guards the grant's state: a grant is answered before any
# lost event about it is written.
out_lock = threading.RLock()
held_node = None  # the lock node of the grant we hold, None when released
lost = False  # ... and it may be gone


# The library and its version, read at run time, for the grants' "library".
LIBRARY = "kazoo " + kazoo_version.__version__


def emit(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def lose(node, why):
    """Report the held grant lost, once; node, if given, must be the held grant's."""
    global lost
    with out_lock:
        if held_node is None or lost or (node is not None and node != held_node):
            return
        lost = True
        print("lost the lock: %s" % why, file=sys.stderr)
        emit({"event": "lost", "reason": why})


def on_state(state):
    # SUSPENDED: the connection dropped, the session may expire meanwhile; LOST: it did,
    # and every ephemeral node of ours (the lock's) is gone.
    if state in (KazooState.SUSPENDED, KazooState.LOST):
        lose(None, "session " + state)


def on_node(event):
    if event.type == EventType.DELETED:
        lose(event.path, "lock node %s deleted" % event.path)


zk = KazooClient(hosts=HOSTS, timeout=TTL_S)
zk.add_listener(on_state)
zk.start(timeout=30)
lock = zk.Lock(LOCK_PATH, "client-" + os.environ["FENCECHECK_CLIENT"])


def acquire(rid):
    global held_node, lost
    try:
        ok = lock.acquire(timeout=20 * TTL_S)
    except LockTimeout:
        ok = False
    except KazooException as e:
        return {"id": rid, "ok": False, "error": repr(e), "definite": False}
    if not ok:
        return {"id": rid, "ok": False, "error": "lock busy", "definite": True}
    node = LOCK_PATH + "/" + lock.node
    try:
        # This grant's own node: its czxid, and a watch that tells us if it is deleted.
        st = retrying(zk.exists, node, watch=on_node)
    except (KazooException, RetryFailedError) as e:
        print("reading the lock node %s: %r" % (node, e), file=sys.stderr)
        st = None
    if st is None:
        release_quietly()
        return {"id": rid, "ok": False, "error": "granted, but the lock node %s could not be read for its czxid" % node}
    with out_lock:
        held_node, lost = node, False
        emit({"id": rid, "ok": True, "token": st.czxid, "library": LIBRARY})
        if zk.state != KazooState.CONNECTED:
            lose(None, "session %s right after the grant" % zk.state)
    return None


def retrying(call, *args, **kwargs):
    """call, retried over a dropped connection for up to 10 TTLs (kazoo raises at once)."""
    r = KazooRetry(max_tries=-1, delay=0.05, max_delay=TTL_S, deadline=10 * TTL_S, sleep_func=zk.handler.sleep_func)
    return r(call, *args, **kwargs)


def release_quietly():
    try:
        lock.release()
    except KazooException as e:
        print("release: %r" % e, file=sys.stderr)


def release(rid):
    global held_node
    with out_lock:
        node, held_node = held_node, None
    if node is None:
        release_quietly()
        return {"id": rid, "ok": False, "error": "not holding the lock", "definite": True}
    try:
        there = retrying(zk.exists, node) is not None
        lock.release()  # removes our node if it still exists
    except (KazooException, RetryFailedError) as e:
        return {"id": rid, "ok": False, "error": repr(e), "definite": False}
    if not there:
        return {"id": rid, "ok": False, "error": "the lock node was already gone (the session expired)", "definite": True}
    return {"id": rid, "ok": True}


for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "acquire":
        answer = acquire(req["id"])
        if answer is not None:  # a grant answered itself
            emit(answer)
    elif req["op"] == "release":
        emit(release(req["id"]))
    else:
        emit({"id": req["id"], "ok": False, "error": "unknown op", "definite": True})
zk.stop()
zk.close()
