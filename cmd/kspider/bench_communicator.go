package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/tools/dataset"
)

// commBenchRun is one exchange of `kspider bench communicator`; the JSON
// names are the issue's.
type commBenchRun struct {
	Loss        float64 `json:"loss"`
	URLs        int     `json:"urls"`
	Seconds     float64 `json:"seconds"`
	URLsPerS    float64 `json:"urls_per_s"`
	CPUusPerURL float64 `json:"cpu_us_per_url"` // process CPU (user+system, both ends) per URL
	UserUs      float64 `json:"user_us_per_url"`
	SysUs       float64 `json:"sys_us_per_url"`
	Datagrams   float64 `json:"datagrams_per_1000_urls"` // every datagram, both ways, acks and retransmissions included
	DataGrams   float64 `json:"data_datagrams_per_1000_urls"`
	WireRatio   float64 `json:"wire_ratio"` // UDP payload bytes / raw URL bytes
	Retransmits uint64  `json:"retransmits"`
	Drops       uint64  `json:"drops"`
}

type commBench struct {
	URLs        int            `json:"urls"`
	Duplicates  int            `json:"duplicate_lines"`
	TooLong     int            `json:"too_long"` // URLs longer than one datagram carries, skipped
	RawBytes    float64        `json:"raw_bytes_per_url"`
	Payload     int            `json:"payload"`
	ReadBuffer  int            `json:"read_buffer"`
	WriteBuffer int            `json:"write_buffer"`
	Runs        []commBenchRun `json:"runs"`
}

func benchCommunicator(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench communicator", "bench communicator [--urls FILE] [--limit N] [--loss F] [--json]",
		`Benchmarks the communicator: two endpoints on loopback exchange the URL
list (each sends half of it to the other) as fast as acknowledgements allow,
once without loss and once with --loss of the datagrams dropped by the
test hook. Every URL must arrive exactly once (checked by count and by an
order-free hash; exit 1 otherwise). Reports urls_per_s, cpu_us_per_url
(the process's CPU time, both ends and the kernel's UDP work, per URL),
datagrams per 1000 URLs and wire_ratio (UDP payload bytes / raw URL bytes).`)
	def, _ := dataset.Path(dataset.URLsWeb)
	urlsPath := fs.String("urls", def, "URL list `FILE`, one per line (plain or .zst)")
	limit := fs.Int("limit", 0, "use only the first `N` URLs (0: all)")
	loss := fs.Float64("loss", 0.05, "datagram loss of the second run")
	payload := fs.Int("payload", communicator.DefaultPayload, "UDP payload bytes per datagram")
	asJSON := fs.Bool("json", false, "print one JSON object")
	sortWindow := fs.Int("sort-window", 0, "bytes of queued URLs sorted together before front coding (0: the default, 16 datagrams)")
	maxTime := fs.Duration("timeout", 10*time.Minute, "fail an exchange that takes longer")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the exchanges to `FILE`")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if *urlsPath == "" {
		return usagef("--urls is required (the shared data set %s was not found)", dataset.URLsWeb)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	if *limit < 0 || *loss < 0 || *loss >= 1 {
		return usagef("--limit must not be negative and --loss must be in [0, 1)")
	}
	var r commBench
	var slab []byte
	var offs []int
	if *payload < communicator.MinPayload || *payload > communicator.MaxPayload {
		return usagef("--payload must be in [%d, %d]", communicator.MinPayload, communicator.MaxPayload)
	}
	maxLen := communicator.MaxItemLen(*payload)
	seen := make(map[string]struct{})
	if _, err := dataset.Lines(*urlsPath, *limit, func(line []byte) error {
		if len(line) > maxLen {
			r.TooLong++
			return nil
		}
		if _, dup := seen[string(line)]; dup {
			r.Duplicates++
			return nil
		}
		seen[string(line)] = struct{}{}
		offs = append(offs, len(slab))
		slab = append(slab, line...)
		return ctx.Err()
	}); err != nil {
		return err
	}
	seen = nil
	offs = append(offs, len(slab))
	r.URLs = len(offs) - 1
	if r.URLs < 2 {
		return fmt.Errorf("%s: fewer than 2 URLs", *urlsPath)
	}
	r.RawBytes = float64(len(slab)) / float64(r.URLs)
	r.Payload = *payload
	urls := func(i int) []byte { return slab[offs[i]:offs[i+1]] }
	for _, l := range []float64{0, *loss} {
		run, err := commExchange(ctx, &r, urls, l, *payload, *sortWindow, *maxTime)
		if err != nil {
			return err
		}
		r.Runs = append(r.Runs, run)
	}
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(r)
	}
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "URLs\t%d (%.1f raw bytes each; skipped: %d duplicate, %d too long)\t\n", r.URLs, r.RawBytes, r.Duplicates, r.TooLong)
	fmt.Fprintf(w, "socket buffers granted\t%d / %d bytes\t\n", r.ReadBuffer, r.WriteBuffer)
	for _, run := range r.Runs {
		fmt.Fprintf(w, "loss %.0f%%: URLs/s\t%.0f\t\n", run.Loss*100, run.URLsPerS)
		fmt.Fprintf(w, "  CPU µs per URL (user + sys)\t%.2f (%.2f + %.2f)\t\n", run.CPUusPerURL, run.UserUs, run.SysUs)
		fmt.Fprintf(w, "  datagrams per 1000 URLs (data)\t%.1f (%.1f)\t\n", run.Datagrams, run.DataGrams)
		fmt.Fprintf(w, "  wire_ratio\t%.3f\t\n", run.WireRatio)
		fmt.Fprintf(w, "  retransmits, drops\t%d, %d\t\n", run.Retransmits, run.Drops)
	}
	w.Flush()
	_, err = e.stdout.Write(b.Bytes())
	return err
}

func processCPU() (user, sys time.Duration) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// commExchange runs one exchange: node 1 sends the first half of the URLs
// to node 2, node 2 the second half to node 1.
func commExchange(ctx context.Context, r *commBench, url func(int) []byte, loss float64, payload, sortWindow int, maxTime time.Duration) (commBenchRun, error) {
	run := commBenchRun{Loss: loss, URLs: r.URLs}
	var conns [2]*net.UDPConn
	addrs := make(map[communicator.NodeID]netip.AddrPort)
	for i := range conns {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return run, err
		}
		defer c.Close()
		conns[i] = c
		addrs[communicator.NodeID(i+1)] = c.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	seed := maphash.MakeSeed()
	key := communicator.Key{ID: 1, Secret: []byte("kspider bench communicator key")}
	half := r.URLs / 2
	ranges := [2][2]int{{0, half}, {half, r.URLs}}
	var got [2]atomic.Int64
	var sums [2]atomic.Uint64
	done := make(chan struct{}, 2)
	var eps [2]*communicator.Endpoint
	for i := range eps {
		want := int64(ranges[1-i][1] - ranges[1-i][0])
		cfg := communicator.Config{
			Self: communicator.NodeID(i + 1), Peers: addrs, Conn: conns[i], Payload: payload, SortWindow: sortWindow,
			Keys: []communicator.Key{key}, SendKey: key.ID, AckOnReturn: true,
			Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
				var s uint64
				for _, it := range items {
					s += maphash.Bytes(seed, it.URL) + it.Tag
				}
				sums[i].Add(s)
				if got[i].Add(int64(len(items))) == want {
					done <- struct{}{}
				}
			},
		}
		if loss > 0 {
			cfg.Hook = communicator.Faults(loss, 0, 0, uint64(i+1))
		}
		ep, err := communicator.New(cfg)
		if err != nil {
			return run, err
		}
		defer ep.Close()
		eps[i] = ep
	}
	st := eps[0].Stats()
	r.ReadBuffer, r.WriteBuffer = st.ReadBuffer, st.WriteBuffer

	var wantSums [2]uint64
	for i := range 2 {
		for k := ranges[i][0]; k < ranges[i][1]; k++ {
			wantSums[1-i] += maphash.Bytes(seed, url(k)) + uint64(k%8)
		}
	}
	u0, s0 := processCPU()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	stop := make(chan struct{})
	failed := make(chan struct{}, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := communicator.NodeID(2 - i)
			for k := ranges[i][0]; k < ranges[i][1]; k++ {
				if k%1024 == 0 && !eps[i].WaitBacklog(to, 1<<16, stop) {
					return
				}
				if err := eps[i].Send(to, uint64(k%8), url(k)); err != nil {
					errs[i] = err
					failed <- struct{}{}
					return
				}
			}
			eps[i].Flush()
		}()
	}
	timeout := time.After(maxTime)
	for range 2 {
		select {
		case <-done:
		case <-failed:
			close(stop)
			wg.Wait()
			return run, errors.Join(errs[:]...)
		case <-ctx.Done():
			close(stop)
			wg.Wait()
			return run, ctx.Err()
		case <-timeout:
			close(stop)
			wg.Wait()
			s0, s1 := eps[0].Stats(), eps[1].Stats()
			return run, fmt.Errorf("loss %.2f: exchange not finished after %v: %d and %d of %d URLs delivered\nnode 1: %+v\nnode 2: %+v",
				loss, maxTime, got[0].Load(), got[1].Load(), r.URLs, s0, s1)
		}
	}
	elapsed := time.Since(start)
	u1, s1 := processCPU()
	close(stop)
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			return run, errs[i]
		}
		if sums[i].Load() != wantSums[i] {
			return run, fmt.Errorf("loss %.2f: node %d received a different set of URLs than was sent", loss, i+1)
		}
	}
	n := float64(r.URLs)
	var raw int
	for k := range r.URLs {
		raw += len(url(k))
	}
	var datagrams, bytes, data uint64
	for _, ep := range eps {
		st := ep.Stats()
		datagrams += st.SentDatagrams
		bytes += st.SentBytes
		data += st.SentDatagrams - st.AckOnly
		run.Retransmits += st.Retransmits
		for _, c := range st.Drops {
			run.Drops += c
		}
	}
	run.Seconds = elapsed.Seconds()
	run.URLsPerS = n / elapsed.Seconds()
	run.UserUs = float64((u1 - u0).Microseconds()) / n
	run.SysUs = float64((s1 - s0).Microseconds()) / n
	run.CPUusPerURL = run.UserUs + run.SysUs
	run.Datagrams = float64(datagrams) / n * 1000
	run.DataGrams = float64(data) / n * 1000
	run.WireRatio = float64(bytes) / float64(raw)
	return run, nil
}
