_maintwatch() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="maintwatch"
                ;;
            maintwatch,certify)
                cmd="maintwatch__subcmd__certify"
                ;;
            maintwatch,decide)
                cmd="maintwatch__subcmd__decide"
                ;;
            maintwatch,decode)
                cmd="maintwatch__subcmd__decode"
                ;;
            maintwatch,demo)
                cmd="maintwatch__subcmd__demo"
                ;;
            maintwatch,doctor)
                cmd="maintwatch__subcmd__doctor"
                ;;
            maintwatch,help)
                cmd="maintwatch__subcmd__help"
                ;;
            maintwatch,pcap)
                cmd="maintwatch__subcmd__pcap"
                ;;
            maintwatch,probe)
                cmd="maintwatch__subcmd__probe"
                ;;
            maintwatch,replay)
                cmd="maintwatch__subcmd__replay"
                ;;
            maintwatch,simulate)
                cmd="maintwatch__subcmd__simulate"
                ;;
            maintwatch,watch)
                cmd="maintwatch__subcmd__watch"
                ;;
            maintwatch__subcmd__help,certify)
                cmd="maintwatch__subcmd__help__subcmd__certify"
                ;;
            maintwatch__subcmd__help,decide)
                cmd="maintwatch__subcmd__help__subcmd__decide"
                ;;
            maintwatch__subcmd__help,decode)
                cmd="maintwatch__subcmd__help__subcmd__decode"
                ;;
            maintwatch__subcmd__help,demo)
                cmd="maintwatch__subcmd__help__subcmd__demo"
                ;;
            maintwatch__subcmd__help,doctor)
                cmd="maintwatch__subcmd__help__subcmd__doctor"
                ;;
            maintwatch__subcmd__help,help)
                cmd="maintwatch__subcmd__help__subcmd__help"
                ;;
            maintwatch__subcmd__help,pcap)
                cmd="maintwatch__subcmd__help__subcmd__pcap"
                ;;
            maintwatch__subcmd__help,probe)
                cmd="maintwatch__subcmd__help__subcmd__probe"
                ;;
            maintwatch__subcmd__help,replay)
                cmd="maintwatch__subcmd__help__subcmd__replay"
                ;;
            maintwatch__subcmd__help,simulate)
                cmd="maintwatch__subcmd__help__subcmd__simulate"
                ;;
            maintwatch__subcmd__help,watch)
                cmd="maintwatch__subcmd__help__subcmd__watch"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        maintwatch)
            opts="-h -V --help --version watch decode probe doctor decide simulate demo replay pcap certify help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__certify)
            opts="-j -h --scenarios --junit --grade-json --report --speed --upstream --client-output --pcap --jobs --runs --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --scenarios)
                    COMPREPLY=($(compgen -W "single-proxy multi-proxy dns-race shard-migration failover silent-shrink silent-widening oss-cluster refusing peer-variants no-closing-notification optin-lost ipv6-target cascading-smigrated explicit-target azure-failover azure-replica azure-scale robust-seq-same robust-seq-different robust-time-zero robust-time-negative robust-time-huge robust-null-target robust-unresolvable robust-ipv6-bracketed robust-ipv6-bare robust-lone-migrated robust-lone-failed-over robust-lone-smigrated robust-unknown-type robust-smoving robust-sfailing-over robust-extra-fields robust-missing-fields robust-wrong-types robust-smigrated-pairs robust-smigrated-flat robust-sunsubscribe robust-push-pipeline robust-push-multi robust-push-blpop robust-push-pubsub default cluster azure robustness" -- "${cur}"))
                    return 0
                    ;;
                --junit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --grade-json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upstream)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --client-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pcap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --runs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__decide)
            opts="-h --endpoint --current --successor --window --poll --dns-server --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --current)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --successor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --poll)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__decode)
            opts="-h --format --json --clients --endpoint-type --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --format)
                    COMPREPLY=($(compgen -W "auto raw escaped hex" -- "${cur}"))
                    return 0
                    ;;
                --endpoint-type)
                    COMPREPLY=($(compgen -W "internal-ip internal-fqdn external-ip external-fqdn none auto server-default" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__demo)
            opts="-h --scenario --scenario-file --speed --list --capture --report --color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --scenario)
                    COMPREPLY=($(compgen -W "single-proxy multi-proxy dns-race shard-migration failover silent-shrink silent-widening oss-cluster refusing peer-variants no-closing-notification optin-lost ipv6-target cascading-smigrated explicit-target azure-failover azure-replica azure-scale robust-seq-same robust-seq-different robust-time-zero robust-time-negative robust-time-huge robust-null-target robust-unresolvable robust-ipv6-bracketed robust-ipv6-bare robust-lone-migrated robust-lone-failed-over robust-lone-smigrated robust-unknown-type robust-smoving robust-sfailing-over robust-extra-fields robust-missing-fields robust-wrong-types robust-smigrated-pairs robust-smigrated-flat robust-sunsubscribe robust-push-pipeline robust-push-multi robust-push-blpop robust-push-pubsub" -- "${cur}"))
                    return 0
                    ;;
                --scenario-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --capture)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__doctor)
            opts="-h -p -u -a -n --json --azure-events --clients --host --port --uri --pass --askpass --user --db --tls --cacert --cacertdir --cert --key --sni --insecure --endpoint-type --connect-timeout --dns-server --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --clients)
                    COMPREPLY=($(compgen -W "all" -- "${cur}"))
                    return 0
                    ;;
                --host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -h)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --uri)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -u)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pass)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -a)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cacertdir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sni)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-type)
                    COMPREPLY=($(compgen -W "internal-ip internal-fqdn external-ip external-fqdn none auto server-default" -- "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help)
            opts="watch decode probe doctor decide simulate demo replay pcap certify help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__certify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__decide)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__decode)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__demo)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__doctor)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__pcap)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__probe)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__replay)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__simulate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__help__subcmd__watch)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__pcap)
            opts="-h --port --sim-speed --json --grade --report --dns-port --color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sim-speed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__probe)
            opts="-q -h -p -u -a -n --from --concurrency --linger --json --quiet --host --port --uri --pass --askpass --user --db --tls --cacert --cacertdir --cert --key --sni --insecure --endpoint-type --connect-timeout --dns-server --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --concurrency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --linger)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -h)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --uri)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -u)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pass)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -a)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cacertdir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sni)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-type)
                    COMPREPLY=($(compgen -W "internal-ip internal-fqdn external-ip external-fqdn none auto server-default" -- "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__replay)
            opts="-v -h --check --verbose --grade --report --json --color --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__simulate)
            opts="-p -q -v -h --scenario-file --speed --proxy-api --fault-injector-api --endpoints-file --listen --default-interceptors --announce --loop --list --port --password --user --no-catch-up --quiet --verbose --upstream --grade --grade-json --report --client-output --pcap --scenario --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --scenario-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proxy-api)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fault-injector-api)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoints-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --default-interceptors)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --announce)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --password)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upstream)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --grade-json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --client-output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pcap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scenario)
                    COMPREPLY=($(compgen -W "single-proxy multi-proxy dns-race shard-migration failover silent-shrink silent-widening oss-cluster refusing peer-variants no-closing-notification optin-lost ipv6-target cascading-smigrated explicit-target azure-failover azure-replica azure-scale robust-seq-same robust-seq-different robust-time-zero robust-time-negative robust-time-huge robust-null-target robust-unresolvable robust-ipv6-bracketed robust-ipv6-bare robust-lone-migrated robust-lone-failed-over robust-lone-smigrated robust-unknown-type robust-smoving robust-sfailing-over robust-extra-fields robust-missing-fields robust-wrong-types robust-smigrated-pairs robust-smigrated-flat robust-sunsubscribe robust-push-pipeline robust-push-multi robust-push-blpop robust-push-pubsub" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        maintwatch__subcmd__watch)
            opts="-h -p -u -a -n -v --from --heartbeat --host --port --uri --pass --askpass --user --db --tls --cacert --cacertdir --cert --key --sni --insecure --endpoint-type --connect-timeout --dns-server --help --require --duration --count --json --capture --report --append --force --capture-max-size --capture-keep --traffic --connections --subscribe --azure-events --no-azure-events --tracking --cluster --no-cluster --masters-only --topology-interval --dns-interval --dns-interval-open --no-dns --no-handoff --handoff-poll --sim-speed --color --time-format --verbose --clients --metrics --otlp --otlp-interval --exec --exec-on --exec-timeout"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --heartbeat)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -h)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --uri)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -u)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pass)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -a)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --db)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cacertdir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sni)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --endpoint-type)
                    COMPREPLY=($(compgen -W "internal-ip internal-fqdn external-ip external-fqdn none auto server-default" -- "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --capture)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --capture-max-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --capture-keep)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --traffic)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --connections)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --subscribe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --topology-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-interval-open)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --handoff-poll)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sim-speed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --time-format)
                    COMPREPLY=($(compgen -W "compact full rfc3339" -- "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --otlp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --otlp-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exec-on)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exec-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _maintwatch -o nosort -o bashdefault -o default maintwatch
else
    complete -F _maintwatch -o bashdefault -o default maintwatch
fi
