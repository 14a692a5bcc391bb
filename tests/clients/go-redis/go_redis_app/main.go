// An unmodified go-redis application, for `maintwatch simulate --grade -- go_redis_app`
// (tests/it/go_redis.rs).
//
// It knows nothing of the simulator but what its environment says (MAINTWATCH_SIM_HOST and
// MAINTWATCH_SIM_PORT) and has no resolver code: the host name resolves through Go's default
// resolver and the machine's /etc/resolv.conf, which `simulate` points at its own DNS. RESP3,
// as go-redis's README shows it (the default in v9 anyway), and maintenance notifications at
// their default (ModeAuto). Three goroutines share one client doing SET / GET / INCR until
// SIGTERM; then one JSON line (operations, errors by kind, the version).
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
	client := redis.NewClient(&redis.Options{
		Addr:     net.JoinHostPort(os.Getenv("MAINTWATCH_SIM_HOST"), os.Getenv("MAINTWATCH_SIM_PORT")),
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
	workload.Loops(ctx, counts, func(ctx context.Context, n, _ int) (int, error) {
		key := fmt.Sprintf("app:%d", n)
		if err := client.Set(ctx, key, "v", 0).Err(); err != nil {
			return 0, err
		}
		if err := client.Get(ctx, key).Err(); err != nil {
			return 1, err
		}
		if err := client.Incr(ctx, key+":count").Err(); err != nil {
			return 2, err
		}
		return 3, nil
	})
	counts.Print()
}
