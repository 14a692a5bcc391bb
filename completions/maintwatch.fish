# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_maintwatch_global_optspecs
    string join \n h/help V/version
end

function __fish_maintwatch_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_maintwatch_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_maintwatch_using_subcommand
    set -l cmd (__fish_maintwatch_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c maintwatch -n "__fish_maintwatch_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -s V -l version -d 'Print version'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "watch" -d 'Connect with a forced opt-in and show every notification, its bytes, and what follows'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "decode" -d 'Parse frames from files or stdin (raw, escaped or hex) and show each beside its bytes'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "probe" -d 'Probe endpoints: does each accept the maintenance-notification opt-in? (exit codes in --help)'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "doctor" -d 'Why no notifications? The server\'s answers, and what each known client would do here'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "decide" -d 'Run the handoff decision a client makes on a MOVING, in dry-run, against live DNS'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "simulate" -d 'Run a simulated deployment that sends maintenance notifications (for trying clients)'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "demo" -d 'Run the simulator and watch it: see maintenance notifications with nothing else running'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "replay" -d 'Re-parse a JSON-lines capture and show its timeline; --check turns it into a regression test'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "pcap" -d 'Read a packet capture: what the application\'s own connections saw of a maintenance'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "certify" -d 'Certify a client app: run it under every scenario, grade it, write JUnit (exit codes in --help)'
complete -c maintwatch -n "__fish_maintwatch_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l from -d 'Also watch the endpoints in FILE, one URL per line as `probe --from` reads them (`-` for standard input): a fleet' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l heartbeat -d 'Every DURATION, a heartbeat line per endpoint: connections up, opt-ins, time since the latest notification' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -s h -l host -d 'Server hostname or IP address [default: 127.0.0.1]' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -s p -l port -d 'Server port [default: 6379]' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -s u -l uri -d 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without \':\' is the password, as in redis-cli' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -s a -l pass -d 'Password (a URL\'s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l user -d 'User name for ACL authentication (with a password)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -s n -l db -d 'Database number to SELECT (a URL\'s /db wins)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l cacert -d 'CA certificate bundle (PEM) to verify the server with, instead of the system\'s' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l cacertdir -d 'Directory of trusted CA certificates (PEM), instead of the system\'s' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l key -d 'Private key (PEM) of --cert' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l sni -d 'TLS server name to send and verify, instead of the host' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l endpoint-type -d 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)' -r -f -a "internal-ip\t'Ask MOVING to name an internal IP address'
internal-fqdn\t'Ask MOVING to name an internal hostname'
external-ip\t'Ask MOVING to name an external IP address'
external-fqdn\t'Ask MOVING to name an external hostname'
none\t'Ask MOVING to name no endpoint'
auto\t'Private/loopback/link-local address: internal, else external; TLS: fqdn, else ip'
server-default\t'Send a bare `ON`: the server picks'"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l connect-timeout -d 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l dns-server -d 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system\'s; the DNS watch uses it too' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l duration -d 'Stop after this long (e.g. 90s, 10m, 1h)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l count -d 'Stop after N maintenance notifications' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l capture -d 'Also write JSON lines to FILE, flushed line by line, alongside the human output. Created mode 0600 (pub/sub payloads can be in it); an existing file is refused unless --append or --force says what to do with it' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l report -d 'Write a self-contained HTML page of the watch to FILE at exit, and again on each SIGHUP (which then no longer stops the watch): the timeline drawn, the summary and the frames read (docs/report.md). A fleet\'s page draws its first endpoint' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l capture-max-size -d 'With --capture: before a line would take the file past SIZE (e.g. 100M, 1G), move it to FILE.1 (FILE.1 to FILE.2 ...) and start a new FILE. SIGHUP reopens FILE (logrotate)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l capture-keep -d 'With --capture-max-size: how many rotated files to keep' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l traffic -d 'Send a PING every interval and report latency and errors, attributing failures to the open window' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l connections -d 'Open N connections to the endpoint (a node-wide close takes them all at once)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l subscribe -d 'SUBSCRIBE to CHANNEL on each connection (repeatable): pub/sub messages are shown beside maintenance notifications, as what they are' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l topology-interval -d 'With a cluster, read its topology again this often, to follow a failover or a reshard that no notification announces (it is also read again after an SMIGRATED, and when a node\'s connection closes or fails)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l dns-interval -d 'How often to poll the hostname\'s A/AAAA records' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l dns-interval-open -d 'How often to poll them while a maintenance window is open (the change comes then)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l handoff-poll -d 'Interval of the dry-run\'s DNS polls (the reference client uses 1 s)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l sim-speed -d 'The endpoint is the built-in simulator running N times faster (`simulate --speed N`): declared windows, polls and offsets are read at that speed. Without it, the speed the simulator announces in its HELLO reply is used (1 for any other server)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l color -d 'Colour: auto (a terminal and no NO_COLOR), always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l time-format -d 'How a line\'s time is shown: compact (HH:MM:SS.mmm, local), full (to the microsecond, local) or rfc3339 (UTC, as in the JSON lines)' -r -f -a "compact\t'Local time to the millisecond, `HH:MM:SS.mmm`: keeps the common lines within 80 columns'
full\t'Local time to the microsecond, `HH:MM:SS.ffffff`'
rfc3339\t'The line\'s own timestamp: RFC 3339, UTC, microseconds (as in the JSON lines)'"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l metrics -d 'Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464): the Prometheus text format, or OpenMetrics when the scraper asks for it (docs/metrics.md)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l otlp -d 'Push the same measurements to an OpenTelemetry collector over OTLP/HTTP (protobuf), e.g. http://127.0.0.1:4318/v1/metrics or https://..., every --otlp-interval and once at exit; `env` takes the endpoint from OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT. Headers, CA certificate, timeout and gzip follow the OTEL_EXPORTER_OTLP_* variables; header values are never printed. A collector that is down is retried with backoff and never delays the watch (docs/metrics.md, docs/service.md)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l otlp-interval -d 'How often --otlp pushes' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l exec -d 'Run CMD with `sh -c` once per maintenance event and once for its outcome (repeatable): the JSON line on its stdin, MAINTWATCH_TYPE, MAINTWATCH_EVENT and MAINTWATCH_ENDPOINT in its environment, never a password. At most 4 run at once; a slow or failing hook never delays the watch' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l exec-on -d 'The line types that run --exec (comma list of JSON `type`s, or `all`). Default: each new maintenance notification, a socket close past the declared window, and the dry-run verdict' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l exec-timeout -d 'Kill a hook (its process group) still running after this long' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l askpass -d 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l tls -d 'Connect with TLS (implied by rediss://)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l insecure -d 'Do not verify the server\'s certificate or name (prints a warning)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l help -d 'Print help (-h is the host, as in redis-cli)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l require -d 'Exit (with the probe exit code) when the opt-in is refused or RESP3 is unavailable, instead of watching whatever pushes arrive'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l json -d 'One JSON object per line on stdout instead of human lines (schema: docs/jsonl.md)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l append -d 'With --capture: add to an existing file instead of refusing it'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l force -d 'With --capture: empty an existing file instead of refusing it'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l azure-events -d 'Listen to Azure Cache for Redis\'s maintenance channel, AzureRedisEvents, on the watched connection: each message is an event of the timeline, parsed beside its bytes. The default when the host is an Azure Cache name (*.redis.cache.windows.net and the sovereign clouds\'), as StackExchange.Redis decides'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l no-azure-events -d 'Do not listen to AzureRedisEvents, even on an Azure Cache host'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l tracking -d 'CLIENT TRACKING ON BCAST on each connection: invalidations are shown as what they are'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l cluster -d 'Watch every node of an OSS cluster (found with CLUSTER SHARDS, else CLUSTER SLOTS); the default when HELLO reports mode `cluster`'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l no-cluster -d 'Watch only the endpoint given, even when HELLO reports mode `cluster`'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l masters-only -d 'With a cluster, watch the masters only (not the replicas)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l no-dns -d 'Do not watch DNS'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l no-handoff -d 'Do not run the handoff decision in dry-run'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -s v -l verbose -d 'Also show the lines that are only detail: each successful --traffic PING (failures are always shown; the summary has the latency figures)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand watch" -l clients -d 'Under each maintenance notification, one more line: what each known client\'s parser does with that frame (acts, ignores, FAILS and how), for the clients\' own auto endpoint type unless --endpoint-type names one (human output only; docs/clients.md)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decode" -l format -d 'How the input encodes the bytes' -r -f -a "auto\t'A hex dump if it looks like `xxd` or `hexdump -C` output, escaped text if it has `\\r\\n` escapes, hex if only hex digits, else raw bytes'
raw\t'The bytes as they are'
escaped\t'Text with escapes as people paste it: `>4\\r\\n$6\\r\\nMOVING\\r\\n...`; each line\'s indentation is ignored, so the raw-bytes lines `watch` prints can be pasted as they are'
hex\t'Hex digits (whitespace, `0x` and `:` between bytes are ignored), or `xxd` / `hexdump -C` output (offsets and the ASCII column are skipped)'"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decode" -l endpoint-type -d 'With --clients: the moving-endpoint-type the clients asked for (it decides what node-redis does with a MOVING that names no endpoint); auto: each client\'s own auto' -r -f -a "internal-ip\t'Ask MOVING to name an internal IP address'
internal-fqdn\t'Ask MOVING to name an internal hostname'
external-ip\t'Ask MOVING to name an external IP address'
external-fqdn\t'Ask MOVING to name an external hostname'
none\t'Ask MOVING to name no endpoint'
auto\t'Private/loopback/link-local address: internal, else external; TLS: fqdn, else ip'
server-default\t'Send a bare `ON`: the server picks'"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decode" -l json -d 'One JSON object per frame (schema: docs/jsonl.md)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decode" -l clients -d 'Also say what each known client\'s parser does with each frame: acts on it (with the values it reads), ignores it, or fails (docs/clients.md)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decode" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l from -d 'Also read endpoints from FILE, one per line; `-` reads standard input' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l concurrency -d 'How many endpoints to probe at once (each is one socket: within the open-file limit)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l linger -d 'After an accepted opt-in, listen this long for a catch-up replay that missed the reply\'s read (measured at 16-17 ms after the +OK); 0 disables' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -s h -l host -d 'Server hostname or IP address [default: 127.0.0.1]' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -s p -l port -d 'Server port [default: 6379]' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -s u -l uri -d 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without \':\' is the password, as in redis-cli' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -s a -l pass -d 'Password (a URL\'s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l user -d 'User name for ACL authentication (with a password)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -s n -l db -d 'Database number to SELECT (a URL\'s /db wins)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l cacert -d 'CA certificate bundle (PEM) to verify the server with, instead of the system\'s' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l cacertdir -d 'Directory of trusted CA certificates (PEM), instead of the system\'s' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l key -d 'Private key (PEM) of --cert' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l sni -d 'TLS server name to send and verify, instead of the host' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l endpoint-type -d 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)' -r -f -a "internal-ip\t'Ask MOVING to name an internal IP address'
internal-fqdn\t'Ask MOVING to name an internal hostname'
external-ip\t'Ask MOVING to name an external IP address'
external-fqdn\t'Ask MOVING to name an external hostname'
none\t'Ask MOVING to name no endpoint'
auto\t'Private/loopback/link-local address: internal, else external; TLS: fqdn, else ip'
server-default\t'Send a bare `ON`: the server picks'"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l connect-timeout -d 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l dns-server -d 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system\'s; the DNS watch uses it too' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l json -d 'One JSON object per endpoint per line (fields: type, v, endpoint, address, tls, outcome, exit_code, detail, tls_failure, hello, endpoint_type, maintenance, pushes, elapsed_ms)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -s q -l quiet -d 'Print nothing on standard output: only the exit code tells (warnings still go to stderr)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l askpass -d 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l tls -d 'Connect with TLS (implied by rediss://)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l insecure -d 'Do not verify the server\'s certificate or name (prints a warning)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand probe" -l help -d 'Print help (-h is the host, as in redis-cli)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l clients -d '`--clients all`: also each client\'s version history (the releases that changed what it does, and what the client tier measured), which the screen leaves out to fit; `--json` always has it' -r -f -a "all\t''"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -s h -l host -d 'Server hostname or IP address [default: 127.0.0.1]' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -s p -l port -d 'Server port [default: 6379]' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -s u -l uri -d 'Server URI: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. A user-info without \':\' is the password, as in redis-cli' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -s a -l pass -d 'Password (a URL\'s password wins). Prefer the REDISCLI_AUTH environment variable: a password on the command line is visible to other local users' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l user -d 'User name for ACL authentication (with a password)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -s n -l db -d 'Database number to SELECT (a URL\'s /db wins)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l cacert -d 'CA certificate bundle (PEM) to verify the server with, instead of the system\'s' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l cacertdir -d 'Directory of trusted CA certificates (PEM), instead of the system\'s' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l key -d 'Private key (PEM) of --cert' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l sni -d 'TLS server name to send and verify, instead of the host' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l endpoint-type -d 'What to ask MOVING to name (CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...)' -r -f -a "internal-ip\t'Ask MOVING to name an internal IP address'
internal-fqdn\t'Ask MOVING to name an internal hostname'
external-ip\t'Ask MOVING to name an external IP address'
external-fqdn\t'Ask MOVING to name an external hostname'
none\t'Ask MOVING to name no endpoint'
auto\t'Private/loopback/link-local address: internal, else external; TLS: fqdn, else ip'
server-default\t'Send a bare `ON`: the server picks'"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l connect-timeout -d 'One deadline for the TCP connect, TLS and the whole handshake (HELLO, AUTH, SELECT, the opt-in) together, per address; resolving the host gets the same again (seconds, or 500ms / 2s)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l dns-server -d 'Resolve the host through this nameserver (IP[:PORT], port 53 by default) instead of the system\'s; the DNS watch uses it too' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l json -d 'One JSON object (fields: type, v, endpoint, address, tls, exit_code, server, clients, errorstats, caveats)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l azure-events -d 'Also check Azure Cache for Redis\'s maintenance channel: may this user SUBSCRIBE to AzureRedisEvents, and which clients listen to it. The default on an Azure Cache host name'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l askpass -d 'Read the password from the terminal without echo (as redis-cli); when standard input is not a terminal, its first line. Wins over -a and REDISCLI_AUTH'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l tls -d 'Connect with TLS (implied by rediss://)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l insecure -d 'Do not verify the server\'s certificate or name (prints a warning)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand doctor" -l help -d 'Print help (-h is the host, as in redis-cli)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decide" -l endpoint -d 'The endpoint as the client was configured: HOST:PORT (a name or an address)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decide" -l current -d 'The address the client is connected to (the one being retired)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decide" -l successor -d 'The endpoint the MOVING named, if it named one' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decide" -l window -d 'The window the MOVING declared (whole seconds; 0 means "already under way")' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decide" -l poll -d 'Interval between DNS polls (the reference client uses 1 s)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decide" -l dns-server -d 'Ask this nameserver (IP[:PORT]) instead of the system\'s resolver' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decide" -l json -d 'Print the outcome as one JSON object'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand decide" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l scenario-file -d 'Play a scenario file from disk instead (format: scenarios/README.md)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l speed -d 'Run the scenario clock this many times faster (the DNS TTL shrinks with it; frames do not change, so MOVING still declares its real window). Stalls are not shortened: they last real seconds, because a client\'s timeouts do' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l proxy-api -d 'Also serve the HTTP API of cae-resp-proxy (the Docker proxy of the client libraries\' maintenance test suites) on [HOST:]PORT, loopback unless a host is given; its nodes are --listen and relay to --upstream (docs/proxy-api.md). Without --scenario nothing happens until the API asks' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l fault-injector-api -d 'Serve the HTTP API of Redis Enterprise\'s fault injector on [HOST:]PORT, loopback unless a host is given, in place of a scenario: the client libraries\' real-cluster suites create databases and trigger maintenances through it, each played on the simulator\'s proxies (docs/fault-injector.md)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l endpoints-file -d 'Write the fault injector\'s databases here, as the suites read them (REDIS_ENDPOINTS_CONFIG_PATH), again whenever one is created, deleted or moved' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l listen -d 'The proxy API\'s nodes, comma-separated: [HOST:]PORT each, loopback unless a host is given (the proxy\'s LISTEN_PORT; default 6379)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l default-interceptors -d 'The proxy\'s default interceptors to install, comma-separated: cluster (CLUSTER SLOTS, SHARDS, NODES answered with the nodes), hitless (the opt-in answered +OK), logger (the proxy\'s DEFAULT_INTERCEPTORS; default none)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l announce -d 'The host the cluster interceptor names every node by instead of its listening address: `--announce 0.0.0.0` answers as the proxy does behind redis-py\'s compose file (LISTEN_HOST=0.0.0.0) while listening on loopback only' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -s p -l port -d 'Port shared by every proxy (0 picks a free one)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l password -d 'Require this password (AUTH / HELLO 3 AUTH). Never printed' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l user -d 'The ACL user the password belongs to (default: default)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l upstream -d 'Relay every command the simulator does not own (all but HELLO, AUTH, QUIT, CLIENT SETINFO/MAINT_NOTIFICATIONS and a cluster\'s topology) to this Redis, one upstream connection per client connection: redis://[user:pass@]host:port, unix://[user:pass@]/path/to/redis.sock, or `spawn` to start redis-server from PATH on a free loopback port (relayed through its Unix socket; stopped at exit)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l grade-json -d 'Also write the grade to FILE as JSON lines: `grade_input` (what was observed, for `replay --grade`) and `grade` (implies --grade)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l report -d 'Also write a self-contained HTML page of the run to FILE: the timeline drawn and classed by the grade\'s verdicts, the grade, the summary and the frames sent (docs/report.md; implies --grade)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l client-output -d 'Where the client\'s (CMD\'s) stdout and stderr go (default: a new file in the temporary directory, named in the grade)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l pcap -d 'Capture the run\'s own packets (its proxies and its DNS, on the loopback) into FILE, in the pcap format `maintwatch pcap` and tcpdump read: the way to keep a capture of a run that sits in a network namespace of its own, where a tcpdump outside sees nothing. Needs CAP_NET_RAW (root, or the namespace\'s)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l scenario -d 'The embedded scenario to play (see --list; default single-proxy, or none with --proxy-api)' -r -f -a "single-proxy\t''
multi-proxy\t''
dns-race\t''
shard-migration\t''
failover\t''
silent-shrink\t''
silent-widening\t''
oss-cluster\t''
refusing\t''
peer-variants\t''
no-closing-notification\t''
optin-lost\t''
ipv6-target\t''
cascading-smigrated\t''
explicit-target\t''
azure-failover\t''
azure-replica\t''
azure-scale\t''
robust-seq-same\t''
robust-seq-different\t''
robust-time-zero\t''
robust-time-negative\t''
robust-time-huge\t''
robust-null-target\t''
robust-unresolvable\t''
robust-ipv6-bracketed\t''
robust-ipv6-bare\t''
robust-lone-migrated\t''
robust-lone-failed-over\t''
robust-lone-smigrated\t''
robust-unknown-type\t''
robust-smoving\t''
robust-sfailing-over\t''
robust-extra-fields\t''
robust-missing-fields\t''
robust-wrong-types\t''
robust-smigrated-pairs\t''
robust-smigrated-flat\t''
robust-sunsubscribe\t''
robust-push-pipeline\t''
robust-push-multi\t''
robust-push-blpop\t''
robust-push-pubsub\t''"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l loop -d 'Play the scenario again and again; between rounds DNS and listeners are reset and every connection is closed so clients start over'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l list -d 'List the scenarios, one line each, and exit'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l no-catch-up -d 'Do not replay the last MIGRATED/FAILED_OVER after an opt-in\'s +OK'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -s q -l quiet -d 'Print where it listens and the scenario\'s steps only, not every connection and command'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -s v -l verbose -d 'Print every DNS query the simulator answers. By default only the first from each source address is printed (a client may ask hundreds of times) and the rest are counted at the end'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -l grade -d 'At the end, grade each client\'s behaviour against docs/protocol.md (a table on stdout; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged or nothing was). Stalls (`stall` steps) last real seconds whatever --speed, since the client\'s timers do; `timeout-restored` is judged only at --speed 1'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand simulate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand demo" -l scenario -d 'The embedded scenario to play (see --list; default single-proxy)' -r -f -a "single-proxy\t''
multi-proxy\t''
dns-race\t''
shard-migration\t''
failover\t''
silent-shrink\t''
silent-widening\t''
oss-cluster\t''
refusing\t''
peer-variants\t''
no-closing-notification\t''
optin-lost\t''
ipv6-target\t''
cascading-smigrated\t''
explicit-target\t''
azure-failover\t''
azure-replica\t''
azure-scale\t''
robust-seq-same\t''
robust-seq-different\t''
robust-time-zero\t''
robust-time-negative\t''
robust-time-huge\t''
robust-null-target\t''
robust-unresolvable\t''
robust-ipv6-bracketed\t''
robust-ipv6-bare\t''
robust-lone-migrated\t''
robust-lone-failed-over\t''
robust-lone-smigrated\t''
robust-unknown-type\t''
robust-smoving\t''
robust-sfailing-over\t''
robust-extra-fields\t''
robust-missing-fields\t''
robust-wrong-types\t''
robust-smigrated-pairs\t''
robust-smigrated-flat\t''
robust-sunsubscribe\t''
robust-push-pipeline\t''
robust-push-multi\t''
robust-push-blpop\t''
robust-push-pubsub\t''"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand demo" -l scenario-file -d 'Play a scenario file from disk instead (format: scenarios/README.md)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand demo" -l speed -d 'Run the scenario clock this many times faster (the DNS TTL shrinks with it; frames do not change, so MOVING still declares its real window). Stalls are not shortened: they last real seconds, because a client\'s timeouts do' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand demo" -l capture -d 'Also write the watch\'s JSON lines to FILE (a capture `replay` reads back)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand demo" -l report -d 'Also write a self-contained HTML page of the run to FILE at the end: the watch\'s timeline drawn, its summary and the frames it read (docs/report.md)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand demo" -l color -d 'Colour: auto (a terminal and no NO_COLOR), always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand demo" -l list -d 'List the scenarios, one line each, and exit (as `simulate --list`)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand demo" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand replay" -l report -d 'Also write a self-contained HTML page of the files read to FILE: the timeline drawn (classed by the grade\'s verdicts with --grade), the summary and the raw frames (docs/report.md)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand replay" -l color -d 'Colour: auto, always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand replay" -l check -d 'Compare each frame\'s fresh parse, and what the timeline computes again, with what was recorded; exit 1 on any difference'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand replay" -s v -l verbose -d 'With --check, also print the timeline'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand replay" -l grade -d 'Grade again, with this maintwatch\'s judge, the `grade_input` lines that `simulate --grade-json` and `pcap --grade --json` wrote (a table, or `grade_input` and `grade` lines with --json; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand replay" -l json -d 'Print the re-parsed lines as JSON instead of human lines'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand replay" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand pcap" -l port -d 'The server\'s port (repeatable); without it, streams whose client starts with a RESP command are read' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand pcap" -l sim-speed -d 'The capture is of the built-in simulator running N times faster (`simulate --speed N`): offsets after a MOVING are read at that speed' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand pcap" -l report -d 'Also write a self-contained HTML page of the capture to FILE: the timeline drawn (with --grade, classed by the grade\'s verdicts), the grade, the summary and the raw frames (docs/report.md)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand pcap" -l dns-port -d 'UDP port DNS answers come from (repeatable; default 53): what the application resolved. An answer counts for a client only where it can be tied to it: not where another client on the same host went where it pointed (docs/protocol.md, section 8)' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand pcap" -l color -d 'Colour: auto, always, never' -r -f -a "auto\t''
always\t''
never\t''"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand pcap" -l json -d 'One JSON object per line (the watch\'s schema plus pcap_* lines; docs/jsonl.md)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand pcap" -l grade -d 'At the end, grade each client with the judge of `simulate --grade` (a table, or `grade_input` and `grade` lines with --json; exit 0 when every rule passed, 1 when a rule failed, 9 when none failed but some were not judged). Clients are grouped by CLIENT SETINFO lib-name/lib-ver when the capture has it, else by host'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand pcap" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l scenarios -d 'The scenarios to play, comma-separated, in this order (default: every scenario listed below as played by default); `default`, `cluster`, `azure` and `robustness` name the groups below' -r -f -a "single-proxy\t''
multi-proxy\t''
dns-race\t''
shard-migration\t''
failover\t''
silent-shrink\t''
silent-widening\t''
oss-cluster\t''
refusing\t''
peer-variants\t''
no-closing-notification\t''
optin-lost\t''
ipv6-target\t''
cascading-smigrated\t''
explicit-target\t''
azure-failover\t''
azure-replica\t''
azure-scale\t''
robust-seq-same\t''
robust-seq-different\t''
robust-time-zero\t''
robust-time-negative\t''
robust-time-huge\t''
robust-null-target\t''
robust-unresolvable\t''
robust-ipv6-bracketed\t''
robust-ipv6-bare\t''
robust-lone-migrated\t''
robust-lone-failed-over\t''
robust-lone-smigrated\t''
robust-unknown-type\t''
robust-smoving\t''
robust-sfailing-over\t''
robust-extra-fields\t''
robust-missing-fields\t''
robust-wrong-types\t''
robust-smigrated-pairs\t''
robust-smigrated-flat\t''
robust-sunsubscribe\t''
robust-push-pipeline\t''
robust-push-multi\t''
robust-push-blpop\t''
robust-push-pubsub\t''
default\t''
cluster\t''
azure\t''
robustness\t''"
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l junit -d 'Write a JUnit XML report to FILE: one testsuite per scenario, one testcase per rule and notification (FAIL: <failure>, NOT JUDGED: <skipped>)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l grade-json -d 'Write every scenario\'s grade to FILE as JSON lines (`grade_input` and `grade`, each naming its scenario), as `simulate --grade-json` does for one' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l report -d 'Write one self-contained HTML page to FILE with a section per scenario: its verdict, its timeline drawn, and its grade (docs/report.md)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l speed -d 'Run each scenario\'s clock this many times faster. Above 1 the timeout rules are NOT JUDGED, and a client acting on a MOVING\'s declared window acts late' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l upstream -d 'The Redis every command the simulator does not own is relayed to: `spawn` starts a fresh redis-server from PATH for each scenario; or redis://[user:pass@]host:port, or unix://[user:pass@]/path' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l client-output -d 'The directory for the client\'s output, one `SCENARIO.log` per scenario (default: a new directory in the temporary directory, named at the end)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l pcap -d 'Capture each scenario\'s packets into DIR/SCENARIO.pcap (as `simulate --pcap`): how a run in a network namespace of its own is kept as a capture. Needs CAP_NET_RAW (root, or the namespace\'s)' -r -F
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -s j -l jobs -d 'How many scenarios play at once. Each plays in a process and a network namespace of its own (its own loopback, addresses, ports, DNS, redis-server and client), so none can reach another\'s; the longest start first, and the reports keep the list\'s order. 1 plays them one after another, in order. The default, 8, is what was measured on 2 cores (docs/certify.md): the scenarios mostly wait on their clocks, and eight at once bring the default set to the length of its longest scenario (47 s, against 294 s one at a time and 55 s six at a time) with the same verdicts, on about 1.2 of the 2 cores; more gain nothing. Only with --upstream spawn: one shared server is played one scenario at a time' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -l runs -d 'Play each scenario N times, each time with a fresh simulator, redis-server and client. Each cell then says how often each verdict came (`F mov 1/20`: moved-before-close failed in 1 of 20 runs), JUnit has each test case once per run (`run 3/20`), and the exit code is the worst run\'s. For a client whose behaviour depends on its own scheduling, a cell of one run says what happened once; of 20, how often' -r
complete -c maintwatch -n "__fish_maintwatch_using_subcommand certify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "watch" -d 'Connect with a forced opt-in and show every notification, its bytes, and what follows'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "decode" -d 'Parse frames from files or stdin (raw, escaped or hex) and show each beside its bytes'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "probe" -d 'Probe endpoints: does each accept the maintenance-notification opt-in? (exit codes in --help)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "doctor" -d 'Why no notifications? The server\'s answers, and what each known client would do here'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "decide" -d 'Run the handoff decision a client makes on a MOVING, in dry-run, against live DNS'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "simulate" -d 'Run a simulated deployment that sends maintenance notifications (for trying clients)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "demo" -d 'Run the simulator and watch it: see maintenance notifications with nothing else running'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "replay" -d 'Re-parse a JSON-lines capture and show its timeline; --check turns it into a regression test'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "pcap" -d 'Read a packet capture: what the application\'s own connections saw of a maintenance'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "certify" -d 'Certify a client app: run it under every scenario, grade it, write JUnit (exit codes in --help)'
complete -c maintwatch -n "__fish_maintwatch_using_subcommand help; and not __fish_seen_subcommand_from watch decode probe doctor decide simulate demo replay pcap certify help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
