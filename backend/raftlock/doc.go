// Package raftlock is the "raft" lock backend: a lock service a team would build itself
// on hashicorp/raft, run as N nodes inside the test process, with a fault-injecting
// transport between the nodes and a JSON-over-HTTP client API per node on 127.0.0.1.
//
// The import path is github.com/fencecheck/fencecheck/backend/raftlock; the package is named raftlock so that
// it does not clash with github.com/hashicorp/raft.
//
//	s, err := raftlock.Start(ctx, raftlock.Config{TTL: 500 * time.Millisecond})
//	defer s.Close()
//	locker, err := s.NewLocker(ctx, 0, proxiedAddrs) // proxiedAddrs[i] reaches node i
//	lease, err := locker.Acquire(ctx)                // lease.Token() = raft log index
//
// # Lock state machine
//
// Commands are acquire{owner, ttl, now}, renew{owner, token, now} and
// release{owner, token, now}. now is stamped by the leader that proposes the command, from
// its node clock (Config.NodeClock); Apply never reads a clock and keeps
// lastNow = max(lastNow, cmd.now), so FSM time never goes back. acquire is granted iff the
// lock is free or now >= expiry; the token is the log index of the committed acquire
// entry and expiry = now + ttl. renew extends to now + ttl iff owner and token match and
// now < expiry. release frees the lock iff owner and token match. Snapshots hold (holder,
// token, expiry, ttl, lastNow). Every applied command is reported to the Service
// (Events, Grants), which also checks that all nodes applied the same command at each
// index (CheckSafety).
//
// # Client API
//
// Every answer is HTTP 200 with a Response body, unless the request is malformed (400):
//
//	POST /acquire {"owner":"client-1.1","ttl_ns":500000000}
//	POST /renew   {"owner":"client-1.1","token":42}
//	POST /release {"owner":"client-1.1","token":42}
//	GET  /state           leader-confirmed read of the lock state
//	GET  /state?local=1   this node's FSM as is (possibly stale: the naive read path)
//
// A node serves a request only as a confirmed leader: it is in the leader state, a
// Barrier has succeeded in its current term, and VerifyLeader has just reached a quorum.
// Otherwise it answers not_leader with the leader's node index (never an address: clients
// reach nodes only through their own proxied addresses, by index). Response.Status: ok |
// busy | refused | not_leader | unavailable (all but ok had no effect) | unknown (the
// command was proposed; ErrLeadershipLost, shutdown or the node's RequestTimeout left its
// outcome open). The Locker turns no-effect answers, refused connections and requests
// that were never completely written into errors wrapping harness.ErrNoEffect, and
// unknown answers, timeouts and connections cut mid-request into errors that do not.
//
// # Faults
//
// Raft links go through a fault table per directed link (Link: pass, drop, delay, stall);
// requests obey (src -> dst), responses (dst -> src). The transport implements pre-vote
// and refuses pipelining, so every AppendEntries passes the table. A stall holds a
// message until the link changes or the RPC's own timeout (Config.RPCTimeout); Crash and
// Close wake every held message, so nothing can deadlock shutdown.
//
// Crash models a process crash with durable storage: the node's client API closes at
// once (its port stays reserved and refuses connections), every message to and from it
// fails, requests it was serving end "unknown"; raft futures it had pending are let
// resolve (within about LeaderLease, as the cut-off node steps down) before raft shuts
// down, because raft never answers some futures after shutdown. Its log, stable and
// snapshot stores survive for Restart. Restart without data is refused (ErrUnsafeRestart).
package raftlock
