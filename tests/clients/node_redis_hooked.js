// The Node recipe of docs/simulate.md, tested (tests/it/node_redis.rs): the same application as
// node_redis_app.js, for a machine where `simulate` cannot give the client a resolv.conf of its
// own. The host name is resolved through MAINTWATCH_SIM_DNS by a `socket.lookup` hook, and the
// endpoint type is explicit: node-redis's 'auto' resolves the host itself (ignoring the hook)
// to pick one.

const dns = require("node:dns");
const { createClient } = require("redis");
const version = require("redis/package.json").version;

const resolver = new dns.Resolver({ timeout: 2000, tries: 2 });
resolver.setServers([process.env.MAINTWATCH_SIM_DNS]);
const simHost = process.env.MAINTWATCH_SIM_HOST;

// net.connect's lookup: (hostname, options, callback(err, address, family) or (err, [{address, family}]) with options.all).
function lookup(hostname, options, callback) {
  if (hostname !== simHost) return dns.lookup(hostname, options, callback);
  resolver.resolve4(hostname, (err, addrs) => {
    if (err) return callback(err);
    if (options && options.all) return callback(null, addrs.map((a) => ({ address: a, family: 4 })));
    callback(null, addrs[0], 4);
  });
}

const client = createClient({
  socket: { host: simHost, port: Number(process.env.MAINTWATCH_SIM_PORT), lookup },
  RESP: 3,
  maintEndpointType: process.env.APP_ENDPOINT_TYPE || "internal-ip",
});
client.on("error", () => {});

let ops = 0;
let stopping = false;
const errors = {};

async function work(n) {
  const key = `app:${n}`;
  while (!stopping) {
    try {
      await client.set(key, "v");
      await client.get(key);
      await client.incr(`${key}:count`);
      ops += 3;
    } catch (e) {
      errors[e.name] = (errors[e.name] || 0) + 1;
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function main() {
  await client.connect();
  const loops = [0, 1, 2].map(work);
  process.on("SIGTERM", () => {
    stopping = true;
  });
  await Promise.all(loops);
  console.log(JSON.stringify({ redis: version, ops, errors }));
  client.destroy();
}

main();
