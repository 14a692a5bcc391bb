// Feeds frames to node-redis's own RESP decoder and its EnterpriseMaintenanceManager push
// handler, and says what they did.
//
// Input (stdin): one frame per line, `name<TAB>hex bytes`. Argument: the moving-endpoint-type the
// client asked for (node-redis's MOVING handler asserts on it). Run with the current directory
// (or NODE_PATH) where node_modules has `redis`. Output: one JSON object per frame:
// {"name", "outcome": acts|ignores|fails, "detail", "target"}; `target` is [host, port] as the
// handler read a MOVING's endpoint (the client it would connect), or null (none read: it
// reconnects where it is, after half the window).
//
// The client and its command queue are stand-ins that record what the manager asks of them; the
// half-window wait before a reconnect is made instant, and recorded.
"use strict";
const path = require("path");
const timers = require("node:timers/promises");
const base = path.dirname(require.resolve("@redis/client/package.json", { paths: [process.cwd()] }));
const { Decoder, PUSH_TYPE_MAPPING } = require(path.join(base, "dist/lib/RESP/decoder"));
const EMM = require(path.join(base, "dist/lib/client/enterprise-maintenance-manager")).default;

let waited = null;
timers.setTimeout = async (ms) => { waited = ms; };
let rejection = null;
process.on("unhandledRejection", (e) => { rejection = e; });

async function run(name, data, asked) {
  const calls = [];
  let target = null;
  const options = { socket: { host: "127.0.0.1", port: 6379 }, maintEndpointType: asked };
  EMM.setupDefaultMaintOptions(options);
  options.maintEndpointType = asked;
  let handler = null;
  const queue = {
    addPushHandler: (h) => { handler = h; },
    waitForInflightCommandsToComplete: async () => {},
  };
  const client = {
    _clientId: "test",
    _maintenanceUpdate: (u) => calls.push(u.relaxedCommandTimeout === undefined ? "unrelax" : "relax"),
    _pause: () => calls.push("pause"),
    _unpause: () => calls.push("unpause"),
    _handleSmigrated: (e) => calls.push("smigrated:" + JSON.stringify(e)),
    _ejectSocket: () => ({}),
    _insertSocket: () => {},
    duplicate: () => {
      target = [String(options.socket.host), Number.isNaN(options.socket.port) ? null : options.socket.port];
      calls.push("duplicate");
      return { on() {}, _maintenanceUpdate() {}, async connect() {}, _ejectSocket: () => ({}), _insertSocket() {}, destroy() {} };
    },
  };
  new EMM(queue, client, options);
  rejection = null;
  waited = null;
  let handled = null;
  let thrown = null;
  const decoder = new Decoder({
    onReply: () => {},
    onErrorReply: () => {},
    onPush: (push) => {
      try { handled = handler(push); } catch (e) { thrown = e; }
    },
    getTypeMapping: () => PUSH_TYPE_MAPPING,
  });
  try {
    decoder.write(data);
  } catch (e) {
    return { name, outcome: "fails", detail: `decoder: ${e}`, target: null };
  }
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  if (thrown) return { name, outcome: "fails", detail: `${thrown.name}: ${thrown.message}`, target: null };
  if (rejection) return { name, outcome: "fails", detail: `unhandled rejection: ${rejection.name}: ${rejection.message}`, target: null };
  if (!handled) return { name, outcome: "ignores", detail: "not a maintenance push", target: null };
  const detail = calls.join(",") + (waited === null ? "" : `,waited ${waited}ms`);
  // The half-window wait is the no-endpoint path: it reconnects where it is, no target read.
  return { name, outcome: "acts", detail, target: waited === null ? target : null };
}

async function main() {
  const asked = process.argv[2] || "auto";
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  for (const line of input.split("\n")) {
    if (!line) continue;
    const [name, hex] = line.split("\t");
    console.log(JSON.stringify(await run(name, Buffer.from(hex, "hex"), asked)));
  }
}
main();
