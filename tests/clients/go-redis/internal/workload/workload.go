// Package workload is what both go-redis applications do besides connecting: three goroutines
// running a loop of commands until SIGTERM, every failure counted by its kind, then one JSON line
// on stdout (operations, errors, the go-redis version), as the Python and Node applications of
// the client tier print theirs.
package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Counts is what the run did, printed at the end.
type Counts struct {
	mu     sync.Mutex
	ops    int
	errors map[string]int
	// The first message of each kind of error: go-redis wraps most of them in plain errors,
	// whose type alone says little.
	samples map[string]string
	extra   map[string]int
}

// NewCounts starts with nothing counted.
func NewCounts() *Counts {
	return &Counts{errors: map[string]int{}, samples: map[string]string{}, extra: map[string]int{}}
}

// Op counts n operations done.
func (c *Counts) Op(n int) {
	c.mu.Lock()
	c.ops += n
	c.mu.Unlock()
}

// Add counts one more of a named figure (e.g. sharded messages received).
func (c *Counts) Add(name string) {
	c.mu.Lock()
	c.extra[name]++
	c.mu.Unlock()
}

// Error counts a failure under its kind, prefixed by `scope` ("" for the command loop).
func (c *Counts) Error(scope string, err error) {
	kind := scope + kindOf(err)
	c.mu.Lock()
	c.errors[kind]++
	if _, seen := c.samples[kind]; !seen {
		msg := err.Error()
		if len(msg) > 200 {
			msg = msg[:200]
		}
		c.samples[kind] = msg
	}
	c.mu.Unlock()
}

// kindOf names an error: a timeout as such, a server's error reply by its first word, anything
// else by its Go type.
func kindOf(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	var re redis.Error
	if errors.As(err, &re) {
		word, _, _ := strings.Cut(re.Error(), " ")
		return "server " + word
	}
	return fmt.Sprintf("%T", err)
}

// Stopped is a context cancelled by SIGTERM (how the simulator ends the application) or SIGINT.
func Stopped() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
}

// Workers is how many goroutines Loops runs.
const Workers = 3

// Loops runs step(ctx, n, i) in three goroutines (n = 0, 1, 2; i counts each one's iterations)
// until ctx is done, 10 ms apart, 50 ms more after a failure; step returns how many operations it
// did or the first error.
func Loops(ctx context.Context, c *Counts, step func(ctx context.Context, n, i int) (int, error)) {
	var wg sync.WaitGroup
	for n := 0; n < Workers; n++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				ops, err := step(context.Background(), n, i)
				pause := 10 * time.Millisecond
				if err != nil {
					c.Error("", err)
					pause += 50 * time.Millisecond
				} else {
					c.Op(ops)
				}
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		}(n)
	}
	wg.Wait()
}

// Print writes the JSON line.
func (c *Counts) Print() {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]any{
		"redis":          redis.Version(),
		"ops":            c.ops,
		"errors":         c.errors,
		"error_messages": c.samples,
	}
	for k, v := range c.extra {
		out[k] = v
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}

// VersionFlag prints the go-redis version and exits when the only argument is --version (how the
// test tier asks a built application which release it has).
func VersionFlag() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(redis.Version())
		os.Exit(0)
	}
}
