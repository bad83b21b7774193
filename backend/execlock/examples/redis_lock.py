#!/usr/bin/python3
"""A fencecheck exec client using redis-py's Lock (Debian python3-redis) against Redis.

redis-py's Lock is SET key <random value> NX PX <ttl>, renewed here by reacquire() every
TTL/3 from a background thread, released by its compare-and-delete script. It hands out
no fencing token: the random value says who holds the lock, not in which order grants
came, so no resource can refuse an older holder with it. This client says so in every
grant ({"no_token": "..."}, docs/exec-protocol.md): fencecheck then judges it as it does
its own tokenless backends (redis-notoken, redlock) and refuses a run against a resource
that fences on tokens.

With --token incr it shows what it takes to get one: do_acquire runs the same SET NX PX
and an INCR of a counter key in one Lua script, so the counter is bumped atomically with
the grant and is a token (as long as Redis keeps the counter: not across a restart
without persistence).

A refused renewal, or a TTL without a confirmed one, is reported as {"event":"lost"}.

Run it with /usr/bin/python3 (Debian's python3-redis is installed for that interpreter).
Environment: FENCECHECK_CLIENT, FENCECHECK_LOCK_ADDRS (host:port of Redis, through this
client's fault proxy), FENCECHECK_TTL_MS.
"""
import argparse
import json
import os
import sys
import threading
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError

NO_TOKEN = ("redis-py's Lock is SET NX PX with a random value, which says who holds the "
            "lock but not in which order grants came")

parser = argparse.ArgumentParser()
parser.add_argument("--token", choices=["none", "incr"], default="none",
                    help="none: redis-py's Lock as it is; incr: a counter bumped in the acquire script")
ARGS = parser.parse_args()

ADDR = os.environ["FENCECHECK_LOCK_ADDRS"].split(",")[0]
TTL_MS = int(os.environ["FENCECHECK_TTL_MS"])
HOST, PORT = ADDR.rsplit(":", 1)
LOCK_NAME = "fencecheck:lock"

# SET NX PX and the token in one step: a grant without its token cannot be observed.
ACQUIRE_INCR = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
"""


class IncrLock(redis.lock.Lock):
    """redis-py's Lock whose acquire also returns a counter (self.fence)."""

    fence = None

    def do_acquire(self, token):
        n = self.redis.eval(ACQUIRE_INCR, 2, self.name, self.name + ":fence", token, int(self.timeout * 1000))
        if n:
            self.fence = int(n)
            return True
        return False


r = redis.Redis(host=HOST, port=int(PORT), socket_timeout=max(TTL_MS / 1000.0, 1.0),
                socket_connect_timeout=max(TTL_MS / 1000.0, 1.0))
lock_class = IncrLock if ARGS.token == "incr" else redis.lock.Lock
# thread_local=False: the renewing thread must see the value acquire() stored.
lock = lock_class(r, LOCK_NAME, timeout=TTL_MS / 1000.0, sleep=0.01, thread_local=False)
out_lock = threading.Lock()
stop_renewing = threading.Event()


# The library and its version, read at run time, for the grants' "library".
LIBRARY = "redis-py " + redis.__version__


def emit(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def renew(stop):
    valid_until = time.monotonic() + TTL_MS / 1000.0
    while not stop.wait(TTL_MS / 3000.0):
        try:
            lock.reacquire()
            valid_until = time.monotonic() + TTL_MS / 1000.0
            continue
        except LockNotOwnedError:
            pass  # the key expired (or is someone else's): the lease is gone
        except (LockError, redis.RedisError) as e:
            print("reacquire failed: %s" % e, file=sys.stderr)
            if time.monotonic() < valid_until:
                continue
        if not stop.is_set():
            emit({"event": "lost", "reason": "the key is gone or another owner's, or no renewal confirmed for a TTL"})
        return


def acquire(rid):
    global stop_renewing
    try:
        ok = lock.acquire(blocking=True, blocking_timeout=20 * TTL_MS / 1000.0)
    except redis.RedisError as e:
        return {"id": rid, "ok": False, "error": str(e), "definite": False}
    if not ok:
        return {"id": rid, "ok": False, "error": "lock busy", "definite": True}
    stop_renewing = threading.Event()
    threading.Thread(target=renew, args=(stop_renewing,), daemon=True).start()
    if ARGS.token == "incr":
        return {"id": rid, "ok": True, "token": lock.fence, "library": LIBRARY}
    return {"id": rid, "ok": True, "no_token": NO_TOKEN, "library": LIBRARY}


def release(rid):
    stop_renewing.set()
    try:
        lock.release()
    except LockNotOwnedError:
        return {"id": rid, "ok": False, "error": "the lock was no longer ours", "definite": True}
    except LockError as e:
        return {"id": rid, "ok": False, "error": str(e), "definite": True}
    except redis.RedisError as e:
        return {"id": rid, "ok": False, "error": str(e), "definite": False}
    return {"id": rid, "ok": True}


for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "acquire":
        emit(acquire(req["id"]))
    elif req["op"] == "release":
        emit(release(req["id"]))
    else:
        emit({"id": req["id"], "ok": False, "error": "unknown op", "definite": True})
