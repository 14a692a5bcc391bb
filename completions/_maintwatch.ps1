
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'maintwatch' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'maintwatch'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'maintwatch' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('watch', 'watch', [CompletionResultType]::ParameterValue, 'Connect with a forced opt-in and show every notification, its bytes, and what follows')
            [CompletionResult]::new('decode', 'decode', [CompletionResultType]::ParameterValue, 'Parse frames from files or stdin (raw, escaped or hex) and show each beside its bytes')
            [CompletionResult]::new('probe', 'probe', [CompletionResultType]::ParameterValue, 'Probe endpoints: does each accept the maintenance-notification opt-in? (exit codes in --help)')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Why no notifications? The server''s answers, and what each known client would do here')
            [CompletionResult]::new('decide', 'decide', [CompletionResultType]::ParameterValue, 'Run the handoff decision a client makes on a MOVING, in dry-run, against live DNS')
            [CompletionResult]::new('simulate', 'simulate', [CompletionResultType]::ParameterValue, 'Run a simulated deployment that sends maintenance notifications (for trying clients)')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Run the simulator and watch it: see maintenance notifications with nothing else running')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Re-parse a JSON-lines capture and show its timeline; --check turns it into a regression test')
            [CompletionResult]::new('pcap', 'pcap', [CompletionResultType]::ParameterValue, 'Read a packet capture: what the application''s own connections saw of a maintenance')
            [CompletionResult]::new('certify', 'certify', [CompletionResultType]::ParameterValue, 'Certify a client app: run it under every scenario, grade it, write JUnit (exit codes in --help)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'maintwatch;watch' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Also watch the endpoints in FILE, one URL per line as `probe --from` reads them (`-` for standard input): a fleet')
            [CompletionResult]::new('--heartbeat', '--heartbeat', [CompletionResultType]::ParameterName, 'Every DURATION, a heartbeat line per endpoint: connections up, opt-ins, time since the latest notification')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Server hostname or IP address [default: 127.0.0.1]')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Server hostname or IP address [default: 127.0.0.1]')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Server port [default: 6379]')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Server port [default: 6379]')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli')
            [CompletionResult]::new('--uri', '--uri', [CompletionResultType]::ParameterName, 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli')
            [CompletionResult]::new('-a', '-a', [CompletionResultType]::ParameterName, 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users')
            [CompletionResult]::new('--pass', '--pass', [CompletionResultType]::ParameterName, 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'User name for ACL authentication (with a password)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Database number to SELECT (a URL''s /db wins)')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'Database number to SELECT (a URL''s /db wins)')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'CA certificate bundle (PEM) to verify the server with, instead of the system''s')
            [CompletionResult]::new('--cacertdir', '--cacertdir', [CompletionResultType]::ParameterName, 'Directory of trusted CA certificates (PEM), instead of the system''s')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM) for mutual TLS; needs --key')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) of --cert')
            [CompletionResult]::new('--sni', '--sni', [CompletionResultType]::ParameterName, 'TLS server name to send and verify, instead of the host')
            [CompletionResult]::new('--endpoint-type', '--endpoint-type', [CompletionResultType]::ParameterName, 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)')
            [CompletionResult]::new('--dns-server', '--dns-server', [CompletionResultType]::ParameterName, 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system''s; the DNS watch uses it too')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Stop after this long (e.g. 90s, 10m, 1h)')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Stop after N maintenance notifications')
            [CompletionResult]::new('--capture', '--capture', [CompletionResultType]::ParameterName, 'Also write JSON lines to FILE, flushed line by line, alongside the human output. Created mode 0600 (pub/sub payloads can be in it); an existing file is refused unless --append or --force says what to do with it')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a self-contained HTML page of the watch to FILE at exit, and again on each SIGHUP (which then no longer stops the watch): the timeline drawn, the summary and the frames read (docs/report.md). A fleet''s page draws its first endpoint')
            [CompletionResult]::new('--capture-max-size', '--capture-max-size', [CompletionResultType]::ParameterName, 'With --capture: before a line would take the file past SIZE (e.g. 100M, 1G), move it to FILE.1 (FILE.1 to FILE.2 ...) and start a new FILE. SIGHUP reopens FILE (logrotate)')
            [CompletionResult]::new('--capture-keep', '--capture-keep', [CompletionResultType]::ParameterName, 'With --capture-max-size: how many rotated files to keep')
            [CompletionResult]::new('--traffic', '--traffic', [CompletionResultType]::ParameterName, 'Send a PING every interval and report latency and errors, attributing failures to the open window')
            [CompletionResult]::new('--connections', '--connections', [CompletionResultType]::ParameterName, 'Open N connections to the endpoint (a node-wide close takes them all at once)')
            [CompletionResult]::new('--subscribe', '--subscribe', [CompletionResultType]::ParameterName, 'SUBSCRIBE to CHANNEL on each connection (repeatable): pub/sub messages are shown beside maintenance notifications, as what they are')
            [CompletionResult]::new('--topology-interval', '--topology-interval', [CompletionResultType]::ParameterName, 'With a cluster, read its topology again this often, to follow a failover or a reshard that no notification announces (it is also read again after an SMIGRATED, and when a node''s connection closes or fails)')
            [CompletionResult]::new('--dns-interval', '--dns-interval', [CompletionResultType]::ParameterName, 'How often to poll the hostname''s A/AAAA records')
            [CompletionResult]::new('--dns-interval-open', '--dns-interval-open', [CompletionResultType]::ParameterName, 'How often to poll them while a maintenance window is open (the change comes then)')
            [CompletionResult]::new('--handoff-poll', '--handoff-poll', [CompletionResultType]::ParameterName, 'Interval of the dry-run''s DNS polls (the reference client uses 1 s)')
            [CompletionResult]::new('--sim-speed', '--sim-speed', [CompletionResultType]::ParameterName, 'The endpoint is the built-in simulator running N times faster (`simulate --speed N`): declared windows, polls and offsets are read at that speed. Without it, the speed the simulator announces in its HELLO reply is used (1 for any other server)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour: auto (a terminal and no NO_COLOR), always, never')
            [CompletionResult]::new('--time-format', '--time-format', [CompletionResultType]::ParameterName, 'How a line''s time is shown: compact (HH:MM:SS.mmm, local), full (to the microsecond, local) or rfc3339 (UTC, as in the JSON lines)')
            [CompletionResult]::new('--metrics', '--metrics', [CompletionResultType]::ParameterName, 'Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464): the Prometheus text format, or OpenMetrics when the scraper asks for it (docs/metrics.md)')
            [CompletionResult]::new('--otlp', '--otlp', [CompletionResultType]::ParameterName, 'Push the same measurements to an OpenTelemetry collector over OTLP/HTTP (protobuf), e.g. http://127.0.0.1:4318/v1/metrics or https://..., every --otlp-interval and once at exit; `env` takes the endpoint from OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT. Headers, CA certificate, timeout and gzip follow the OTEL_EXPORTER_OTLP_* variables; header values are never printed. A collector that is down is retried with backoff and never delays the watch (docs/metrics.md, docs/service.md)')
            [CompletionResult]::new('--otlp-interval', '--otlp-interval', [CompletionResultType]::ParameterName, 'How often --otlp pushes')
            [CompletionResult]::new('--exec', '--exec', [CompletionResultType]::ParameterName, 'Run CMD with `sh -c` once per maintenance event and once for its outcome (repeatable): the JSON line on its stdin, MAINTWATCH_TYPE, MAINTWATCH_EVENT and MAINTWATCH_ENDPOINT in its environment, never a password. At most 4 run at once; a slow or failing hook never delays the watch')
            [CompletionResult]::new('--exec-on', '--exec-on', [CompletionResultType]::ParameterName, 'The line types that run --exec (comma list of JSON `type`s, or `all`). Default: each new maintenance notification, a socket close past the declared window, and the dry-run verdict')
            [CompletionResult]::new('--exec-timeout', '--exec-timeout', [CompletionResultType]::ParameterName, 'Kill a hook (its process group) still running after this long')
            [CompletionResult]::new('--askpass', '--askpass', [CompletionResultType]::ParameterName, 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH')
            [CompletionResult]::new('--tls', '--tls', [CompletionResultType]::ParameterName, 'Connect with TLS (implied by rediss://)')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Do not verify the server''s certificate or name (prints a warning)')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (-h is the host, as in redis-cli)')
            [CompletionResult]::new('--require', '--require', [CompletionResultType]::ParameterName, 'Exit (with the probe exit code) when the opt-in is refused or RESP3 is unavailable, instead of watching whatever pushes arrive')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON object per line on stdout instead of human lines (schema: docs/jsonl.md)')
            [CompletionResult]::new('--append', '--append', [CompletionResultType]::ParameterName, 'With --capture: add to an existing file instead of refusing it')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'With --capture: empty an existing file instead of refusing it')
            [CompletionResult]::new('--azure-events', '--azure-events', [CompletionResultType]::ParameterName, 'Listen to Azure Cache for Redis''s maintenance channel, AzureRedisEvents, on the watched connection: each message is an event of the timeline, parsed beside its bytes. The default when the host is an Azure Cache name (*.redis.cache.windows.net and the sovereign clouds''), as StackExchange.Redis decides')
            [CompletionResult]::new('--no-azure-events', '--no-azure-events', [CompletionResultType]::ParameterName, 'Do not listen to AzureRedisEvents, even on an Azure Cache host')
            [CompletionResult]::new('--tracking', '--tracking', [CompletionResultType]::ParameterName, 'CLIENT TRACKING ON BCAST on each connection: invalidations are shown as what they are')
            [CompletionResult]::new('--cluster', '--cluster', [CompletionResultType]::ParameterName, 'Watch every node of an OSS cluster (found with CLUSTER SHARDS, else CLUSTER SLOTS); the default when HELLO reports mode `cluster`')
            [CompletionResult]::new('--no-cluster', '--no-cluster', [CompletionResultType]::ParameterName, 'Watch only the endpoint given, even when HELLO reports mode `cluster`')
            [CompletionResult]::new('--masters-only', '--masters-only', [CompletionResultType]::ParameterName, 'With a cluster, watch the masters only (not the replicas)')
            [CompletionResult]::new('--no-dns', '--no-dns', [CompletionResultType]::ParameterName, 'Do not watch DNS')
            [CompletionResult]::new('--no-handoff', '--no-handoff', [CompletionResultType]::ParameterName, 'Do not run the handoff decision in dry-run')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Also show the lines that are only detail: each successful --traffic PING (failures are always shown; the summary has the latency figures)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Also show the lines that are only detail: each successful --traffic PING (failures are always shown; the summary has the latency figures)')
            [CompletionResult]::new('--clients', '--clients', [CompletionResultType]::ParameterName, 'Under each maintenance notification, one more line: what each known client''s parser does with that frame (acts, ignores, FAILS and how), for the clients'' own auto endpoint type unless --endpoint-type names one (human output only; docs/clients.md)')
            break
        }
        'maintwatch;decode' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'How the input encodes the bytes')
            [CompletionResult]::new('--endpoint-type', '--endpoint-type', [CompletionResultType]::ParameterName, 'With --clients: the moving-endpoint-type the clients asked for (it decides what node-redis does with a MOVING that names no endpoint); auto: each client''s own auto')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON object per frame (schema: docs/jsonl.md)')
            [CompletionResult]::new('--clients', '--clients', [CompletionResultType]::ParameterName, 'Also say what each known client''s parser does with each frame: acts on it (with the values it reads), ignores it, or fails (docs/clients.md)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'maintwatch;probe' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Also read endpoints from FILE, one per line; `-` reads standard input')
            [CompletionResult]::new('--concurrency', '--concurrency', [CompletionResultType]::ParameterName, 'How many endpoints to probe at once (each is one socket: within the open-file limit)')
            [CompletionResult]::new('--linger', '--linger', [CompletionResultType]::ParameterName, 'After an accepted opt-in, listen this long for a catch-up replay that missed the reply''s read (measured at 16-17 ms after the +OK); 0 disables')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Server hostname or IP address [default: 127.0.0.1]')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Server hostname or IP address [default: 127.0.0.1]')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Server port [default: 6379]')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Server port [default: 6379]')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli')
            [CompletionResult]::new('--uri', '--uri', [CompletionResultType]::ParameterName, 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli')
            [CompletionResult]::new('-a', '-a', [CompletionResultType]::ParameterName, 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users')
            [CompletionResult]::new('--pass', '--pass', [CompletionResultType]::ParameterName, 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'User name for ACL authentication (with a password)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Database number to SELECT (a URL''s /db wins)')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'Database number to SELECT (a URL''s /db wins)')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'CA certificate bundle (PEM) to verify the server with, instead of the system''s')
            [CompletionResult]::new('--cacertdir', '--cacertdir', [CompletionResultType]::ParameterName, 'Directory of trusted CA certificates (PEM), instead of the system''s')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM) for mutual TLS; needs --key')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) of --cert')
            [CompletionResult]::new('--sni', '--sni', [CompletionResultType]::ParameterName, 'TLS server name to send and verify, instead of the host')
            [CompletionResult]::new('--endpoint-type', '--endpoint-type', [CompletionResultType]::ParameterName, 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)')
            [CompletionResult]::new('--dns-server', '--dns-server', [CompletionResultType]::ParameterName, 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system''s; the DNS watch uses it too')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON object per endpoint per line (fields: type, v, endpoint, address, tls, outcome, exit_code, detail, tls_failure, hello, endpoint_type, maintenance, pushes, elapsed_ms)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on standard output: only the exit code tells (warnings still go to stderr)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on standard output: only the exit code tells (warnings still go to stderr)')
            [CompletionResult]::new('--askpass', '--askpass', [CompletionResultType]::ParameterName, 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH')
            [CompletionResult]::new('--tls', '--tls', [CompletionResultType]::ParameterName, 'Connect with TLS (implied by rediss://)')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Do not verify the server''s certificate or name (prints a warning)')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (-h is the host, as in redis-cli)')
            break
        }
        'maintwatch;doctor' {
            [CompletionResult]::new('--clients', '--clients', [CompletionResultType]::ParameterName, '`--clients all`: also each client''s version history (the releases that changed what it does, and what the client tier measured), which the screen leaves out to fit; `--json` always has it')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Server hostname or IP address [default: 127.0.0.1]')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Server hostname or IP address [default: 127.0.0.1]')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Server port [default: 6379]')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Server port [default: 6379]')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli')
            [CompletionResult]::new('--uri', '--uri', [CompletionResultType]::ParameterName, 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without '':'' is the password, as in redis-cli')
            [CompletionResult]::new('-a', '-a', [CompletionResultType]::ParameterName, 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users')
            [CompletionResult]::new('--pass', '--pass', [CompletionResultType]::ParameterName, 'Password (a URL''s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'User name for ACL authentication (with a password)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Database number to SELECT (a URL''s /db wins)')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'Database number to SELECT (a URL''s /db wins)')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'CA certificate bundle (PEM) to verify the server with, instead of the system''s')
            [CompletionResult]::new('--cacertdir', '--cacertdir', [CompletionResultType]::ParameterName, 'Directory of trusted CA certificates (PEM), instead of the system''s')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM) for mutual TLS; needs --key')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) of --cert')
            [CompletionResult]::new('--sni', '--sni', [CompletionResultType]::ParameterName, 'TLS server name to send and verify, instead of the host')
            [CompletionResult]::new('--endpoint-type', '--endpoint-type', [CompletionResultType]::ParameterName, 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)')
            [CompletionResult]::new('--dns-server', '--dns-server', [CompletionResultType]::ParameterName, 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system''s; the DNS watch uses it too')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON object (fields: type, v, endpoint, address, tls, exit_code, server, clients, errorstats, caveats)')
            [CompletionResult]::new('--azure-events', '--azure-events', [CompletionResultType]::ParameterName, 'Also check Azure Cache for Redis''s maintenance channel: may this user SUBSCRIBE to AzureRedisEvents, and which clients listen to it. The default on an Azure Cache host name')
            [CompletionResult]::new('--askpass', '--askpass', [CompletionResultType]::ParameterName, 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH')
            [CompletionResult]::new('--tls', '--tls', [CompletionResultType]::ParameterName, 'Connect with TLS (implied by rediss://)')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Do not verify the server''s certificate or name (prints a warning)')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (-h is the host, as in redis-cli)')
            break
        }
        'maintwatch;decide' {
            [CompletionResult]::new('--endpoint', '--endpoint', [CompletionResultType]::ParameterName, 'The endpoint as the client was configured: HOST:PORT (a name or an address)')
            [CompletionResult]::new('--current', '--current', [CompletionResultType]::ParameterName, 'The address the client is connected to (the one being retired)')
            [CompletionResult]::new('--successor', '--successor', [CompletionResultType]::ParameterName, 'The endpoint the MOVING named, if it named one')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'The window the MOVING declared (whole seconds; 0 means "already under way")')
            [CompletionResult]::new('--poll', '--poll', [CompletionResultType]::ParameterName, 'Interval between DNS polls (the reference client uses 1 s)')
            [CompletionResult]::new('--dns-server', '--dns-server', [CompletionResultType]::ParameterName, 'Ask this nameserver (IP[:PORT]) instead of the system''s resolver')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the outcome as one JSON object')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'maintwatch;simulate' {
            [CompletionResult]::new('--scenario-file', '--scenario-file', [CompletionResultType]::ParameterName, 'Play a scenario file from disk instead (format: scenarios/README.md)')
            [CompletionResult]::new('--speed', '--speed', [CompletionResultType]::ParameterName, 'Run the scenario clock this many times faster (the DNS TTL shrinks with it; frames do not change, so MOVING still declares its real window). Stalls are not shortened: they last real seconds, because a client''s timeouts do')
            [CompletionResult]::new('--proxy-api', '--proxy-api', [CompletionResultType]::ParameterName, 'Also serve the HTTP API of cae-resp-proxy (the Docker proxy of the client libraries'' maintenance test suites) on [HOST:]PORT, loopback unless a host is given; its nodes are --listen and relay to --upstream (docs/proxy-api.md). Without --scenario nothing happens until the API asks')
            [CompletionResult]::new('--fault-injector-api', '--fault-injector-api', [CompletionResultType]::ParameterName, 'Serve the HTTP API of Redis Enterprise''s fault injector on [HOST:]PORT, loopback unless a host is given, in place of a scenario: the client libraries'' real-cluster suites create databases and trigger maintenances through it, each played on the simulator''s proxies (docs/fault-injector.md)')
            [CompletionResult]::new('--endpoints-file', '--endpoints-file', [CompletionResultType]::ParameterName, 'Write the fault injector''s databases here, as the suites read them (REDIS_ENDPOINTS_CONFIG_PATH), again whenever one is created, deleted or moved')
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'The proxy API''s nodes, comma-separated: [HOST:]PORT each, loopback unless a host is given (the proxy''s LISTEN_PORT; default 6379)')
            [CompletionResult]::new('--default-interceptors', '--default-interceptors', [CompletionResultType]::ParameterName, 'The proxy''s default interceptors to install, comma-separated: cluster (CLUSTER SLOTS, SHARDS, NODES answered with the nodes), hitless (the opt-in answered +OK), logger (the proxy''s DEFAULT_INTERCEPTORS; default none)')
            [CompletionResult]::new('--announce', '--announce', [CompletionResultType]::ParameterName, 'The host the cluster interceptor names every node by instead of its listening address: `--announce 0.0.0.0` answers as the proxy does behind redis-py''s compose file (LISTEN_HOST=0.0.0.0) while listening on loopback only')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Port shared by every proxy (0 picks a free one)')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Port shared by every proxy (0 picks a free one)')
            [CompletionResult]::new('--password', '--password', [CompletionResultType]::ParameterName, 'Require this password (AUTH / HELLO 3 AUTH). Never printed')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'The ACL user the password belongs to (default: default)')
            [CompletionResult]::new('--upstream', '--upstream', [CompletionResultType]::ParameterName, 'Relay every command the simulator does not own (all but HELLO, AUTH, QUIT, CLIENT SETINFO/MAINT_NOTIFICATIONS and a cluster''s topology) to this Redis, one upstream connection per client connection: redis://[user:pass@]host:port, unix://[user:pass@]/path/to/redis.sock, or `spawn` to start redis-server from PATH on a free loopback port (relayed through its Unix socket; stopped at exit)')
            [CompletionResult]::new('--grade-json', '--grade-json', [CompletionResultType]::ParameterName, 'Also write the grade to FILE as JSON lines: `grade_input` (what was observed, for `replay --grade`) and `grade` (implies --grade)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Also write a self-contained HTML page of the run to FILE: the timeline drawn and classed by the grade''s verdicts, the grade, the summary and the frames sent (docs/report.md; implies --grade)')
            [CompletionResult]::new('--client-output', '--client-output', [CompletionResultType]::ParameterName, 'Where the client''s (CMD''s) stdout and stderr go (default: a new file in the temporary directory, named in the grade)')
            [CompletionResult]::new('--pcap', '--pcap', [CompletionResultType]::ParameterName, 'Capture the run''s own packets (its proxies and its DNS, on the loopback) into FILE, in the pcap format `maintwatch pcap` and tcpdump read: the way to keep a capture of a run that sits in a network namespace of its own, where a tcpdump outside sees nothing. Needs CAP_NET_RAW (root, or the namespace''s)')
            [CompletionResult]::new('--scenario', '--scenario', [CompletionResultType]::ParameterName, 'The embedded scenario to play (see --list; default single-proxy, or none with --proxy-api)')
            [CompletionResult]::new('--loop', '--loop', [CompletionResultType]::ParameterName, 'Play the scenario again and again; between rounds DNS and listeners are reset and every connection is closed so clients start over')
            [CompletionResult]::new('--list', '--list', [CompletionResultType]::ParameterName, 'List the scenarios, one line each, and exit')
            [CompletionResult]::new('--no-catch-up', '--no-catch-up', [CompletionResultType]::ParameterName, 'Do not replay the last MIGRATED/FAILED_OVER after an opt-in''s +OK')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print where it listens and the scenario''s steps only, not every connection and command')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print where it listens and the scenario''s steps only, not every connection and command')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print every DNS query the simulator answers. By default only the first from each source address is printed (a client may ask hundreds of times) and the rest are counted at the end')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print every DNS query the simulator answers. By default only the first from each source address is printed (a client may ask hundreds of times) and the rest are counted at the end')
            [CompletionResult]::new('--grade', '--grade', [CompletionResultType]::ParameterName, 'At the end, grade each client''s behaviour against docs/protocol.md (a table on stdout; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged or nothing was). Stalls (`stall` steps) last real seconds whatever --speed, since the client''s timers do; `timeout-restored` is judged only at --speed 1')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'maintwatch;demo' {
            [CompletionResult]::new('--scenario', '--scenario', [CompletionResultType]::ParameterName, 'The embedded scenario to play (see --list; default single-proxy)')
            [CompletionResult]::new('--scenario-file', '--scenario-file', [CompletionResultType]::ParameterName, 'Play a scenario file from disk instead (format: scenarios/README.md)')
            [CompletionResult]::new('--speed', '--speed', [CompletionResultType]::ParameterName, 'Run the scenario clock this many times faster (the DNS TTL shrinks with it; frames do not change, so MOVING still declares its real window). Stalls are not shortened: they last real seconds, because a client''s timeouts do')
            [CompletionResult]::new('--capture', '--capture', [CompletionResultType]::ParameterName, 'Also write the watch''s JSON lines to FILE (a capture `replay` reads back)')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Also write a self-contained HTML page of the run to FILE at the end: the watch''s timeline drawn, its summary and the frames it read (docs/report.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour: auto (a terminal and no NO_COLOR), always, never')
            [CompletionResult]::new('--list', '--list', [CompletionResultType]::ParameterName, 'List the scenarios, one line each, and exit (as `simulate --list`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'maintwatch;replay' {
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Also write a self-contained HTML page of the files read to FILE: the timeline drawn (classed by the grade''s verdicts with --grade), the summary and the raw frames (docs/report.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour: auto, always, never')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Compare each frame''s fresh parse, and what the timeline computes again, with what was recorded; exit 1 on any difference')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'With --check, also print the timeline')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'With --check, also print the timeline')
            [CompletionResult]::new('--grade', '--grade', [CompletionResultType]::ParameterName, 'Grade again, with this maintwatch''s judge, the `grade_input` lines that `simulate --grade-json` and `pcap --grade --json` wrote (a table, or `grade_input` and `grade` lines with --json; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the re-parsed lines as JSON instead of human lines')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'maintwatch;pcap' {
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'The server''s port (repeatable); without it, streams whose client starts with a RESP command are read')
            [CompletionResult]::new('--sim-speed', '--sim-speed', [CompletionResultType]::ParameterName, 'The capture is of the built-in simulator running N times faster (`simulate --speed N`): offsets after a MOVING are read at that speed')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Also write a self-contained HTML page of the capture to FILE: the timeline drawn (with --grade, classed by the grade''s verdicts), the grade, the summary and the raw frames (docs/report.md)')
            [CompletionResult]::new('--dns-port', '--dns-port', [CompletionResultType]::ParameterName, 'UDP port DNS answers come from (repeatable; default 53): what the application resolved. An answer counts for a client only where it can be tied to it: not where another client on the same host went where it pointed (docs/protocol.md, section 8)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour: auto, always, never')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON object per line (the watch''s schema plus pcap_* lines; docs/jsonl.md)')
            [CompletionResult]::new('--grade', '--grade', [CompletionResultType]::ParameterName, 'At the end, grade each client with the judge of `simulate --grade` (a table, or `grade_input` and `grade` lines with --json; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged). Clients are grouped by CLIENT SETINFO lib-name/lib-ver when the capture has it, else by host')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'maintwatch;certify' {
            [CompletionResult]::new('--scenarios', '--scenarios', [CompletionResultType]::ParameterName, 'The scenarios to play, comma-separated, in this order (default: every scenario listed below as played by default); `default`, `cluster`, `azure` and `robustness` name the groups below')
            [CompletionResult]::new('--junit', '--junit', [CompletionResultType]::ParameterName, 'Write a JUnit XML report to FILE: one testsuite per scenario, one testcase per rule and notification (FAIL: <failure>, NOT JUDGED: <skipped>)')
            [CompletionResult]::new('--grade-json', '--grade-json', [CompletionResultType]::ParameterName, 'Write every scenario''s grade to FILE as JSON lines (`grade_input` and `grade`, each naming its scenario), as `simulate --grade-json` does for one')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write one self-contained HTML page to FILE with a section per scenario: its verdict, its timeline drawn, and its grade (docs/report.md)')
            [CompletionResult]::new('--speed', '--speed', [CompletionResultType]::ParameterName, 'Run each scenario''s clock this many times faster. Above 1 the timeout rules are NOT JUDGED, and a client acting on a MOVING''s declared window acts late')
            [CompletionResult]::new('--upstream', '--upstream', [CompletionResultType]::ParameterName, 'The Redis every command the simulator does not own is relayed to: `spawn` starts a fresh redis-server from PATH for each scenario; or redis://[user:pass@]host:port, or unix://[user:pass@]/path')
            [CompletionResult]::new('--client-output', '--client-output', [CompletionResultType]::ParameterName, 'The directory for the client''s output, one `SCENARIO.log` per scenario (default: a new directory in the temporary directory, named at the end)')
            [CompletionResult]::new('--pcap', '--pcap', [CompletionResultType]::ParameterName, 'Capture each scenario''s packets into DIR/SCENARIO.pcap (as `simulate --pcap`): how a run in a network namespace of its own is kept as a capture. Needs CAP_NET_RAW (root, or the namespace''s)')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'How many scenarios play at once. Each plays in a process and a network namespace of its own (its own loopback, addresses, ports, DNS, redis-server and client), so none can reach another''s; the longest start first, and the reports keep the list''s order. 1 plays them one after another, in order. The default, 8, is what was measured on 2 cores (docs/certify.md): the scenarios mostly wait on their clocks, and eight at once bring the default set to the length of its longest scenario (47 s, against 294 s one at a time and 55 s six at a time) with the same verdicts, on about 1.2 of the 2 cores; more gain nothing. Only with --upstream spawn: one shared server is played one scenario at a time')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'How many scenarios play at once. Each plays in a process and a network namespace of its own (its own loopback, addresses, ports, DNS, redis-server and client), so none can reach another''s; the longest start first, and the reports keep the list''s order. 1 plays them one after another, in order. The default, 8, is what was measured on 2 cores (docs/certify.md): the scenarios mostly wait on their clocks, and eight at once bring the default set to the length of its longest scenario (47 s, against 294 s one at a time and 55 s six at a time) with the same verdicts, on about 1.2 of the 2 cores; more gain nothing. Only with --upstream spawn: one shared server is played one scenario at a time')
            [CompletionResult]::new('--runs', '--runs', [CompletionResultType]::ParameterName, 'Play each scenario N times, each time with a fresh simulator, redis-server and client. Each cell then says how often each verdict came (`F mov 1/20`: moved-before-close failed in 1 of 20 runs), JUnit has each test case once per run (`run 3/20`), and the exit code is the worst run''s. For a client whose behaviour depends on its own scheduling, a cell of one run says what happened once; of 20, how often')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'maintwatch;help' {
            [CompletionResult]::new('watch', 'watch', [CompletionResultType]::ParameterValue, 'Connect with a forced opt-in and show every notification, its bytes, and what follows')
            [CompletionResult]::new('decode', 'decode', [CompletionResultType]::ParameterValue, 'Parse frames from files or stdin (raw, escaped or hex) and show each beside its bytes')
            [CompletionResult]::new('probe', 'probe', [CompletionResultType]::ParameterValue, 'Probe endpoints: does each accept the maintenance-notification opt-in? (exit codes in --help)')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Why no notifications? The server''s answers, and what each known client would do here')
            [CompletionResult]::new('decide', 'decide', [CompletionResultType]::ParameterValue, 'Run the handoff decision a client makes on a MOVING, in dry-run, against live DNS')
            [CompletionResult]::new('simulate', 'simulate', [CompletionResultType]::ParameterValue, 'Run a simulated deployment that sends maintenance notifications (for trying clients)')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Run the simulator and watch it: see maintenance notifications with nothing else running')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Re-parse a JSON-lines capture and show its timeline; --check turns it into a regression test')
            [CompletionResult]::new('pcap', 'pcap', [CompletionResultType]::ParameterValue, 'Read a packet capture: what the application''s own connections saw of a maintenance')
            [CompletionResult]::new('certify', 'certify', [CompletionResultType]::ParameterValue, 'Certify a client app: run it under every scenario, grade it, write JUnit (exit codes in --help)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'maintwatch;help;watch' {
            break
        }
        'maintwatch;help;decode' {
            break
        }
        'maintwatch;help;probe' {
            break
        }
        'maintwatch;help;doctor' {
            break
        }
        'maintwatch;help;decide' {
            break
        }
        'maintwatch;help;simulate' {
            break
        }
        'maintwatch;help;demo' {
            break
        }
        'maintwatch;help;replay' {
            break
        }
        'maintwatch;help;pcap' {
            break
        }
        'maintwatch;help;certify' {
            break
        }
        'maintwatch;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
