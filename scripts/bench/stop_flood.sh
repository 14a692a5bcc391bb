#!/usr/bin/env bash
# Issue 12, time to stop under a flood from a real redis-server: `watch --subscribe ch --capture F`
# while redis-benchmark publishes 3M messages (-P 100), SIGINT after 2 s; prints how long the
# watch took to exit, its CPU and peak RSS, and the last capture line.
#   scripts/bench/stop_flood.sh target/release/maintwatch LABEL
# Needs redis-server, redis-benchmark (Debian redis-tools) and bc.
BIN=$1; LABEL=$2
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
DIR=$(mktemp -d)
redis-server --port $PORT --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
RS=$!
sleep 0.5
/usr/bin/time -f "%e s elapsed, %U user %S sys, maxrss %M KiB" -o $DIR/time $BIN watch redis://127.0.0.1:$PORT --subscribe ch --capture $DIR/cap.jsonl --no-handoff > /dev/null 2>$DIR/err &
W=$!
sleep 1
redis-benchmark -p $PORT -P 100 -n 3000000 PUBLISH ch msg > /dev/null 2>&1 &
B=$!
sleep 2
WPID=$(pgrep -P $W maintwatch || echo $W)
T0=$(date +%s.%N)
kill -INT $WPID
# wait for the watch to exit (hang guard 120 s)
for i in $(seq 1 1200); do kill -0 $WPID 2>/dev/null || break; sleep 0.1; done
T1=$(date +%s.%N)
wait $W
echo "$LABEL: stop took $(echo "$T1 - $T0" | bc) s after SIGINT; $(cat $DIR/time | tail -1); capture $(wc -l < $DIR/cap.jsonl) lines; last line: $(tail -n 1 $DIR/cap.jsonl | head -c 40)"
kill $B 2>/dev/null; wait $B 2>/dev/null
kill $RS; wait $RS 2>/dev/null
rm -rf $DIR
