// A fencecheck exec client using Apache Curator's InterProcessMutex (Debian
// libcurator-recipes-java, openjdk-17-jdk-headless) against ZooKeeper.
//
// InterProcessMutex creates an ephemeral sequential znode under the lock path (a container
// node Curator creates) and holds the lock while its node is the lowest; the node lives
// as long as the client's session. The fencing token is the node's czxid, the zxid of the
// transaction that created it: zxids are handed out by the leader in one total order
// (its epoch in the high 32 bits) and logged on a quorum before anyone hears of them, so a
// later holder's node always has a higher czxid, across leader changes and restarts. The
// sequence suffix is not a token: it counts per parent, and Curator's container parent is
// deleted by the server once it is empty, so the next grant starts at 0 again.
//
// Curator's advice is followed: a SUSPENDED connection means the lock may be gone, so
// SUSPENDED (and LOST) while holding is reported as {"event":"lost"}; so is our node
// being deleted.
//
// Run it through curator_lock.sh, which compiles this file once into a cache folder and
// starts the JVM with the Debian jars. Environment: FENCECHECK_CLIENT,
// FENCECHECK_LOCK_ADDRS (host:port of every ZooKeeper server, each through this client's
// fault proxy), FENCECHECK_TTL_MS (the session timeout asked for). Protocol:
// docs/exec-protocol.md.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryUntilElapsed;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

public final class CuratorLock {
    static final String LOCK_PATH = "/fencecheck/curator-lock";
    static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*(\\d+)");
    static final Pattern OP = Pattern.compile("\"op\"\\s*:\\s*\"([a-z]+)\"");

    /** InterProcessMutex with its own lock node's path in view (getLockPath is protected). */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        /** The lock node this thread's grant created, or null. */
        String node() {
            return getLockPath();
        }
    }

    final Writer out = new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8);
    final CuratorFramework client;
    final Mutex mutex;
    final long ttlMs;
    // Guarded by out: a grant is answered before any lost event about it is written.
    boolean held;
    boolean lost;
    String heldNode;

    CuratorLock(String hosts, long ttlMs) {
        this.ttlMs = ttlMs;
        int ttl = (int) ttlMs;
        client = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(ttl)
                .connectionTimeoutMs(Math.max(ttl, 1000))
                // Every ZooKeeper call retries a lost connection for up to 10 TTLs.
                .retryPolicy(new RetryUntilElapsed((int) (10 * ttlMs), Math.max(ttl / 10, 10)))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                loseIfHeld(null, "connection " + state);
            }
        });
        mutex = new Mutex(client, LOCK_PATH);
    }

    void emit(String line) throws IOException {
        out.write(line);
        out.write('\n');
        out.flush();
    }

    /** Reports the held lease lost (once); node, if set, must be the held lease's node. */
    void loseIfHeld(String node, String why) {
        synchronized (out) {
            if (!held || lost || (node != null && !node.equals(heldNode))) {
                return;
            }
            lost = true;
            System.err.println("lost the lock: " + why);
            try {
                emit("{\"event\":\"lost\"}");
            } catch (IOException e) {
                System.err.println("writing the lost event: " + e);
            }
        }
    }

    String acquire(long id) throws IOException {
        boolean ok;
        try {
            ok = mutex.acquire(20 * ttlMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            return refusal(id, e.toString(), false);
        }
        if (!ok) { // timed out: Curator deleted our node itself
            return refusal(id, "lock busy", true);
        }
        String node = mutex.node();
        Stat st;
        try {
            // The czxid of this grant's own node, and a watch that tells us if it is deleted.
            Watcher w = (WatchedEvent ev) -> {
                if (ev.getType() == Watcher.Event.EventType.NodeDeleted) {
                    loseIfHeld(ev.getPath(), "lock node " + ev.getPath() + " deleted");
                }
            };
            st = client.checkExists().usingWatcher(w).forPath(node);
        } catch (Exception e) {
            st = null;
            System.err.println("reading the lock node " + node + ": " + e);
        }
        if (st == null) {
            releaseQuietly();
            return refusal(id, "granted, but the lock node " + node + " could not be read for its czxid", false);
        }
        synchronized (out) {
            held = true;
            lost = false;
            heldNode = node;
            emit("{\"id\":" + id + ",\"ok\":true,\"token\":" + st.getCzxid() + ",\"library\":" + quote(LIBRARY) + "}");
            if (!client.getZookeeperClient().isConnected()) {
                loseIfHeld(null, "connection suspended right after the grant");
            }
        }
        return null;
    }

    String release(long id) {
        synchronized (out) {
            held = false;
        }
        if (!mutex.isOwnedByCurrentThread()) {
            return refusal(id, "not holding the lock", true);
        }
        String node = mutex.node();
        Stat st;
        try {
            st = client.checkExists().forPath(node);
            mutex.release(); // deletes our node (guaranteed: retried in the background)
        } catch (Exception e) {
            releaseQuietly();
            return refusal(id, e.toString(), false);
        }
        if (st == null) {
            return refusal(id, "the lock node was already gone (the session expired)", true);
        }
        return "{\"id\":" + id + ",\"ok\":true}";
    }

    void releaseQuietly() {
        try {
            if (mutex.isOwnedByCurrentThread()) {
                mutex.release();
            }
        } catch (Exception e) {
            System.err.println("release: " + e);
        }
    }

    /** Curator and its version, read at run time, for the grants' "library". */
    static final String LIBRARY = "Apache Curator " + curatorVersion();

    /**
     * The curator-recipes jar's version: its Maven pom.properties, else the jar's manifest,
     * else the version in the jar file's real name (curator-recipes-5.4.0.jar), else "unknown".
     */
    static String curatorVersion() {
        try (java.io.InputStream in = InterProcessMutex.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
            if (in != null) {
                java.util.Properties p = new java.util.Properties();
                p.load(in);
                String v = p.getProperty("version");
                if (v != null && !v.isBlank()) {
                    return v.trim();
                }
            }
        } catch (IOException e) {
            System.err.println("reading curator-recipes' pom.properties: " + e);
        }
        String v = InterProcessMutex.class.getPackage().getImplementationVersion();
        if (v != null && !v.isBlank()) {
            return v.trim();
        }
        try {
            java.nio.file.Path jar = java.nio.file.Paths.get(InterProcessMutex.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toRealPath();
            Matcher m = Pattern.compile("curator-recipes-(\\d[^/]*)\\.jar").matcher(jar.getFileName().toString());
            if (m.matches()) {
                return m.group(1);
            }
        } catch (Exception e) {
            System.err.println("finding curator-recipes' jar: " + e);
        }
        return "unknown";
    }

    static String refusal(long id, String error, boolean definite) {
        return "{\"id\":" + id + ",\"ok\":false,\"error\":" + quote(error) + ",\"definite\":" + definite + "}";
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    void serve() throws IOException {
        client.start();
        try {
            if (client.blockUntilConnected((int) Math.max(10 * ttlMs, 10000), TimeUnit.MILLISECONDS)) {
                int granted = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
                if (granted != ttlMs) {
                    System.err.println("asked for a " + ttlMs + " ms session timeout, the server granted " + granted + " ms");
                }
            }
        } catch (Exception e) {
            System.err.println("connecting: " + e);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null;) {
            Matcher id = ID.matcher(line);
            Matcher op = OP.matcher(line);
            if (!id.find() || !op.find()) {
                System.err.println("not a request: " + line);
                continue;
            }
            long rid = Long.parseLong(id.group(1));
            String answer;
            switch (op.group(1)) {
                case "acquire":
                    answer = acquire(rid);
                    break;
                case "release":
                    answer = release(rid);
                    break;
                default:
                    answer = refusal(rid, "unknown op " + op.group(1), true);
            }
            if (answer != null) {
                synchronized (out) {
                    emit(answer);
                }
            }
        }
        // stdin closed: fencecheck is done. Closing the session must not hold the exit up.
        Thread halt = new Thread(() -> {
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                return;
            }
            Runtime.getRuntime().halt(0);
        });
        halt.setDaemon(true);
        halt.start();
        releaseQuietly();
        client.close();
        System.exit(0);
    }

    public static void main(String[] args) throws IOException {
        new CuratorLock(System.getenv("FENCECHECK_LOCK_ADDRS"), Long.parseLong(System.getenv("FENCECHECK_TTL_MS"))).serve();
    }
}
