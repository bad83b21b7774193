// Package zookeeper is the "zookeeper" lock backend: Debian's ZooKeeper, started by
// fencecheck on loopback (one standalone server, or an ensemble whose peer links pass
// through fault proxies), or an existing ensemble.
//
// The lock is the classic recipe, written here rather than taken from zk.NewLock
// (which hides the znode it created, and with it the token): each Acquire opens its
// own session, creates an ephemeral sequential child of the lock path, and holds the
// lock once its child is the lowest; a waiter watches only the child just below its
// own. The token is the child's czxid (or, as an option, its sequence number).
//
// The lease is lost when the session is: the server expired it, the client was cut
// off from every server for a whole session timeout, or the lock znode was deleted.
// The session timeout is the run's TTL, and a server that would grant another one is
// refused.
package zookeeper
