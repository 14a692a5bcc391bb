package maintwatch;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;

/**
 * An unmodified Lettuce application for the robustness set ({@code maintwatch certify
 * --scenarios robustness -- java -cp CP maintwatch.LettuceRobustApp}): the tier app's SET / GET /
 * INCR threads on one shared connection, plus the shapes a frame may meet a connection in, each
 * as Lettuce's README and reference show it:
 * <ul>
 * <li>a thread blocked in BLPOP (0.5 s at a time) on a connection of its own (a blocking command
 * holds the connection it runs on);
 * <li>a thread running MULTI / EXEC on a connection of its own (a transaction is per
 * connection);
 * <li>a RESP3 pub/sub connection ({@code connectPubSub}, a listener, {@code subscribe}), which the
 * MULTI / EXEC thread publishes to.
 * </ul>
 * The 1 s timeout is the tier app's. Until SIGTERM; then one JSON line.
 */
public final class LettuceRobustApp {

    public static void main(String[] args) throws Exception {
        String version = RedisClient.class.getPackage().getImplementationVersion();
        if (args.length > 0 && args[0].equals("--version")) {
            System.out.println(version.split("/")[0]);
            return;
        }
        RedisURI uri = RedisURI.builder()
                .withHost(System.getenv("MAINTWATCH_SIM_HOST"))
                .withPort(Integer.parseInt(System.getenv("MAINTWATCH_SIM_PORT")))
                .withTimeout(Duration.ofSeconds(1))
                .build();
        RedisClient client = RedisClient.create(uri);
        Workload work = new Workload();
        StatefulRedisConnection<String, String> shared = work.firstConnection(client::connect);
        StatefulRedisConnection<String, String> blocking = work.firstConnection(client::connect);
        StatefulRedisConnection<String, String> tx = work.firstConnection(client::connect);
        StatefulRedisPubSubConnection<String, String> pubsub = work.firstConnection(client::connectPubSub);
        AtomicLong messages = new AtomicLong();
        pubsub.addListener(new RedisPubSubAdapter<String, String>() {
            @Override
            public void message(String channel, String message) {
                messages.incrementAndGet();
            }
        });
        pubsub.sync().subscribe("app:channel");
        RedisCommands<String, String> sync = shared.sync();
        RedisCommands<String, String> blpop = blocking.sync();
        RedisCommands<String, String> multi = tx.sync();
        work.run(4, (worker, round) -> {
            switch (worker) {
                case 0:
                case 1: {
                    String key = "app:" + worker;
                    sync.set(key, "v");
                    sync.get(key);
                    sync.incr(key + ":count");
                    return 3;
                }
                case 2: {
                    KeyValue<String, String> popped = blpop.blpop(0.5, "app:queue");
                    return popped == null ? 1 : 1;
                }
                default: {
                    multi.multi();
                    multi.incr("app:multi");
                    multi.get("app:multi");
                    multi.exec();
                    if (round % 5 == 0) {
                        multi.publish("app:channel", "hello");
                    }
                    return 4;
                }
            }
        }, version, false);
    }
}
