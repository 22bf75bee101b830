package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/beevik/ntp"
)

// NTPConfig says which NTP servers to ask and which answers to believe.
type NTPConfig struct {
	Servers    []string      // "host" or "host:port" (port 123 by default)
	Timeout    time.Duration // per query; default 1 s
	Interval   time.Duration // between rounds in Clock.Run; default 64 s
	MaxStratum int           // answers from a higher stratum are rejected; default 10
	MaxRTT     time.Duration // answers that took longer are rejected; default 500 ms

	// Query asks one server; default ntp.QueryWithOptions with Timeout.
	// Tests may replace it.
	Query func(ctx context.Context, server string) (*ntp.Response, error)
}

func (c *NTPConfig) setDefaults() {
	if c.Timeout <= 0 {
		c.Timeout = time.Second
	}
	if c.Interval <= 0 {
		c.Interval = 64 * time.Second
	}
	if c.MaxStratum <= 0 {
		c.MaxStratum = 10
	}
	if c.MaxRTT <= 0 {
		c.MaxRTT = 500 * time.Millisecond
	}
	if c.Query == nil {
		timeout := c.Timeout
		c.Query = func(_ context.Context, server string) (*ntp.Response, error) {
			return ntp.QueryWithOptions(server, ntp.QueryOptions{Timeout: timeout})
		}
	}
}

// Sample is one server's answer in a round.
type Sample struct {
	Server  string
	Offset  time.Duration // add to the local clock to get the server's
	RTT     time.Duration
	Stratum uint8
	Err     error // why the answer was not used; nil for a good sample
}

// Measurement is the outcome of one round over all servers.
type Measurement struct {
	At      time.Time     // local (uncorrected) time of the round
	Offset  time.Duration // median offset of the good samples
	Good    int           // good samples
	Samples []Sample      // every server's answer, in server order
}

// ErrNoGoodSample means no server gave a usable answer in a round.
var ErrNoGoodSample = errors.New("no NTP server gave a usable answer")

// measure asks every server once, in parallel, and returns the median
// offset of the good answers.
func measure(ctx context.Context, cfg *NTPConfig, now time.Time) (Measurement, error) {
	m := Measurement{At: now, Samples: make([]Sample, len(cfg.Servers))}
	var wg sync.WaitGroup
	for i, srv := range cfg.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Samples[i] = sample(ctx, cfg, srv)
		}()
	}
	wg.Wait()
	var good []time.Duration
	for _, s := range m.Samples {
		if s.Err == nil {
			good = append(good, s.Offset)
		}
	}
	m.Good = len(good)
	if len(good) == 0 {
		var errs []error
		for _, s := range m.Samples {
			errs = append(errs, s.Err)
		}
		return m, fmt.Errorf("%w: %w", ErrNoGoodSample, errors.Join(errs...))
	}
	m.Offset = median(good)
	return m, nil
}

// sample queries one server and judges its answer.
func sample(ctx context.Context, cfg *NTPConfig, server string) Sample {
	s := Sample{Server: server}
	r, err := cfg.Query(ctx, server)
	if err != nil {
		s.Err = fmt.Errorf("ntp server %s: %w", server, err)
		return s
	}
	s.Offset, s.RTT, s.Stratum = r.ClockOffset, r.RTT, r.Stratum
	switch err := r.Validate(); {
	case err != nil:
		s.Err = fmt.Errorf("ntp server %s: invalid answer: %w", server, err)
	case int(r.Stratum) > cfg.MaxStratum:
		s.Err = fmt.Errorf("ntp server %s: stratum %d is above the limit %d", server, r.Stratum, cfg.MaxStratum)
	case r.RTT < 0 || r.RTT > cfg.MaxRTT:
		s.Err = fmt.Errorf("ntp server %s: round trip %v is outside [0, %v]", server, r.RTT, cfg.MaxRTT)
	}
	return s
}

// median of a non-empty list; the mean of the middle two for an even count.
func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	n := len(d)
	if n%2 == 1 {
		return d[n/2]
	}
	return d[n/2-1] + (d[n/2]-d[n/2-1])/2
}
