package resolver

import (
	"context"
	"sync"
)

// flightGroup makes concurrent lookups of one name share one resolution.
type flightGroup struct {
	mu    sync.Mutex
	calls map[string]*flight
}

// flight is one resolution in progress; res is valid once done is closed.
type flight struct {
	done chan struct{}
	res  answer
}

// do returns the answer of fn for name, running fn once for all callers that
// arrive while it runs. fn runs in its own goroutine, detached from any one
// caller, so a caller that gives up (ctx) does not fail the others; fn is
// bounded by the resolver's LookupTimeout.
func (g *flightGroup) do(ctx context.Context, name string, fn func() answer) (answer, error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = make(map[string]*flight)
	}
	f := g.calls[name]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		g.calls[name] = f
		go func() {
			f.res = fn()
			g.mu.Lock()
			delete(g.calls, name)
			g.mu.Unlock()
			close(f.done)
		}()
	}
	g.mu.Unlock()
	select {
	case <-f.done:
		return f.res, nil
	case <-ctx.Done():
		return answer{}, ctx.Err()
	}
}
