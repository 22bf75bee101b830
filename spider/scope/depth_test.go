package scope

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// graph maps a page to the pages it links to.
type graph map[string][]string

// exampleGraph is the case where discovery order decides: X is 5 links from
// the seed along the chain a-b-c-d, and 2 links along s2; Y hangs below X.
// With a limit of 3, X (depth 2) and Y (depth 3) are in, d (depth 4) is out.
var exampleGraph = graph{
	"seed": {"a", "s2"},
	"a":    {"b"},
	"b":    {"c"},
	"c":    {"d"},
	"d":    {"X"},
	"s2":   {"X"},
	"X":    {"Y"},
	"Y":    {"Z"},
}

// shortest returns the true link distances from the seeds (BFS).
func shortest(g graph, seeds []string) map[string]int {
	dist := map[string]int{}
	var q []string
	for _, s := range seeds {
		if _, ok := dist[s]; !ok {
			dist[s] = 0
			q = append(q, s)
		}
	}
	for len(q) > 0 {
		u := q[0]
		q = q[1:]
		for _, v := range g[u] {
			if _, ok := dist[v]; !ok {
				dist[v] = dist[u] + 1
				q = append(q, v)
			}
		}
	}
	return dist
}

type task struct {
	url      string
	reexpand bool
}

// simulate crawls g from seeds under the depth limit, taking the next task
// as pick says (0 = oldest, i.e. BFS; -1 = newest, DFS; else random), and
// returns the set of fetched pages.
func simulate(g graph, seeds []string, max int, pick func(n int) int, store *MemDepth) map[string]bool {
	lim := &Depth{Max: max, Store: store}
	fetched := map[string]bool{}
	var q []task
	for _, s := range seeds {
		if d := lim.Seen(s, 0); d.Crawl {
			q = append(q, task{url: s})
		}
	}
	for len(q) > 0 {
		i := pick(len(q))
		t := q[i]
		q = append(q[:i], q[i+1:]...)
		if !t.reexpand {
			fetched[t.url] = true
		}
		d := int(store.Get(t.url))
		for _, v := range g[t.url] {
			dec := lim.Seen(v, d+1)
			switch {
			case dec.Crawl:
				q = append(q, task{url: v})
			case dec.Reexpand && fetched[v]:
				q = append(q, task{url: v, reexpand: true})
			}
		}
	}
	return fetched
}

func checkAgainstTruth(t *testing.T, name string, g graph, seeds []string, max int, fetched map[string]bool, store *MemDepth) {
	t.Helper()
	dist := shortest(g, seeds)
	for v, d := range dist {
		if in := d <= max; fetched[v] != in {
			t.Errorf("%s: %s (shortest depth %d, limit %d): fetched=%v", name, v, d, max, fetched[v])
		}
		if d <= max+1 && int(store.Get(v)) != d {
			t.Errorf("%s: %s stored at depth %d, shortest is %d", name, v, store.Get(v), d)
		}
	}
	for v := range fetched {
		if _, ok := dist[v]; !ok {
			t.Errorf("%s: fetched unreachable %s", name, v)
		}
	}
}

func TestDepthDiscoveryOrder(t *testing.T) {
	seeds := []string{"seed"}
	bfs := func(int) int { return 0 }
	dfs := func(n int) int { return n - 1 }
	for _, o := range []struct {
		name string
		pick func(int) int
	}{{"bfs", bfs}, {"dfs", dfs}} {
		store := NewMemDepth()
		fetched := simulate(exampleGraph, seeds, 3, o.pick, store)
		checkAgainstTruth(t, "example/"+o.name, exampleGraph, seeds, 3, fetched, store)
		if !fetched["X"] || !fetched["Y"] || fetched["d"] || fetched["Z"] {
			t.Errorf("example/%s: fetched %v", o.name, fetched)
		}
	}
	// DFS finds X first at depth 5 along a-b-c-d: exactly the order a
	// first-seen depth limit gets wrong.
	store := NewMemDepth()
	lim := &Depth{Max: 3, Store: store}
	if d := lim.Seen("X", 5); d.Reason != TooDeep || d.Crawl {
		t.Fatalf("X at 5: %+v", d)
	}
	if d := lim.Seen("X", 2); !d.Crawl || d.Depth != 2 || d.Reexpand {
		t.Fatalf("X at 2 after 5: %+v", d)
	}
	if d := lim.Seen("X", 3); d.Crawl || d.Reexpand || d.Depth != 2 {
		t.Fatalf("X at 3 after 2: %+v", d)
	}
	if d := lim.Seen("X", 1); d.Crawl || !d.Reexpand || d.Depth != 1 {
		t.Fatalf("X at 1 after 2: %+v", d)
	}
	if d := lim.Seen("deep", 1000); d.Depth != NoDepth-1 || d.Reason != TooDeep {
		t.Fatalf("depth 1000: %+v", d)
	}
}

func randomGraph(rng *rand.Rand, nodes, edges int) graph {
	g := graph{}
	for i := 0; i < edges; i++ {
		u, v := fmt.Sprint("n", rng.IntN(nodes)), fmt.Sprint("n", rng.IntN(nodes))
		g[u] = append(g[u], v)
	}
	return g
}

func TestDepthRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for i := 0; i < 30; i++ {
		g := randomGraph(rng, 300, 600)
		seeds := []string{"n0", fmt.Sprint("n", rng.IntN(300))}
		max := 1 + rng.IntN(6)
		orders := map[string]func(int) int{
			"bfs":    func(int) int { return 0 },
			"dfs":    func(n int) int { return n - 1 },
			"random": func(n int) int { return rng.IntN(n) },
		}
		for name, pick := range orders {
			store := NewMemDepth()
			fetched := simulate(g, seeds, max, pick, store)
			checkAgainstTruth(t, fmt.Sprintf("graph %d/%s", i, name), g, seeds, max, fetched, store)
		}
	}
}

// TestDepthConcurrent runs the crawl with several workers sharing one store,
// in whatever order the scheduler gives: the fetched set must still be the
// true one.
func TestDepthConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	for i := 0; i < 5; i++ {
		g := randomGraph(rng, 400, 900)
		seeds := []string{"n0"}
		const max = 4
		store := NewMemDepth()
		lim := &Depth{Max: max, Store: store}
		var (
			mu      sync.Mutex
			fetched = map[string]bool{}
			wg      sync.WaitGroup
		)
		work := make(chan task, 100_000)
		var pending sync.WaitGroup
		submit := func(t task) { pending.Add(1); work <- t }
		if lim.Seen("n0", 0).Crawl {
			submit(task{url: "n0"})
		}
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for t := range work {
					mu.Lock()
					if !t.reexpand {
						fetched[t.url] = true
					}
					mu.Unlock()
					d := int(store.Get(t.url))
					for _, v := range g[t.url] {
						dec := lim.Seen(v, d+1)
						mu.Lock()
						was := fetched[v]
						mu.Unlock()
						switch {
						case dec.Crawl:
							submit(task{url: v})
						case dec.Reexpand && was:
							submit(task{url: v, reexpand: true})
						}
					}
					pending.Done()
				}
			}()
		}
		pending.Wait()
		close(work)
		wg.Wait()
		checkAgainstTruth(t, fmt.Sprintf("concurrent %d", i), g, seeds, max, fetched, store)
	}
}

// TestDepthMaxLimit: depths past NoDepth-1 are stored as NoDepth-1, so the
// largest limit leaves that beyond it: a link far deeper than any limit is
// too deep under MaxLimit, where a limit of NoDepth-1 let it in.
func TestDepthMaxLimit(t *testing.T) {
	lim := &Depth{Max: MaxLimit, Store: NewMemDepth()}
	for _, d := range []int{MaxLimit + 1, int(NoDepth), 300, 1 << 20} {
		if dec := lim.Seen(fmt.Sprintf("http://a.example/%d", d), d); dec.Crawl || dec.Reason != TooDeep {
			t.Errorf("depth %d under the limit %d: %+v, want too deep", d, MaxLimit, dec)
		}
	}
	if dec := lim.Seen("http://a.example/ok", MaxLimit); !dec.Crawl {
		t.Errorf("depth %d under the limit %d: %+v, want crawled", MaxLimit, MaxLimit, dec)
	}
}
