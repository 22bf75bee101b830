package spider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/kspider/kspider/spider/scope"
)

// RunConfig is what `kspider run` reads from its TOML file (`kspider init`
// prints an annotated sample). Every key is optional: Defaults gives the
// value of a missing one. Unknown keys and bad values are errors naming the
// key and its line. Durations are TOML strings read by time.ParseDuration
// ("250ms", "1m30s"); sizes are integers in bytes. Relative paths are taken
// from the directory kspider runs in.
//
// The file's layout (section.key, as the errors name them):
//
//	seeds, seeds_file, data_dir, fetchers, pipelining, user_agent, contact,
//	from, dns_servers, ntp_servers, status
//	[storage]    dirs, codec
//	[scope]      include, exclude, domains, max_url_length, max_path_depth,
//	             max_segment_repeat, reject_query, reject_cgi, max_subdomains
//	[politeness] delay, per_ip, crawl_delay_cap, robots_stale_for
//	[limits]     max_body, connect_timeout, tls_timeout, first_byte_timeout,
//	             response_timeout, idle_timeout, max_depth, max_pages_per_host,
//	             max_links_per_page, max_pages
//	[cluster]    node, phases, phase_length, epoch, secret_file, partition
//	[[cluster.nodes]] id, udp, status
type RunConfig struct {
	// Seeds are absolute http(s) URLs crawled at depth 0, together with the
	// URLs of SeedsFile (one a line; blank lines and '#' comments skipped).
	Seeds     []string `toml:"seeds"`
	SeedsFile string   `toml:"seeds_file"`

	DataDir    string `toml:"data_dir"`   // URL tree, scheduler state, the lock; pages too unless Storage.Dirs
	Fetchers   int    `toml:"fetchers"`   // host lists fetched at once
	Pipelining int    `toml:"pipelining"` // HTTP/1.1 requests in flight per connection; 1 is off

	// The User-Agent header is UserAgent followed by " (+Contact)": site
	// owners need a way to reach the operator. From, when set, is sent as
	// the From header (an e-mail address).
	UserAgent string `toml:"user_agent"`
	Contact   string `toml:"contact"`
	From      string `toml:"from"`

	DNSServers []string `toml:"dns_servers"` // "ip" or "ip:port"; none: /etc/resolv.conf
	NTPServers []string `toml:"ntp_servers"` // "host" or "host:port"; none: the system clock as is
	Status     string   `toml:"status"`      // status page listen address; "" for none

	Storage    RunStorage    `toml:"storage"`
	Scope      RunScope      `toml:"scope"`
	Politeness RunPoliteness `toml:"politeness"`
	Limits     RunLimits     `toml:"limits"`
	Cluster    RunCluster    `toml:"cluster"`
}

// RunStorage is where pages go.
type RunStorage struct {
	Dirs  []string `toml:"dirs"`  // one per disk; none: DataDir/pages
	Codec string   `toml:"codec"` // storage.Codecs()
}

// RunScope mirrors scope.Config (see spider/scope for the rules' syntax);
// the per-host page budget is Limits.MaxPagesPerHost.
type RunScope struct {
	Include          []string `toml:"include"`
	Exclude          []string `toml:"exclude"`
	Domains          []string `toml:"domains"`
	MaxURLLength     int      `toml:"max_url_length"`
	MaxPathDepth     int      `toml:"max_path_depth"`
	MaxSegmentRepeat int      `toml:"max_segment_repeat"`
	RejectQuery      bool     `toml:"reject_query"`
	RejectCGI        bool     `toml:"reject_cgi"`
	MaxSubdomains    int      `toml:"max_subdomains"`
}

// RunPoliteness is how gently hosts are treated.
type RunPoliteness struct {
	Delay          Duration `toml:"delay"`            // after a host's list ends, before its next starts
	PerIP          int      `toml:"per_ip"`           // connections at once to one IP address
	CrawlDelayCap  Duration `toml:"crawl_delay_cap"`  // robots.txt Crawl-delay obeyed up to this
	RobotsStaleFor Duration `toml:"robots_stale_for"` // 0: never; see RunConfig.RobotsStaleFor
}

// RunLimits bound what one page, one host and the crawl may cost.
type RunLimits struct {
	MaxBody          int64    `toml:"max_body"` // bytes of body kept per page
	ConnectTimeout   Duration `toml:"connect_timeout"`
	TLSTimeout       Duration `toml:"tls_timeout"`
	FirstByteTimeout Duration `toml:"first_byte_timeout"`
	ResponseTimeout  Duration `toml:"response_timeout"` // whole response
	IdleTimeout      Duration `toml:"idle_timeout"`     // between two reads
	MaxDepth         int      `toml:"max_depth"`        // link depth; 0 fetches the seeds only
	MaxPagesPerHost  int      `toml:"max_pages_per_host"`
	MaxLinksPerPage  int      `toml:"max_links_per_page"` // distinct URLs, fragments removed
	MaxPages         int64    `toml:"max_pages"`          // pages fetched over every run before the crawl ends; 0: no limit
}

// RunCluster is the cluster block, the same on every node but for Node.
type RunCluster struct {
	Node        int       `toml:"node"`         // this node's id
	Nodes       []RunNode `toml:"nodes"`        // none: this node alone
	Phases      int       `toml:"phases"`       // P >= len(Nodes)
	PhaseLength Duration  `toml:"phase_length"` // one time slot
	Epoch       time.Time `toml:"epoch"`        // start of slot 0 (a TOML date-time)
	SecretFile  string    `toml:"secret_file"`  // shared secret; required with more than one node
	Partition   string    `toml:"partition"`    // URL -> node by hash of: "url", "host" or "domain"
}

// RunNode is one node of the cluster.
type RunNode struct {
	ID     int    `toml:"id"`     // 0 <= ID < len(Nodes)
	UDP    string `toml:"udp"`    // host:port its communicator listens on
	Status string `toml:"status"` // its status page's listen address, in place of RunConfig.Status and checked as it is
}

// Duration is a time.Duration written in TOML as a string ("250ms").
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration (like \"250ms\" or \"1m30s\"): %q", b)
	}
	d.Duration = v
	return nil
}

// String is time.Duration's form without zero minutes and seconds after a
// larger unit: "24h", "1m", "1h30m", "250ms".
func (d Duration) String() string {
	s := d.Duration.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// DefaultStatus is the status page's address unless configured.
const DefaultStatus = "127.0.0.1:7411"

// Defaults returns the configuration a node runs with when its file sets
// nothing: a one-node cluster, no seeds.
func Defaults() RunConfig {
	s := scope.Default()
	return RunConfig{
		DataDir:    "kspider-data",
		Fetchers:   300,
		Pipelining: 1,
		UserAgent:  "KSpider/0.1",
		Contact:    "https://github.com/kspider/kspider",
		Status:     DefaultStatus,
		Storage:    RunStorage{Codec: "lzo"},
		Scope: RunScope{
			MaxURLLength:     s.MaxURLLength,
			MaxPathDepth:     s.MaxPathDepth,
			MaxSegmentRepeat: s.MaxSegmentRepeat,
			MaxSubdomains:    s.MaxSubdomains,
		},
		Politeness: RunPoliteness{
			Delay:          Duration{time.Second},
			PerIP:          4,
			CrawlDelayCap:  Duration{time.Minute},
			RobotsStaleFor: Duration{24 * time.Hour},
		},
		Limits: RunLimits{
			MaxBody:          10 << 20,
			ConnectTimeout:   Duration{10 * time.Second},
			TLSTimeout:       Duration{10 * time.Second},
			FirstByteTimeout: Duration{30 * time.Second},
			ResponseTimeout:  Duration{2 * time.Minute},
			IdleTimeout:      Duration{30 * time.Second},
			MaxDepth:         3,
			MaxPagesPerHost:  s.MaxPagesPerHost,
			MaxLinksPerPage:  10_000,
		},
		Cluster: RunCluster{
			Nodes:       []RunNode{{ID: 0, UDP: "127.0.0.1:7410", Status: DefaultStatus}},
			Phases:      1,
			PhaseLength: Duration{5 * time.Minute},
			Epoch:       time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Partition:   "url",
		},
	}
}

// utf8BOM is the byte order mark some editors start a text file with.
const utf8BOM = "\ufeff"

// notUTF16 refuses the start of a config or seeds file saved as UTF-16
// (Windows Notepad's "Unicode"), which was refused as "invalid character
// at start of key: U+00FF 'ÿ'", or, a seeds file, at its every line as
// not a URL, naming characters the operator cannot see.
func notUTF16(name string, start []byte) error {
	if bytes.HasPrefix(start, []byte{0xff, 0xfe}) || bytes.HasPrefix(start, []byte{0xfe, 0xff}) {
		return fmt.Errorf("%s is UTF-16 text (it starts with a UTF-16 byte order mark): save it as UTF-8", name)
	}
	return nil
}

// maxConfigSize bounds a config file: a real one is a few KiB (long seed
// lists belong in seeds_file).
const maxConfigSize = 4 << 20

// openInput opens the config or seeds file at path for reading until ctx
// ends. A named pipe's open(2) waits for a writer, and its reads for data:
// a pipe nothing writes to hung the command past Ctrl-C and SIGTERM. So a
// pipe is opened by a goroutine, given up (with an error naming the file)
// when ctx ends first, the goroutine left to die with the process or to
// close what it opens; and the file is closed when ctx ends, which ends a
// read waiting on a pipe (the caller reports ctx's cause for it; a regular
// file's reads end by themselves, and a device's the caller watches). A
// non-blocking open is not the way: it makes a pipe whose writer comes
// after the reader read as empty. stop, when done, undoes the close on
// ctx's end; the caller still closes the file.
func openInput(ctx context.Context, path string) (f *os.File, stop func() bool, err error) {
	if fi, serr := os.Stat(path); serr != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		f, err = os.Open(path) // errors from here: Stat's may be stale
	} else {
		type opened struct {
			f   *os.File
			err error
		}
		done := make(chan opened, 1)
		go func() {
			f, err := os.Open(path)
			done <- opened{f, err}
		}()
		select {
		case o := <-done:
			f, err = o.f, o.err
		case <-ctx.Done():
			go func() {
				if o := <-done; o.f != nil {
					o.f.Close()
				}
			}()
			return nil, nil, fmt.Errorf("opening %s: a named pipe no writer opened: %w", path, context.Cause(ctx))
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		return f, func() bool { return true }, nil // its reads end
	}
	return f, context.AfterFunc(ctx, func() { f.Close() }), nil
}

// LoadRunConfig reads and checks the config file at path, giving up when
// ctx ends (a named pipe nothing writes to).
func LoadRunConfig(ctx context.Context, path string) (*RunConfig, error) {
	f, stop, err := openInput(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	defer stop()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxConfigSize+1)); err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("config: reading %s: %w", path, err)
	}
	if buf.Len() > maxConfigSize {
		return nil, fmt.Errorf("config: %s is over %d MiB; put long seed lists in seeds_file", path, maxConfigSize>>20)
	}
	return ParseRunConfig(buf.Bytes(), path)
}

// ParseRunConfig reads a config from data; name (the file's name) starts
// every error message. It returns every error found, joined.
func ParseRunConfig(data []byte, name string) (*RunConfig, error) {
	// An editor's byte order mark (Windows Notepad writes one) is no key:
	// go-toml refused it as "invalid character ... U+00EF", which the
	// operator cannot see. Lines and keys are where they were.
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	if err := notUTF16(name, data); err != nil {
		return nil, err
	}
	cfg := Defaults()
	// Array tables ([[cluster.nodes]]) append to a slice: start from none.
	cfg.Cluster.Nodes = nil
	lines := keyLines(data)
	// Unknown keys and the values checked below are reported together, so
	// one run of 'init --check' shows every mistake it can: go-toml stops
	// only at a value it cannot decode (a syntax or type error), and after
	// that nothing decoded is worth checking.
	var reported []error
	var unknownErr, scalarErr error
	if !lines.failed {
		known, text := runConfigKeys()
		var unknownN int
		unknownN, unknownErr = lines.unknown(name, known)
		scalarErr = lines.textScalars(name, text)
		reported = append(reported, unknownErr, scalarErr)
		if unknownN > maxConfigErrors {
			// go-toml checks each key of a table for a duplicate against
			// every key before it, quadratic in a file of unknown keys
			// (300,000 took minutes): past a mistyped config's few, the
			// values are not decoded.
			return nil, joinFlat(append(reported, &ValuesNotChecked{File: name, Unknown: unknownN})...)
		}
	}
	dec := toml.NewDecoder(bytes.NewReader(data))
	if unknownErr == nil {
		// Unknown keys found above are reported from there: go-toml's
		// strict mode, left on, built each one's error context from the
		// whole document before its result was set aside, quadratic in a
		// file of them (40,000 took minutes).
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&cfg); err != nil {
		var strict *toml.StrictMissingError
		switch {
		case errors.As(err, &strict):
			// A key the pass above took for known: a safety net.
			reported = append(reported, decodeError(err, name, data, lines))
		case scalarErr != nil:
			// The decoder's error for such a value names neither line
			// nor key: it is reported above.
			return nil, joinFlat(reported...)
		default:
			return nil, joinFlat(append(reported, decodeError(err, name, data, lines))...)
		}
	}
	if len(cfg.Cluster.Nodes) == 0 {
		cfg.Cluster.Nodes = Defaults().Cluster.Nodes
	}
	cfg.Cluster.Epoch = cfg.Cluster.Epoch.UTC()
	// "key = []" is the same as no key: nil, as in Defaults.
	for _, l := range []*[]string{&cfg.Seeds, &cfg.DNSServers, &cfg.NTPServers, &cfg.Storage.Dirs,
		&cfg.Scope.Include, &cfg.Scope.Exclude, &cfg.Scope.Domains} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if err := joinFlat(append(reported, cfg.validate(name, lines))...); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// joinFlat joins the error lists of several checks into one list, so that
// its reader (kspider init --check) counts and prints each error, not each
// check.
func joinFlat(errs ...error) error {
	var flat []error
	for _, err := range errs {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				flat = append(flat, shortError(e))
			}
		} else if err != nil {
			flat = append(flat, shortError(err))
		}
	}
	return errors.Join(flat...)
}

// runConfigKeys is the set of RunConfig's key paths, and those of them
// read from text with what they want.
func runConfigKeys() (map[string]bool, map[string]string) {
	set, text := map[string]bool{}, map[string]string{}
	tomlKeys(reflect.TypeFor[RunConfig](), "", set, text)
	return set, text
}

// decodeError turns the TOML library's errors into ones naming the file,
// line and key.
func decodeError(err error, name string, data []byte, lines *keyIndex) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		k := &checker{name: name}
		for i := range strict.Errors {
			e := &strict.Errors[i]
			line, _ := e.Position()
			k.add(fmt.Errorf("%s:%d: unknown key %s", name, line, printable(strings.Join(e.Key(), "."))))
		}
		return k.err()
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		f := friendlier(msg)
		if line == 1 && col == 1 && strings.HasPrefix(msg, "cannot decode TOML array ") {
			// An array in a list of strings or of nodes has no bytes of
			// its own for go-toml to point at: it said line 1, column 1,
			// and the key there. The key it names leads to the array.
			if k, l := lines.nestedArray(strings.Join(de.Key(), ".")); l > 0 {
				return fmt.Errorf("%s:%d: %s: %s", name, l, k, f)
			}
		}
		if v := lines.valueAt(data, line, col); v != "" && f != msg && typeMismatch.MatchString(msg) {
			// "a TOML string where an integer is wanted" named the line
			// and column of the value, not the value.
			f += ": " + v
		}
		// go-toml's message may quote a key ("key x is already defined").
		msg = printable(f)
		if key := printable(lines.keyAt(line, col)); key != "" {
			return fmt.Errorf("%s:%d:%d: %s: %s", name, line, col, key, msg)
		}
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "toml: "))
}

// typeMismatch is go-toml's message for a value of the wrong type, which
// names Go types the operator has never seen.
var typeMismatch = regexp.MustCompile(`^cannot decode TOML (\w+(?: \w+)*) into (?:struct field \S+ of type )?(\S+)$`)

// goTypes says what each Go type of RunConfig is in TOML terms.
var goTypes = map[string]string{
	"int": "an integer", "int64": "an integer", "bool": "true or false", "string": "a string",
	"[]string": "a list of strings", "[]spider.RunNode": "a list of nodes", "time.Time": "a date-time",
	"spider.Duration": "a duration string such as \"250ms\"",
}

// tableMismatch is go-toml's message for a table header ("[fetchers]",
// "[[limits]]") where no table or list of them is wanted.
var tableMismatch = regexp.MustCompile(`^cannot store (a table|an array table) in a (\S+)$`)

func friendlier(msg string) string {
	if strings.HasPrefix(msg, "parsing time ") {
		return "not a date-time such as 2026-01-01T00:00:00Z"
	}
	if m := tableMismatch.FindStringSubmatch(msg); m != nil {
		what := "table"
		if m[1] == "an array table" {
			what = "array of tables"
		}
		want, ok := goTypes[m[2]]
		switch {
		case m[2] == "struct":
			want = "a table"
		case !ok:
			return msg
		}
		return fmt.Sprintf("a TOML %s where %s is wanted", what, want)
	}
	m := typeMismatch.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	want, ok := goTypes[m[2]]
	if !ok {
		if strings.HasPrefix(m[2], "spider.Run") {
			want = "a table"
		} else {
			return msg
		}
	}
	return fmt.Sprintf("a TOML %s where %s is wanted", m[1], want)
}

// ScopeConfig is the scope.Config the config describes.
func (c *RunConfig) ScopeConfig() scope.Config {
	s := c.Scope
	return scope.Config{
		Include:          s.Include,
		Exclude:          s.Exclude,
		Domains:          s.Domains,
		MaxURLLength:     s.MaxURLLength,
		MaxPathDepth:     s.MaxPathDepth,
		MaxSegmentRepeat: s.MaxSegmentRepeat,
		RejectQuery:      s.RejectQuery,
		RejectCGI:        s.RejectCGI,
		MaxPagesPerHost:  c.Limits.MaxPagesPerHost,
		MaxSubdomains:    s.MaxSubdomains,
	}
}

// UserAgentHeader is the User-Agent the node sends.
func (c *RunConfig) UserAgentHeader() string {
	if c.Contact == "" {
		return c.UserAgent
	}
	return c.UserAgent + " (+" + c.Contact + ")"
}

// RobotsStaleFor is robots.Source.StaleFor for politeness.robots_stale_for,
// where 0 means never serve a stale copy (to the Source, 0 means its
// default).
func (c *RunConfig) RobotsStaleFor() time.Duration {
	if d := c.Politeness.RobotsStaleFor.Duration; d > 0 {
		return d
	}
	return -1
}

// StorageDirs are the page store's directories.
func (c *RunConfig) StorageDirs() []string {
	if len(c.Storage.Dirs) > 0 {
		return c.Storage.Dirs
	}
	return []string{filepath.Join(c.DataDir, "pages")}
}

// maxSeedLine bounds one line of a seeds file.
const maxSeedLine = 64 << 10

// seedsCheckEvery is how many lines of a seeds file are read between looks
// at the context: a file that never ends (a device, a pipe) must not make
// the first Ctrl-C a no-op.
const seedsCheckEvery = 4096

// maxSeedsFile bounds the bytes read from a seeds file: every seed is kept
// in memory until the scheduler has it, so a file that never ends but yields
// valid URLs (a pipe fed by a loop, a generator device) grew the process
// until Ctrl-C or the OOM killer.
const maxSeedsFile = 1 << 30

// LoadSeeds returns Seeds followed by the URLs of SeedsFile, each checked;
// errors name the file and line (at most maxConfigErrors of them). It stops
// with ctx's error, naming the line, when ctx ends first, and with an error
// naming the file and the bound when it holds over maxSeedsFile bytes.
func (c *RunConfig) LoadSeeds(ctx context.Context) ([]string, error) {
	return c.loadSeeds(ctx, maxSeedsFile)
}

func (c *RunConfig) loadSeeds(ctx context.Context, maxBytes int64) ([]string, error) {
	seeds := append([]string(nil), c.Seeds...)
	if c.SeedsFile == "" {
		return seeds, nil
	}
	f, stop, err := openInput(ctx, c.SeedsFile)
	if err != nil {
		return nil, fmt.Errorf("seeds_file: %w", err)
	}
	defer f.Close()
	defer stop()
	limited := &io.LimitedReader{R: f, N: maxBytes + 1}
	sc := bufio.NewScanner(limited)
	sc.Buffer(make([]byte, 4096), maxSeedLine)
	k := &checker{name: c.SeedsFile}
	line := 1
	for ; sc.Scan(); line++ {
		if line%seedsCheckEvery == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("seeds_file: reading %s: stopped at line %d: %w", c.SeedsFile, line, context.Cause(ctx))
		}
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, utf8BOM)
			if err := notUTF16(c.SeedsFile, []byte(text)); err != nil {
				return nil, fmt.Errorf("seeds_file: %w", err)
			}
		}
		s := strings.TrimSpace(text)
		if s == "" || s[0] == '#' {
			continue
		}
		if err := checkSeed(s); err != nil {
			k.add(fmt.Errorf("%s:%d: %v", c.SeedsFile, line, err))
			continue
		}
		seeds = append(seeds, s)
	}
	if err := sc.Err(); err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("seeds_file: reading %s: stopped at line %d: %w", c.SeedsFile, line, context.Cause(ctx))
	} else if err != nil {
		k.add(fmt.Errorf("seeds_file: reading %s: %w (lines are at most %d bytes)", c.SeedsFile, err, maxSeedLine))
	}
	if limited.N == 0 {
		// Reported alone: the errors of lines before it say nothing of a
		// file that never ends.
		return nil, fmt.Errorf("seeds_file: %s is over %d MiB (stopped at line %d): not a seeds file that ends; split the list or crawl it in parts", c.SeedsFile, maxBytes>>20, line)
	}
	if err := k.err(); err != nil {
		return nil, err
	}
	return seeds, nil
}
