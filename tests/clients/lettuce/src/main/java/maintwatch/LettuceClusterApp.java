package maintwatch;

import java.time.Duration;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.pubsub.RedisPubSubAdapter;

/**
 * An unmodified Lettuce cluster application, for {@code maintwatch simulate --scenario
 * oss-cluster --grade -- java -cp CP maintwatch.LettuceClusterApp [--sharded]}.
 *
 * <p>As Lettuce's README shows for Redis Cluster: {@code RedisClusterClient.create} with the seed
 * from MAINTWATCH_SIM_HOST / _PORT (the host name resolves through the JVM's resolver, which
 * {@code simulate} points at its own DNS), one connection, its synchronous API, every option at
 * its default (no periodic or adaptive topology refresh: Lettuce follows -MOVED by itself). A 1 s
 * timeout as the other applications have. Three threads of SET / GET on 1,000 keys spread over
 * the slots ({@link #KEYS}) until SIGTERM; then one JSON line. With --sharded, also a sharded
 * subscription (SSUBSCRIBE) to a channel whose slot the oss-cluster scenario moves (what
 * sharded-resubscribe judges); the client matrix runs without it.
 */
public final class LettuceClusterApp {

    /**
     * How many keys the threads go through, together in turn: app:key:0 to app:key:999, spread
     * over the whole slot space as a real application's are. Six of them fall in the slots that
     * oss-cluster and cascading-smigrated move (8892-8991), so a client's stale slot map shows on
     * the wire (a -MOVED, a redirect) and smigrated-refresh is decided.
     */
    private static final int KEYS = 1000;

    private static final int WORKERS = 3;

    public static void main(String[] args) throws Exception {
        String version = RedisClient.class.getPackage().getImplementationVersion();
        boolean sharded = java.util.Arrays.asList(args).contains("--sharded");
        RedisURI seed = RedisURI.builder()
                .withHost(System.getenv("MAINTWATCH_SIM_HOST"))
                .withPort(Integer.parseInt(System.getenv("MAINTWATCH_SIM_PORT")))
                .withTimeout(Duration.ofSeconds(1))
                .build();
        RedisClusterClient cluster = RedisClusterClient.create(seed);
        Workload work = new Workload();
        StatefulRedisClusterConnection<String, String> connection = work.firstConnection(cluster::connect);
        RedisAdvancedClusterCommands<String, String> sync = connection.sync();
        if (sharded) {
            subscribe(cluster, work);
        }
        work.run(WORKERS, (worker, round) -> {
            String key = "app:key:" + (round * WORKERS + worker) % KEYS;
            sync.set(key, "v");
            sync.get(key);
            return 2;
        }, version, sharded);
    }

    /** SSUBSCRIBE to a channel in the slots oss-cluster moves (8892-8991). */
    private static void subscribe(RedisClusterClient cluster, Workload work) {
        String channel = null;
        for (int i = 0; channel == null; i++) {
            int slot = SlotHash.getSlot("app:sharded:" + i);
            if (slot >= 8892 && slot <= 8991) {
                channel = "app:sharded:" + i;
            }
        }
        try {
            StatefulRedisClusterPubSubConnection<String, String> pubsub = cluster.connectPubSub();
            pubsub.addListener(new RedisPubSubAdapter<String, String>() {

                @Override
                public void smessage(String shardChannel, String message) {
                    work.shardedMessages.incrementAndGet();
                }
            });
            pubsub.sync().ssubscribe(channel);
        } catch (Exception e) {
            work.error("pubsub " + e.getClass().getSimpleName());
        }
    }
}
