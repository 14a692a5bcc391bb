package maintwatch;

import java.time.Duration;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * An unmodified Lettuce application, for {@code maintwatch simulate --grade -- java -cp CP
 * maintwatch.LettuceApp} (tests/it/lettuce.rs).
 *
 * <p>It knows nothing of the simulator but what its environment says (MAINTWATCH_SIM_HOST and
 * MAINTWATCH_SIM_PORT) and has no resolver code: the host name resolves through the JVM's
 * resolver (the system's, with the JVM's own cache of answers at its default), which
 * {@code simulate} points at its own DNS. As Lettuce's README shows: {@code RedisClient.create}
 * with a URI, one thread-safe connection, its synchronous API. Everything else is Lettuce's
 * default: RESP3 (the newest protocol, negotiated with HELLO), maintenance notifications on with
 * the endpoint type resolved automatically (7.0 on), command timeouts from the URI's timeout,
 * relaxed by 10 s in a maintenance window. Three threads of SET / GET / INCR until SIGTERM; then
 * one JSON line. {@code --version} prints the library's version and exits.
 */
public final class LettuceApp {

    public static void main(String[] args) throws Exception {
        String version = RedisClient.class.getPackage().getImplementationVersion();
        if (args.length > 0 && args[0].equals("--version")) {
            System.out.println(version.split("/")[0]);
            return;
        }
        RedisURI uri = RedisURI.builder()
                .withHost(System.getenv("MAINTWATCH_SIM_HOST"))
                .withPort(Integer.parseInt(System.getenv("MAINTWATCH_SIM_PORT")))
                // A short timeout, so that a stall shows whether the client relaxes it in a
                // maintenance window (the stalls of the failover and shard-migration scenarios
                // last 1.5-2 s).
                .withTimeout(Duration.ofSeconds(1))
                .build();
        RedisClient client = RedisClient.create(uri);
        Workload work = new Workload();
        StatefulRedisConnection<String, String> connection = work.firstConnection(client::connect);
        RedisCommands<String, String> sync = connection.sync();
        work.run(3, (worker, round) -> {
            String key = "app:" + worker;
            sync.set(key, "v");
            sync.get(key);
            sync.incr(key + ":count");
            return 3;
        }, version, false);
    }
}
