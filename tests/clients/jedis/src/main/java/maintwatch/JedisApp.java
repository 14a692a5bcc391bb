package maintwatch;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisProtocol;

/**
 * An unmodified Jedis application, for {@code maintwatch simulate --grade -- java -cp CP
 * maintwatch.JedisApp} (tests/it/jedis.rs).
 *
 * <p>It knows nothing of the simulator but what its environment says (MAINTWATCH_SIM_HOST and
 * MAINTWATCH_SIM_PORT) and has no resolver code: the host name resolves through the JVM's
 * resolver (the system's, with the JVM's cache of answers at its default), which
 * {@code simulate} points at its own DNS. As Jedis's README shows: a {@code RedisClient} (a
 * connection pool) built for a host and port, with a client config asking for RESP3 (Jedis
 * speaks RESP2 unless asked; maintenance notifications need RESP3) and a 1 s socket timeout, as
 * the other applications have. Three threads of SET / GET / INCR until SIGTERM; then one JSON
 * line. {@code --version} prints the library's version and exits.
 */
public final class JedisApp {

    public static void main(String[] args) throws Exception {
        String version = version();
        if (args.length > 0 && args[0].equals("--version")) {
            System.out.println(version);
            return;
        }
        RedisClient jedis = RedisClient.builder()
                .hostAndPort(System.getenv("MAINTWATCH_SIM_HOST"),
                        Integer.parseInt(System.getenv("MAINTWATCH_SIM_PORT")))
                .clientConfig(DefaultJedisClientConfig.builder()
                        .protocol(RedisProtocol.RESP3)
                        // A short timeout, so that a stall shows whether the client relaxes it in
                        // a maintenance window.
                        .socketTimeoutMillis(1000)
                        .build())
                .build();
        Workload work = new Workload();
        work.run(3, (worker, round) -> {
            String key = "app:" + worker;
            jedis.set(key, "v");
            jedis.get(key);
            jedis.incr(key + ":count");
            return 3;
        }, version, false);
    }

    /** The version Jedis's jar names itself by (its pom.properties). */
    static String version() throws java.io.IOException {
        java.util.Properties p = new java.util.Properties();
        try (var in = RedisClient.class.getResourceAsStream("pom.properties")) {
            p.load(in);
        }
        return p.getProperty("version");
    }
}
