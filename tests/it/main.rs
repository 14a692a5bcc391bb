//! The one integration-test binary: a module per area, all linked once against the library
//! (each file under `tests/` used to be its own binary, and linking the library fifty times was
//! much of CI's time). `common` is the shared harness; `pcapgen` writes the synthetic captures.
//!
//! Tests that need a real part (redis-server, tcpdump, tmux, Chromium, Prometheus, a client
//! library) print a visible SKIP line where it is absent, as before.

mod common;
mod pcapgen;

mod azure_decode;
mod azure_watch;
mod capture_rotation;
mod certify;
mod ci_job;
mod cli_small;
mod client_parsers;
mod closed_pipes;
mod cluster_topology;
mod conn;
mod decode_cli;
mod deploy;
mod dns_handoff;
mod docs;
mod doctor;
mod error_text;
mod examples;
mod fault_injector;
mod fleet;
mod go_redis;
mod grade;
mod heartbeat;
mod hooks;
mod hostile_handshake;
mod ioredis;
mod jedis;
mod jobs_verdicts;
mod layers;
mod layers_folders;
mod lettuce;
mod links;
mod metrics;
mod node_redis;
mod notification;
mod offsets;
mod one_judge;
mod open_files;
mod otlp;
mod package;
mod pcap;
mod pcap_dns;
mod pcap_robust;
mod probe_table;
mod proxy_api;
mod redis_py;
mod redis_py_app;
mod relay;
mod reliability;
mod replay_cli;
mod report;
mod report_layout;
mod resp_props;
mod robustness;
mod robustness_page;
mod scenario_end;
mod scenarios_more;
mod screen_tty;
mod secrets;
mod sim;
mod sim_client;
mod snapshots;
mod tier_matrix;
mod unprivileged;
mod upstream;
mod usage_errors;
mod watch;
mod watch_exits;
mod watch_stop;
