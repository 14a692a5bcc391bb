// An unmodified go-redis application for the robustness set
// (`maintwatch certify --scenarios robustness -- go_redis_robust_app`): the tier app's SET / GET /
// INCR goroutines, plus the shapes a frame may meet a connection in, each as go-redis's README
// shows it:
//   - a goroutine blocked in BLPOP (0.5 s at a time; go-redis takes a pool connection for it);
//   - a goroutine running MULTI / EXEC (`TxPipelined`);
//   - a subscriber on a RESP3 pub/sub connection (`Subscribe`, `Channel()`), which a goroutine
//     publishes to.
//
// It knows nothing of the simulator but MAINTWATCH_SIM_HOST and MAINTWATCH_SIM_PORT; the 1 s
// timeouts are the tier app's. Until SIGTERM; then one JSON line (operations, errors by kind,
// messages received, the version).
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
		Addr:         net.JoinHostPort(os.Getenv("MAINTWATCH_SIM_HOST"), os.Getenv("MAINTWATCH_SIM_PORT")),
		Protocol:     3,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
	})
	defer client.Close()
	ctx, stop := workload.Stopped()
	defer stop()
	counts := workload.NewCounts()
	sub := client.Subscribe(context.Background(), "app:channel")
	defer sub.Close()
	go func() {
		for range sub.Channel() {
			counts.Add("messages")
		}
	}()
	workload.Loops(ctx, counts, func(ctx context.Context, n, i int) (int, error) {
		switch n {
		case 0:
			return setGetIncr(ctx, client, i)
		case 1:
			// BLPOP on an empty list; go-redis gives a blocking command the time it blocks plus
			// its read timeout.
			err := client.BLPop(ctx, 500*time.Millisecond, "app:queue").Err()
			if err != nil && err != redis.Nil {
				return 0, err
			}
			return 1, nil
		default:
			if i%5 == 0 {
				if err := client.Publish(ctx, "app:channel", "hello").Err(); err != nil {
					return 0, err
				}
			}
			_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "app:multi")
				p.Get(ctx, "app:multi")
				return nil
			})
			if err != nil {
				return 0, err
			}
			return 2, nil
		}
	})
	counts.Print()
}

func setGetIncr(ctx context.Context, client *redis.Client, i int) (int, error) {
	key := fmt.Sprintf("app:%d", i%2)
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
}
