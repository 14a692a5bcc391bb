// An unmodified go-redis cluster application, for `maintwatch simulate --scenario oss-cluster
// --grade -- go_redis_cluster_app [--sharded]` (tests/it/go_redis.rs).
//
// Only redis.NewClusterClient with the seed from MAINTWATCH_SIM_HOST / _PORT: the host name
// resolves through Go's default resolver and the machine's /etc/resolv.conf, which `simulate`
// points at its own DNS. RESP3 and maintenance notifications at their default (ModeAuto; the
// cluster client handles SMIGRATING / SMIGRATED from 9.18). Three goroutines doing SET / GET on
// 1,000 keys spread over the slots (see keys) until SIGTERM; then one JSON line. With --sharded,
// also a sharded subscription (SSubscribe) to a channel whose slot the oss-cluster scenario moves
// (what sharded-resubscribe judges); the client matrix runs without it.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"maintwatch.test/go-redis-apps/internal/workload"
)

func main() {
	workload.VersionFlag()
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:    []string{net.JoinHostPort(os.Getenv("MAINTWATCH_SIM_HOST"), os.Getenv("MAINTWATCH_SIM_PORT"))},
		Protocol: 3,
		// A short timeout (1 s for a reply or a write), so that a stall shows whether the client
		// relaxes it in a maintenance window.
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
	})
	defer client.Close()
	ctx, stop := workload.Stopped()
	defer stop()
	counts := workload.NewCounts()
	if len(os.Args) > 1 && os.Args[1] == "--sharded" {
		go subscribe(ctx, client, counts)
	}
	workload.Loops(ctx, counts, func(ctx context.Context, n, i int) (int, error) {
		key := fmt.Sprintf("app:key:%d", (i*workload.Workers+n)%keys)
		if err := client.Set(ctx, key, "v", 0).Err(); err != nil {
			return 0, err
		}
		if err := client.Get(ctx, key).Err(); err != nil {
			return 1, err
		}
		return 2, nil
	})
	counts.Print()
}

// keys is how many keys the loops go through, together in turn: app:key:0 to app:key:999, spread
// over the whole slot space as a real application's are. Six of them fall in the slots that
// oss-cluster and cascading-smigrated move (8892-8991), so a client's stale slot map shows on the
// wire (a -MOVED, a redirect) and smigrated-refresh is decided.
const keys = 1000

// subscribe holds a sharded subscription to a channel in the slots oss-cluster moves
// (8892-8991), counting its messages as `sharded_messages`.
func subscribe(ctx context.Context, client *redis.ClusterClient, counts *workload.Counts) {
	pubsub := client.SSubscribe(ctx, channel())
	defer pubsub.Close()
	if _, err := pubsub.Receive(ctx); err != nil {
		counts.Error("pubsub ", err)
		return
	}
	messages := pubsub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-messages:
			if !ok {
				return
			}
			counts.Add("sharded_messages")
		}
	}
}

// channel is the first app:sharded:N whose slot lies in 8892-8991.
func channel() string {
	for i := 0; ; i++ {
		c := fmt.Sprintf("app:sharded:%d", i)
		if s := slot(c); s >= 8892 && s <= 8991 {
			return c
		}
	}
}

// slot is Redis Cluster's key hash: CRC16/XMODEM of the key, mod 16384 (no hash tags here).
func slot(key string) int {
	crc := uint16(0)
	for _, b := range []byte(key) {
		crc ^= uint16(b) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
