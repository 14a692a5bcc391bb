package maintwatch;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Shared by the JVM applications of the client tier (tests/clients/lettuce, tests/clients/jedis:
 * each Maven project compiles this folder too). What every tier application does around its client: worker threads that call {@code step}
 * until SIGTERM, every failure counted by the exception's simple name, and on SIGTERM one JSON
 * line (operations, errors by name, the library's version) on stdout, as the redis-py and
 * node-redis applications print it.
 */
final class Workload {

    interface Step {
        /** One round of commands; returns how many it made. */
        int run(int worker, long round) throws Exception;
    }

    private final AtomicLong ops = new AtomicLong();
    private final Map<String, Long> errors = new TreeMap<>();
    final AtomicLong shardedMessages = new AtomicLong();
    private volatile boolean stopping;

    synchronized void error(String name) {
        errors.merge(name, 1L, Long::sum);
    }

    boolean stopping() {
        return stopping;
    }

    interface Connect<T> {
        T connect() throws Exception;
    }

    /**
     * The first connection, tried again every 0.5 s until it is made, each failure counted
     * ({@code connect NAME}). Not a maintenance matter: on a loaded machine a cold JVM can take
     * longer than the 1 s timeout over its first handshake, and an application that gave up
     * there would be graded on its start, not on the scenario.
     */
    <T> T firstConnection(Connect<T> connect) throws InterruptedException {
        while (true) {
            try {
                return connect.connect();
            } catch (Exception e) {
                error("connect " + e.getClass().getSimpleName());
                Thread.sleep(500);
            }
        }
    }

    /**
     * Runs {@code workers} threads of {@code step} until SIGTERM, then prints the JSON line (with
     * the sharded messages counted when {@code sharded}) and returns, the threads ended.
     */
    void run(int workers, Step step, String version, boolean sharded) throws InterruptedException {
        Thread[] threads = new Thread[workers];
        for (int w = 0; w < workers; w++) {
            final int worker = w;
            threads[w] = new Thread(() -> loop(worker, step), "work-" + w);
            threads[w].start();
        }
        Thread hook = new Thread(() -> {
            stopping = true;
            for (Thread t : threads) {
                try {
                    // A command in flight ends within its own timeout (1 s, or relaxed).
                    t.join(15_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            System.out.println(json(version, sharded));
            System.out.flush();
        });
        Runtime.getRuntime().addShutdownHook(hook);
        // The threads end when the hook says so; the hook then prints, and the JVM exits.
        for (Thread t : threads) {
            t.join();
        }
    }

    private void loop(int worker, Step step) {
        long round = 0;
        while (!stopping) {
            try {
                ops.addAndGet(step.run(worker, round++));
            } catch (Exception e) {
                error(e.getClass().getSimpleName());
                pause(50);
            }
            pause(10);
        }
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private synchronized String json(String version, boolean sharded) {
        StringBuilder b = new StringBuilder("{\"version\": \"").append(version).append("\", \"ops\": ")
                .append(ops.get());
        if (sharded) {
            b.append(", \"sharded_messages\": ").append(shardedMessages.get());
        }
        b.append(", \"errors\": {");
        String sep = "";
        for (Map.Entry<String, Long> e : errors.entrySet()) {
            b.append(sep).append('"').append(e.getKey()).append("\": ").append(e.getValue());
            sep = ", ";
        }
        return b.append("}}").toString();
    }
}
