
use builtin;
use str;

set edit:completion:arg-completer[maintwatch] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'maintwatch'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'maintwatch'= {
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand watch 'Connect with a forced opt-in and show every notification, its bytes, and what follows'
            cand decode 'Parse frames from files or stdin (raw, escaped or hex) and show each beside its bytes'
            cand probe 'Probe endpoints: does each accept the maintenance-notification opt-in? (exit codes in --help)'
            cand doctor 'Why no notifications? The server''s answers, and what each known client would do here'
            cand decide 'Run the handoff decision a client makes on a MOVING, in dry-run, against live DNS'
            cand simulate 'Run a simulated deployment that sends maintenance notifications (for trying clients)'
            cand demo 'Run the simulator and watch it: see maintenance notifications with nothing else running'
            cand replay 'Re-parse a JSON-lines capture and show its timeline; --check turns it into a regression test'
            cand pcap 'Read a packet capture: what the application''s own connections saw of a maintenance'
            cand certify 'Certify a client app: run it under every scenario, grade it, write JUnit (exit codes in --help)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'maintwatch;watch'= {
            cand --from 'Also watch the endpoints in FILE, one URL per line as `probe --from` reads them (`-` for standard input): a fleet'
            cand --heartbeat 'Every DURATION, a heartbeat line per endpoint: connections up, opt-ins, time since the latest notification'
            cand -h 'Server hostname or IP address [default: 127.0.0.1]'
            cand --host 'Server hostname or IP address [default: 127.0.0.1]'
            cand -p 'Server port [default: 6379]'
            cand --port 'Server port [default: 6379]'
            cand -u 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli'
            cand --uri 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli'
            cand -a 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users'
            cand --pass 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users'
            cand --user 'User name for ACL authentication (with a password)'
            cand -n 'Database number to SELECT (a URL''s /db wins)'
            cand --db 'Database number to SELECT (a URL''s /db wins)'
            cand --cacert 'CA certificate bundle (PEM) to verify the server with, instead of the system''s'
            cand --cacertdir 'Directory of trusted CA certificates (PEM), instead of the system''s'
            cand --cert 'Client certificate (PEM) for mutual TLS; needs --key'
            cand --key 'Private key (PEM) of --cert'
            cand --sni 'TLS server name to send and verify, instead of the host'
            cand --endpoint-type 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)'
            cand --connect-timeout 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)'
            cand --dns-server 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system''s; the DNS watch uses it too'
            cand --duration 'Stop after this long (e.g. 90s, 10m, 1h)'
            cand --count 'Stop after N maintenance notifications'
            cand --capture 'Also write JSON lines to FILE, flushed line by line, alongside the human output. Created mode 0600 (pub/sub payloads can be in it); an existing file is refused unless --append or --force says what to do with it'
            cand --report 'Write a self-contained HTML page of the watch to FILE at exit, and again on each SIGHUP (which then no longer stops the watch): the timeline drawn, the summary and the frames read (docs/report.md). A fleet''s page draws its first endpoint'
            cand --capture-max-size 'With --capture: before a line would take the file past SIZE (e.g. 100M, 1G), move it to FILE.1 (FILE.1 to FILE.2 ...) and start a new FILE. SIGHUP reopens FILE (logrotate)'
            cand --capture-keep 'With --capture-max-size: how many rotated files to keep'
            cand --traffic 'Send a PING every interval and report latency and errors, attributing failures to the open window'
            cand --connections 'Open N connections to the endpoint (a node-wide close takes them all at once)'
            cand --subscribe 'SUBSCRIBE to CHANNEL on each connection (repeatable): pub/sub messages are shown beside maintenance notifications, as what they are'
            cand --topology-interval 'With a cluster, read its topology again this often, to follow a failover or a reshard that no notification announces (it is also read again after an SMIGRATED, and when a node''s connection closes or fails)'
            cand --dns-interval 'How often to poll the hostname''s A/AAAA records'
            cand --dns-interval-open 'How often to poll them while a maintenance window is open (the change comes then)'
            cand --handoff-poll 'Interval of the dry-run''s DNS polls (the reference client uses 1 s)'
            cand --sim-speed 'The endpoint is the built-in simulator running N times faster (`simulate --speed N`): declared windows, polls and offsets are read at that speed. Without it, the speed the simulator announces in its HELLO reply is used (1 for any other server)'
            cand --color 'Colour: auto (a terminal and no NO_COLOR), always, never'
            cand --time-format 'How a line''s time is shown: compact (HH:MM:SS.mmm, local), full (to the microsecond, local) or rfc3339 (UTC, as in the JSON lines)'
            cand --metrics 'Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464): the Prometheus text format, or OpenMetrics when the scraper asks for it (docs/metrics.md)'
            cand --otlp 'Push the same measurements to an OpenTelemetry collector over OTLP/HTTP (protobuf), e.g. http://127.0.0.1:4318/v1/metrics or https://..., every --otlp-interval and once at exit; `env` takes the endpoint from OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT. Headers, CA certificate, timeout and gzip follow the OTEL_EXPORTER_OTLP_* variables; header values are never printed. A collector that is down is retried with backoff and never delays the watch (docs/metrics.md, docs/service.md)'
            cand --otlp-interval 'How often --otlp pushes'
            cand --exec 'Run CMD with `sh -c` once per maintenance event and once for its outcome (repeatable): the JSON line on its stdin, MAINTWATCH_TYPE, MAINTWATCH_EVENT and MAINTWATCH_ENDPOINT in its environment, never a password. At most 4 run at once; a slow or failing hook never delays the watch'
            cand --exec-on 'The line types that run --exec (comma list of JSON `type`s, or `all`). Default: each new maintenance notification, a socket close past the declared window, and the dry-run verdict'
            cand --exec-timeout 'Kill a hook (its process group) still running after this long'
            cand --askpass 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH'
            cand --tls 'Connect with TLS (implied by rediss://)'
            cand --insecure 'Do not verify the server''s certificate or name (prints a warning)'
            cand --help 'Print help (-h is the host, as in redis-cli)'
            cand --require 'Exit (with the probe exit code) when the opt-in is refused or RESP3 is unavailable, instead of watching whatever pushes arrive'
            cand --json 'One JSON object per line on stdout instead of human lines (schema: docs/jsonl.md)'
            cand --append 'With --capture: add to an existing file instead of refusing it'
            cand --force 'With --capture: empty an existing file instead of refusing it'
            cand --azure-events 'Listen to Azure Cache for Redis''s maintenance channel, AzureRedisEvents, on the watched connection: each message is an event of the timeline, parsed beside its bytes. The default when the host is an Azure Cache name (*.redis.cache.windows.net and the sovereign clouds''), as StackExchange.Redis decides'
            cand --no-azure-events 'Do not listen to AzureRedisEvents, even on an Azure Cache host'
            cand --tracking 'CLIENT TRACKING ON BCAST on each connection: invalidations are shown as what they are'
            cand --cluster 'Watch every node of an OSS cluster (found with CLUSTER SHARDS, else CLUSTER SLOTS); the default when HELLO reports mode `cluster`'
            cand --no-cluster 'Watch only the endpoint given, even when HELLO reports mode `cluster`'
            cand --masters-only 'With a cluster, watch the masters only (not the replicas)'
            cand --no-dns 'Do not watch DNS'
            cand --no-handoff 'Do not run the handoff decision in dry-run'
            cand -v 'Also show the lines that are only detail: each successful --traffic PING (failures are always shown; the summary has the latency figures)'
            cand --verbose 'Also show the lines that are only detail: each successful --traffic PING (failures are always shown; the summary has the latency figures)'
            cand --clients 'Under each maintenance notification, one more line: what each known client''s parser does with that frame (acts, ignores, FAILS and how), for the clients'' own auto endpoint type unless --endpoint-type names one (human output only; docs/clients.md)'
        }
        &'maintwatch;decode'= {
            cand --format 'How the input encodes the bytes'
            cand --endpoint-type 'With --clients: the moving-endpoint-type the clients asked for (it decides what node-redis does with a MOVING that names no endpoint); auto: each client''s own auto'
            cand --json 'One JSON object per frame (schema: docs/jsonl.md)'
            cand --clients 'Also say what each known client''s parser does with each frame: acts on it (with the values it reads), ignores it, or fails (docs/clients.md)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'maintwatch;probe'= {
            cand --from 'Also read endpoints from FILE, one per line; `-` reads standard input'
            cand --concurrency 'How many endpoints to probe at once (each is one socket: within the open-file limit)'
            cand --linger 'After an accepted opt-in, listen this long for a catch-up replay that missed the reply''s read (measured at 16-17 ms after the +OK); 0 disables'
            cand -h 'Server hostname or IP address [default: 127.0.0.1]'
            cand --host 'Server hostname or IP address [default: 127.0.0.1]'
            cand -p 'Server port [default: 6379]'
            cand --port 'Server port [default: 6379]'
            cand -u 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli'
            cand --uri 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli'
            cand -a 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users'
            cand --pass 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users'
            cand --user 'User name for ACL authentication (with a password)'
            cand -n 'Database number to SELECT (a URL''s /db wins)'
            cand --db 'Database number to SELECT (a URL''s /db wins)'
            cand --cacert 'CA certificate bundle (PEM) to verify the server with, instead of the system''s'
            cand --cacertdir 'Directory of trusted CA certificates (PEM), instead of the system''s'
            cand --cert 'Client certificate (PEM) for mutual TLS; needs --key'
            cand --key 'Private key (PEM) of --cert'
            cand --sni 'TLS server name to send and verify, instead of the host'
            cand --endpoint-type 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)'
            cand --connect-timeout 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)'
            cand --dns-server 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system''s; the DNS watch uses it too'
            cand --json 'One JSON object per endpoint per line (fields: type, v, endpoint, address, tls, outcome, exit_code, detail, tls_failure, hello, endpoint_type, maintenance, pushes, elapsed_ms)'
            cand -q 'Print nothing on standard output: only the exit code tells (warnings still go to stderr)'
            cand --quiet 'Print nothing on standard output: only the exit code tells (warnings still go to stderr)'
            cand --askpass 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH'
            cand --tls 'Connect with TLS (implied by rediss://)'
            cand --insecure 'Do not verify the server''s certificate or name (prints a warning)'
            cand --help 'Print help (-h is the host, as in redis-cli)'
        }
        &'maintwatch;doctor'= {
            cand --clients '`--clients all`: also each client''s version history (the releases that changed what it does, and what the client tier measured), which the screen leaves out to fit; `--json` always has it'
            cand -h 'Server hostname or IP address [default: 127.0.0.1]'
            cand --host 'Server hostname or IP address [default: 127.0.0.1]'
            cand -p 'Server port [default: 6379]'
            cand --port 'Server port [default: 6379]'
            cand -u 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli'
            cand --uri 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli'
            cand -a 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users'
            cand --pass 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users'
            cand --user 'User name for ACL authentication (with a password)'
            cand -n 'Database number to SELECT (a URL''s /db wins)'
            cand --db 'Database number to SELECT (a URL''s /db wins)'
            cand --cacert 'CA certificate bundle (PEM) to verify the server with, instead of the system''s'
            cand --cacertdir 'Directory of trusted CA certificates (PEM), instead of the system''s'
            cand --cert 'Client certificate (PEM) for mutual TLS; needs --key'
            cand --key 'Private key (PEM) of --cert'
            cand --sni 'TLS server name to send and verify, instead of the host'
            cand --endpoint-type 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)'
            cand --connect-timeout 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)'
            cand --dns-server 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system''s; the DNS watch uses it too'
            cand --json 'One JSON object (fields: type, v, endpoint, address, tls, exit_code, server, clients, errorstats, caveats)'
            cand --azure-events 'Also check Azure Cache for Redis''s maintenance channel: may this user SUBSCRIBE to AzureRedisEvents, and which clients listen to it. The default on an Azure Cache host name'
            cand --askpass 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH'
            cand --tls 'Connect with TLS (implied by rediss://)'
            cand --insecure 'Do not verify the server''s certificate or name (prints a warning)'
            cand --help 'Print help (-h is the host, as in redis-cli)'
        }
        &'maintwatch;decide'= {
            cand --endpoint 'The endpoint as the client was configured: HOST:PORT (a name or an address)'
            cand --current 'The address the client is connected to (the one being retired)'
            cand --successor 'The endpoint the MOVING named, if it named one'
            cand --window 'The window the MOVING declared (whole seconds; 0 means "already under way")'
            cand --poll 'Interval between DNS polls (the reference client uses 1 s)'
            cand --dns-server 'Ask this nameserver (IP[:PORT]) instead of the system''s resolver'
            cand --json 'Print the outcome as one JSON object'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'maintwatch;simulate'= {
            cand --scenario-file 'Play a scenario file from disk instead (format: scenarios/README.md)'
            cand --speed 'Run the scenario clock this many times faster (the DNS TTL shrinks with it; frames do not change, so MOVING still declares its real window). Stalls are not shortened: they last real seconds, because a client''s timeouts do'
            cand --proxy-api 'Also serve the HTTP API of cae-resp-proxy (the Docker proxy of the client libraries'' maintenance test suites) on [HOST:]PORT, loopback unless a host is given; its nodes are --listen and relay to --upstream (docs/proxy-api.md). Without --scenario nothing happens until the API asks'
            cand --fault-injector-api 'Serve the HTTP API of Redis Enterprise''s fault injector on [HOST:]PORT, loopback unless a host is given, in place of a scenario: the client libraries'' real-cluster suites create databases and trigger maintenances through it, each played on the simulator''s proxies (docs/fault-injector.md)'
            cand --endpoints-file 'Write the fault injector''s databases here, as the suites read them (REDIS_ENDPOINTS_CONFIG_PATH), again whenever one is created, deleted or moved'
            cand --listen 'The proxy API''s nodes, comma-separated: [HOST:]PORT each, loopback unless a host is given (the proxy''s LISTEN_PORT; default 6379)'
            cand --default-interceptors 'The proxy''s default interceptors to install, comma-separated: cluster (CLUSTER SLOTS, SHARDS, NODES answered with the nodes), hitless (the opt-in answered +OK), logger (the proxy''s DEFAULT_INTERCEPTORS; default none)'
            cand --announce 'The host the cluster interceptor names every node by instead of its listening address: `--announce 0.0.0.0` answers as the proxy does behind redis-py''s compose file (LISTEN_HOST=0.0.0.0) while listening on loopback only'
            cand -p 'Port shared by every proxy (0 picks a free one)'
            cand --port 'Port shared by every proxy (0 picks a free one)'
            cand --password 'Require this password (AUTH / HELLO 3 AUTH). Never printed'
            cand --user 'The ACL user the password belongs to (default: default)'
            cand --upstream 'Relay every command the simulator does not own (all but HELLO, AUTH, QUIT, CLIENT SETINFO/MAINT_NOTIFICATIONS and a cluster''s topology) to this Redis, one upstream connection per client connection: redis://[user:pass@]host:port, unix://[user:pass@]/path/to/redis.sock, or `spawn` to start redis-server from PATH on a free loopback port (relayed through its Unix socket; stopped at exit)'
            cand --grade-json 'Also write the grade to FILE as JSON lines: `grade_input` (what was observed, for `replay --grade`) and `grade` (implies --grade)'
            cand --report 'Also write a self-contained HTML page of the run to FILE: the timeline drawn and classed by the grade''s verdicts, the grade, the summary and the frames sent (docs/report.md; implies --grade)'
            cand --client-output 'Where the client''s (CMD''s) stdout and stderr go (default: a new file in the temporary directory, named in the grade)'
            cand --pcap 'Capture the run''s own packets (its proxies and its DNS, on the loopback) into FILE, in the pcap format `maintwatch pcap` and tcpdump read: the way to keep a capture of a run that sits in a network namespace of its own, where a tcpdump outside sees nothing. Needs CAP_NET_RAW (root, or the namespace''s)'
            cand --scenario 'The embedded scenario to play (see --list; default single-proxy, or none with --proxy-api)'
            cand --loop 'Play the scenario again and again; between rounds DNS and listeners are reset and every connection is closed so clients start over'
            cand --list 'List the scenarios, one line each, and exit'
            cand --no-catch-up 'Do not replay the last MIGRATED/FAILED_OVER after an opt-in''s +OK'
            cand -q 'Print where it listens and the scenario''s steps only, not every connection and command'
            cand --quiet 'Print where it listens and the scenario''s steps only, not every connection and command'
            cand -v 'Print every DNS query the simulator answers. By default only the first from each source address is printed (a client may ask hundreds of times) and the rest are counted at the end'
            cand --verbose 'Print every DNS query the simulator answers. By default only the first from each source address is printed (a client may ask hundreds of times) and the rest are counted at the end'
            cand --grade 'At the end, grade each client''s behaviour against docs/protocol.md (a table on stdout; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged or nothing was). Stalls (`stall` steps) last real seconds whatever --speed, since the client''s timers do; `timeout-restored` is judged only at --speed 1'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'maintwatch;demo'= {
            cand --scenario 'The embedded scenario to play (see --list; default single-proxy)'
            cand --scenario-file 'Play a scenario file from disk instead (format: scenarios/README.md)'
            cand --speed 'Run the scenario clock this many times faster (the DNS TTL shrinks with it; frames do not change, so MOVING still declares its real window). Stalls are not shortened: they last real seconds, because a client''s timeouts do'
            cand --capture 'Also write the watch''s JSON lines to FILE (a capture `replay` reads back)'
            cand --report 'Also write a self-contained HTML page of the run to FILE at the end: the watch''s timeline drawn, its summary and the frames it read (docs/report.md)'
            cand --color 'Colour: auto (a terminal and no NO_COLOR), always, never'
            cand --list 'List the scenarios, one line each, and exit (as `simulate --list`)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'maintwatch;replay'= {
            cand --report 'Also write a self-contained HTML page of the files read to FILE: the timeline drawn (classed by the grade''s verdicts with --grade), the summary and the raw frames (docs/report.md)'
            cand --color 'Colour: auto, always, never'
            cand --check 'Compare each frame''s fresh parse, and what the timeline computes again, with what was recorded; exit 1 on any difference'
            cand -v 'With --check, also print the timeline'
            cand --verbose 'With --check, also print the timeline'
            cand --grade 'Grade again, with this maintwatch''s judge, the `grade_input` lines that `simulate --grade-json` and `pcap --grade --json` wrote (a table, or `grade_input` and `grade` lines with --json; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged)'
            cand --json 'Print the re-parsed lines as JSON instead of human lines'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'maintwatch;pcap'= {
            cand --port 'The server''s port (repeatable); without it, streams whose client starts with a RESP command are read'
            cand --sim-speed 'The capture is of the built-in simulator running N times faster (`simulate --speed N`): offsets after a MOVING are read at that speed'
            cand --report 'Also write a self-contained HTML page of the capture to FILE: the timeline drawn (with --grade, classed by the grade''s verdicts), the grade, the summary and the raw frames (docs/report.md)'
            cand --dns-port 'UDP port DNS answers come from (repeatable; default 53): what the application resolved. An answer counts for a client only where it can be tied to it: not where another client on the same host went where it pointed (docs/protocol.md, section 8)'
            cand --color 'Colour: auto, always, never'
            cand --json 'One JSON object per line (the watch''s schema plus pcap_* lines; docs/jsonl.md)'
            cand --grade 'At the end, grade each client with the judge of `simulate --grade` (a table, or `grade_input` and `grade` lines with --json; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged). Clients are grouped by CLIENT SETINFO lib-name/lib-ver when the capture has it, else by host'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'maintwatch;certify'= {
            cand --scenarios 'The scenarios to play, comma-separated, in this order (default: every scenario listed below as played by default); `default`, `cluster`, `azure` and `robustness` name the groups below'
            cand --junit 'Write a JUnit XML report to FILE: one testsuite per scenario, one testcase per rule and notification (FAIL: <failure>, NOT JUDGED: <skipped>)'
            cand --grade-json 'Write every scenario''s grade to FILE as JSON lines (`grade_input` and `grade`, each naming its scenario), as `simulate --grade-json` does for one'
            cand --report 'Write one self-contained HTML page to FILE with a section per scenario: its verdict, its timeline drawn, and its grade (docs/report.md)'
            cand --speed 'Run each scenario''s clock this many times faster. Above 1 the timeout rules are NOT JUDGED, and a client acting on a MOVING''s declared window acts late'
            cand --upstream 'The Redis every command the simulator does not own is relayed to: `spawn` starts a fresh redis-server from PATH for each scenario; or redis://[user:pass@]host:port, or unix://[user:pass@]/path'
            cand --client-output 'The directory for the client''s output, one `SCENARIO.log` per scenario (default: a new directory in the temporary directory, named at the end)'
            cand --pcap 'Capture each scenario''s packets into DIR/SCENARIO.pcap (as `simulate --pcap`): how a run in a network namespace of its own is kept as a capture. Needs CAP_NET_RAW (root, or the namespace''s)'
            cand -j 'How many scenarios play at once. Each plays in a process and a network namespace of its own (its own loopback, addresses, ports, DNS, redis-server and client), so none can reach another''s; the longest start first, and the reports keep the list''s order. 1 plays them one after another, in order. The default, 8, is what was measured on 2 cores (docs/certify.md): the scenarios mostly wait on their clocks, and eight at once bring the default set to the length of its longest scenario (47 s, against 294 s one at a time and 55 s six at a time) with the same verdicts, on about 1.2 of the 2 cores; more gain nothing. Only with --upstream spawn: one shared server is played one scenario at a time'
            cand --jobs 'How many scenarios play at once. Each plays in a process and a network namespace of its own (its own loopback, addresses, ports, DNS, redis-server and client), so none can reach another''s; the longest start first, and the reports keep the list''s order. 1 plays them one after another, in order. The default, 8, is what was measured on 2 cores (docs/certify.md): the scenarios mostly wait on their clocks, and eight at once bring the default set to the length of its longest scenario (47 s, against 294 s one at a time and 55 s six at a time) with the same verdicts, on about 1.2 of the 2 cores; more gain nothing. Only with --upstream spawn: one shared server is played one scenario at a time'
            cand --runs 'Play each scenario N times, each time with a fresh simulator, redis-server and client. Each cell then says how often each verdict came (`F mov 1/20`: moved-before-close failed in 1 of 20 runs), JUnit has each test case once per run (`run 3/20`), and the exit code is the worst run''s. For a client whose behaviour depends on its own scheduling, a cell of one run says what happened once; of 20, how often'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'maintwatch;help'= {
            cand watch 'Connect with a forced opt-in and show every notification, its bytes, and what follows'
            cand decode 'Parse frames from files or stdin (raw, escaped or hex) and show each beside its bytes'
            cand probe 'Probe endpoints: does each accept the maintenance-notification opt-in? (exit codes in --help)'
            cand doctor 'Why no notifications? The server''s answers, and what each known client would do here'
            cand decide 'Run the handoff decision a client makes on a MOVING, in dry-run, against live DNS'
            cand simulate 'Run a simulated deployment that sends maintenance notifications (for trying clients)'
            cand demo 'Run the simulator and watch it: see maintenance notifications with nothing else running'
            cand replay 'Re-parse a JSON-lines capture and show its timeline; --check turns it into a regression test'
            cand pcap 'Read a packet capture: what the application''s own connections saw of a maintenance'
            cand certify 'Certify a client app: run it under every scenario, grade it, write JUnit (exit codes in --help)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'maintwatch;help;watch'= {
        }
        &'maintwatch;help;decode'= {
        }
        &'maintwatch;help;probe'= {
        }
        &'maintwatch;help;doctor'= {
        }
        &'maintwatch;help;decide'= {
        }
        &'maintwatch;help;simulate'= {
        }
        &'maintwatch;help;demo'= {
        }
        &'maintwatch;help;replay'= {
        }
        &'maintwatch;help;pcap'= {
        }
        &'maintwatch;help;certify'= {
        }
        &'maintwatch;help;help'= {
        }
    ]
    $completions[$command]
}
