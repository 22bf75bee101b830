package spider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunConfigEmptyIsDefaults(t *testing.T) {
	d := Defaults()
	if err := d.Validate(); err != nil {
		t.Fatalf("Defaults do not validate: %v", err)
	}
	for _, doc := range []string{"", "# nothing\n\n", "[limits]\n[cluster]\n"} {
		c, err := ParseRunConfig([]byte(doc), "x.toml")
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if !reflect.DeepEqual(*c, d) {
			t.Errorf("%q parsed to\n%+v\nwant Defaults\n%+v", doc, *c, d)
		}
	}
}

const fullConfig = `seeds = ["https://a.example/", "http://b.example:8080/x?y"]
seeds_file = "seeds.txt"
data_dir = "/var/lib/kspider"
fetchers = 500
pipelining = 8
user_agent = "TestBot/2.0"
contact = "mailto:ops@example.org"
from = "ops@example.org"
dns_servers = ["10.0.0.53", "[::1]:5353"]
ntp_servers = ["ntp1.example.org", "10.0.0.123:123"]
status = "0.0.0.0:8000"

[storage]
dirs = ["/disk1/pages", "/disk2/pages"]
codec = "zstd"

[scope]
include = ['^https?://[^/]*\.example/']
exclude = ['\.pdf$']
domains = ["example", "-b.example"]
max_url_length = 1000
max_path_depth = 10
max_segment_repeat = 2
reject_query = true
reject_cgi = true
max_subdomains = 50

[politeness]
delay = "250ms"
per_ip = 2
crawl_delay_cap = "10s"
robots_stale_for = "48h"

[limits]
max_body = 1048576
connect_timeout = "1s"
tls_timeout = "2s"
first_byte_timeout = "3s"
response_timeout = "4s"
idle_timeout = "5s"
max_depth = 0
max_pages_per_host = 0
max_links_per_page = 20000
max_pages = 1000000

[cluster]
node = 2
phases = 7
phase_length = "90s"
epoch = 2026-11-01T12:00:00+07:00
secret_file = "/etc/kspider/secret"
partition = "host"

[[cluster.nodes]]
id = 0
udp = "10.0.0.1:7410"
status = "10.0.0.1:7411"

[[cluster.nodes]]
id = 2
udp = "node2.example.org:7410"

[[cluster.nodes]]
id = 1
udp = "10.0.0.3:7410"
`

func TestRunConfigFull(t *testing.T) {
	c, err := ParseRunConfig([]byte(fullConfig), "full.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := RunConfig{
		Seeds: []string{"https://a.example/", "http://b.example:8080/x?y"}, SeedsFile: "seeds.txt",
		DataDir: "/var/lib/kspider", Fetchers: 500, Pipelining: 8,
		UserAgent: "TestBot/2.0", Contact: "mailto:ops@example.org", From: "ops@example.org",
		DNSServers: []string{"10.0.0.53", "[::1]:5353"}, NTPServers: []string{"ntp1.example.org", "10.0.0.123:123"},
		Status:  "0.0.0.0:8000",
		Storage: RunStorage{Dirs: []string{"/disk1/pages", "/disk2/pages"}, Codec: "zstd"},
		Scope: RunScope{Include: []string{`^https?://[^/]*\.example/`}, Exclude: []string{`\.pdf$`},
			Domains: []string{"example", "-b.example"}, MaxURLLength: 1000, MaxPathDepth: 10, MaxSegmentRepeat: 2,
			RejectQuery: true, RejectCGI: true, MaxSubdomains: 50},
		Politeness: RunPoliteness{Delay: Duration{250 * time.Millisecond}, PerIP: 2,
			CrawlDelayCap: Duration{10 * time.Second}, RobotsStaleFor: Duration{48 * time.Hour}},
		Limits: RunLimits{MaxBody: 1 << 20, ConnectTimeout: Duration{time.Second}, TLSTimeout: Duration{2 * time.Second},
			FirstByteTimeout: Duration{3 * time.Second}, ResponseTimeout: Duration{4 * time.Second},
			IdleTimeout: Duration{5 * time.Second}, MaxDepth: 0, MaxPagesPerHost: 0, MaxLinksPerPage: 20000, MaxPages: 1e6},
		Cluster: RunCluster{Node: 2, Phases: 7, PhaseLength: Duration{90 * time.Second},
			Epoch:      time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC),
			SecretFile: "/etc/kspider/secret", Partition: "host",
			Nodes: []RunNode{{0, "10.0.0.1:7410", "10.0.0.1:7411"}, {2, "node2.example.org:7410", ""}, {1, "10.0.0.3:7410", ""}}},
	}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("got\n%+v\nwant\n%+v", *c, want)
	}
	if got := c.RobotsStaleFor(); got != 48*time.Hour {
		t.Errorf("RobotsStaleFor = %v", got)
	}
	c.Politeness.RobotsStaleFor.Duration = 0
	if got := c.RobotsStaleFor(); got >= 0 {
		t.Errorf("robots_stale_for 0 gives StaleFor %v; want < 0 (never)", got)
	}
	if got := c.UserAgentHeader(); got != "TestBot/2.0 (+mailto:ops@example.org)" {
		t.Errorf("UserAgentHeader = %q", got)
	}
	if sc := c.ScopeConfig(); sc.MaxPagesPerHost != 0 || sc.MaxSubdomains != 50 || !sc.RejectCGI {
		t.Errorf("ScopeConfig = %+v", sc)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, `status: "0.0.0.0:8000" is not a loopback`) {
		t.Errorf("no warning for a non-loopback status address; warnings:\n%s", w)
	}
	if d := Defaults(); !reflect.DeepEqual(d.StorageDirs(), []string{"kspider-data/pages"}) ||
		!reflect.DeepEqual(c.StorageDirs(), want.Storage.Dirs) {
		t.Errorf("StorageDirs: %q, %q", d.StorageDirs(), c.StorageDirs())
	}
}

// TestRunConfigErrors: each bad document gives an error naming the line and
// the key.
func TestRunConfigErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"fetchers = 4\nfetcherz = 3\n", "x.toml:2: unknown key fetcherz"},
		{"[limits]\nmax_dept = 3\n", "x.toml:2: unknown key limits.max_dept"},
		{"[politics]\ndelay = \"1s\"\n", "x.toml:1: unknown key politics"},
		{"[cluster]\n[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:1\"\nport = 3\n", "x.toml:5: unknown key cluster.nodes[0].port"},
		{"\nfetchers = \"many\"\n", "x.toml:2:"},
		{"\nfetchers = \"many\"\n", "x.toml:2:12: fetchers: a TOML string where an integer is wanted"},
		{"[cluster]\nepoch = \"2026\"\n", "x.toml:2:9: cluster.epoch: not a date-time such as 2026-01-01T00:00:00Z"},
		{"[cluster]\nepoch = 2026-01-01\n", "x.toml:2: cluster.epoch: needs a UTC offset"},
		{"[cluster]\nepoch = 2026-01-01T10:00:00\n", "x.toml:2: cluster.epoch: needs a UTC offset"},
		{"seeds = 0000-01-10\n", "x.toml:1:"},
		{"[politeness]\n\ndelay = \"soon\"\n", "x.toml:3:"},
		{"[politeness]\n\ndelay = \"soon\"\n", `politeness.delay: not a duration (like "250ms" or "1m30s"): "soon"`},
		{"[politeness]\ndelay = \"-1s\"\n", "x.toml:2: politeness.delay: negative duration -1s"},
		// Numbers and booleans where text is wanted: go-toml's error for
		// them named neither line nor key.
		{"[politeness]\ndelay = 5\n", `x.toml:2: politeness.delay: a TOML integer where a duration string such as "250ms" is wanted`},
		{"[limits]\nidle_timeout = true\n", "x.toml:2: limits.idle_timeout: a TOML bool where a duration"},
		{"[cluster]\nphase_length = 1.5\n", "x.toml:2: cluster.phase_length: a TOML float where a duration"},
		{"[cluster]\nepoch = 5\n", "x.toml:2: cluster.epoch: a TOML integer where a date-time is wanted"},
		{"[politeness]\ndelay = 2026-01-01\n", `x.toml:2:9: politeness.delay: a TOML local date where a duration string such as "250ms" is wanted`},
		{"[politeness]\ncrawl_delay_cap = \"-5m\"\n", "x.toml:2: politeness.crawl_delay_cap: negative duration"},
		// Added to the time of day, it wrapped round: no delay at all.
		{"[politeness]\ndelay = \"2562047h\"\n", "x.toml:2: politeness.delay: 2562047h is above 1h"},
		{"[politeness]\ndelay = \"1h0m1s\"\n", "x.toml:2: politeness.delay: 1h0m1s is above 1h"},
		// The scheduler took 0 for its default, a minute: Crawl-delay obeyed
		// up to 60 s where the operator had asked for it never to matter.
		{"[politeness]\ncrawl_delay_cap = \"0s\"\n", "x.toml:2: politeness.crawl_delay_cap: must be longer than 0"},
		// The scheduler refused it at the node's start, naming no file or key.
		{"[politeness]\ncrawl_delay_cap = \"2562047h\"\n", "x.toml:2: politeness.crawl_delay_cap: 2562047h is above 876000h"},
		{"[limits]\nconnect_timeout = \"0s\"\n", "x.toml:2: limits.connect_timeout: must be longer than 0"},
		{"[limits]\nmax_depth = 255\n", "x.toml:2: limits.max_depth: 255 is out of range 0..253"},
		{"[limits]\nmax_depth = 254\n", "x.toml:2: limits.max_depth: 254 is out of range 0..253"},
		{"[limits]\nmax_depth = -1\n", "limits.max_depth: -1 is out of range"},
		{"[limits]\nmax_body = 0\n", "x.toml:2: limits.max_body: 0 is out of range"},
		{"fetchers = 0\n", "x.toml:1: fetchers: 0 is out of range 1..100000"},
		{"pipelining = 0\n", "x.toml:1: pipelining: 0 is out of range"},
		{"seeds = [\n  \"https://ok.example/\",\n  \"ftp://x.example/\",\n]\n", `x.toml:3: seeds[1]: "ftp://x.example/" is not an absolute http(s) URL`},
		{"seeds = [\"example.org\"]\n", `x.toml:1: seeds[0]: "example.org" is not an absolute http(s) URL`},
		{"seeds = [\"http:///path\"]\n", `seeds[0]: "http:///path" is not`},
		{"status = \"localhost\"\n", `x.toml:1: status: "localhost" is not ip:port`},
		{"status = \"example.org:80\"\n", `status: "example.org:80": "example.org" is not an IP address`},
		{"status = \"127.0.0.1:99999\"\n", `status: "127.0.0.1:99999": port "99999" is not 0..65535`},
		// A node's status is listened on as the top-level one is: the same check.
		{"[cluster]\n[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:1\"\nstatus = \"node0.example:7411\"\n",
			`x.toml:5: cluster.nodes[0].status: "node0.example:7411": "node0.example" is not an IP address`},
		{"[cluster]\n[[cluster.nodes]]\nid = 0\nudp = \"127.0.0.1:1\"\nstatus = \"127.0.0.1\"\n",
			`x.toml:5: cluster.nodes[0].status: "127.0.0.1" is not ip:port`},
		{"user_agent = \"My Bot\"\n", `user_agent: "My Bot" is not a product token`},
		{"contact = \"call me\"\n", `contact: "call me" is not an http(s) or mailto URL`},
		// Sent as "(+mailto:)": no way to reach the operator.
		{"contact = \"mailto:\"\n", `x.toml:1: contact: "mailto:" is not an http(s) or mailto URL`},
		{"contact = \"mailto:nobody\"\n", `x.toml:1: contact: "mailto:nobody" is not an http(s) or mailto URL`},
		{"contact = \"mailto:?subject=crawler\"\n", `contact: "mailto:?subject=crawler" is not`},
		{"from = \"not an address\"\n", `from: "not an address" is not an e-mail address`},
		{"dns_servers = [\"8.8.8.8\", \"dns.example\"]\n", `x.toml:1: dns_servers[1]: "dns.example" is not an IP address`},
		{"ntp_servers = [\"bad host!\"]\n", `ntp_servers[0]: "bad host!": "bad host!" is neither`},
		{"data_dir = \"\"\n", "x.toml:1: data_dir: must not be empty"},
		{"[storage]\ndirs = [\"/a\", \"/b\", \"/a/\"]\n", `x.toml:2: storage.dirs[2]: "/a/" is storage.dirs[0] again`},
		{"data_dir = \"/d\"\n[storage]\ndirs = [\"/e\", \"/d/\"]\n", `x.toml:3: storage.dirs[1]: "/d/" is data_dir; use a directory of its own such as "/d/pages"`},
		{"[storage]\ncodec = \"gzip\"\n", `x.toml:2: storage.codec: "gzip" is not one of none, lzo, s2, zstd`},
		// The filter takes it for no limit at all (its first occurrence
		// would be a repeat): the operator asked for the strictest.
		{"[scope]\nmax_segment_repeat = 1\n", "x.toml:2: scope.max_segment_repeat: 1 would refuse every path"},
		{"[scope]\ninclude = [\"(\"]\n", "x.toml:2: scope.include[0]: error parsing regexp"},
		{"[scope]\ndomains = [\"a..b\"]\n", "x.toml:2: scope.domains[0]:"},
		{"[cluster]\nnode = 1\n", "x.toml:2: cluster.node: node 1 is not in cluster.nodes"},
		{"[cluster]\nphases = 0\n", "x.toml:2: cluster.phases: 0 phases for 1 nodes"},
		{"[cluster]\nphase_length = \"0s\"\n", "x.toml:2: cluster.phase_length: must be longer than 0"},
		{"[cluster]\nphases = 2\nphase_length = \"400ms\"\n", `x.toml:3: cluster.phase_length: 400ms leaves no time to fetch: with partition "url" the nodes take turns, and no fetch starts within 200ms of either end of a slot`},
		{"[cluster]\nphase_length = \"2562047h\"\n", "x.toml:2: cluster.phase_length: 2562047h0m0s is longer than 24h0m0s: a host's turn comes once in phases × phase_length"},
		{"[cluster]\nepoch = 9999-12-31T00:00:00Z\n", "x.toml:2: cluster.epoch: 9999-12-31T00:00:00Z is more than 100 years from now"},
		{"[cluster]\nepoch = 1000-01-01T00:00:00Z\n", "x.toml:2: cluster.epoch: 1000-01-01T00:00:00Z is more than 100 years from now"},
		{"[cluster]\npartition = \"ip\"\n", `x.toml:2: cluster.partition: "ip" is not "url", "host" or "domain"`},
		{"[cluster]\nphases = 2\nsecret_file = \"s\"\n[[cluster.nodes]]\nid = 0\nudp = \"10.0.0.1:1\"\n[[cluster.nodes]]\nid = 0\nudp = \"10.0.0.1:1\"\n",
			"x.toml:8: cluster.nodes[1].id: id 0 is given twice"},
		{"[cluster]\nphases = 2\nsecret_file = \"s\"\n[[cluster.nodes]]\nid = 0\nudp = \"10.0.0.1:1\"\n[[cluster.nodes]]\nid = 1\nudp = \"10.0.0.1:1\"\n",
			`x.toml:9: cluster.nodes[1].udp: "10.0.0.1:1" is cluster.nodes[0]'s too`},
		{"[cluster]\nphases = 2\nsecret_file = \"s\"\n[[cluster.nodes]]\nid = 0\nudp = \"10.0.0.1:1\"\n[[cluster.nodes]]\nid = 1\nudp = \"[::ffff:10.0.0.1]:1\"\n",
			`x.toml:9: cluster.nodes[1].udp: "[::ffff:10.0.0.1]:1" is cluster.nodes[0]'s too`},
		{"[cluster]\nphases = 2\nsecret_file = \"s\"\n[[cluster.nodes]]\nid = 0\nudp = \"10.0.0.1:1\"\n[[cluster.nodes]]\nid = 1\nudp = \"0.0.0.0:7410\"\n",
			`x.toml:9: cluster.nodes[1].udp: "0.0.0.0:7410": 0.0.0.0 is the unspecified address, which peers cannot send to`},
		{"[cluster]\n[[cluster.nodes]]\nid = 0\nudp = \"[::]:7410\"\n",
			`x.toml:4: cluster.nodes[0].udp: "[::]:7410": :: is the unspecified address`},
		{"[cluster]\n[[cluster.nodes]]\nid = 0\nudp = \"239.1.2.3:7410\"\n",
			`x.toml:4: cluster.nodes[0].udp: "239.1.2.3:7410": 239.1.2.3 is a multicast or broadcast address`},
		{"[cluster]\nphases = 1\nsecret_file = \"s\"\n[[cluster.nodes]]\nid = 0\nudp = \"10.0.0.1:1\"\n[[cluster.nodes]]\nid = 1\nudp = \"10.0.0.2:1\"\n",
			"x.toml:2: cluster.phases: 1 phases for 2 nodes"},
		{"[cluster]\nphases = 2\nnodes = [{id = 0, udp = \"a:1\"},\n  {id = 1, udp = \"b:1\"}]\n",
			"x.toml:1: cluster.secret_file: required with 2 nodes"},
		{"[cluster]\nnodes = [{id = 0, udp = \"a:1\"},\n  {id = 5, udp = \"b\"}]\n",
			"x.toml:3: cluster.nodes[1].id: 5 is out of range 0..1"},
		{"[cluster]\nnodes = [{id = 0, udp = \"a:1\"},\n  {id = 5, udp = \"b\"}]\n",
			`x.toml:3: cluster.nodes[1].udp: "b" is not host:port`},
		{"fetchers = 3\nfetchers = 4\n", "x.toml:2:1: fetchers: key fetchers is already defined"},
		{"[limits]\nmax_depth = 3\n[limits]\n", "x.toml:3:2: limits: table limits already exists"},
		{"[limits\n", "x.toml:1:"},
	} {
		_, err := ParseRunConfig([]byte(c.doc), "x.toml")
		if err == nil {
			t.Errorf("%q: no error, want %q", c.doc, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %q", c.doc, err, c.want)
		}
	}
}

func TestRunConfigAllErrorsReported(t *testing.T) {
	_, err := ParseRunConfig([]byte("fetchers = 0\npipelining = 0\n[limits]\nmax_depth = 999\n"), "x.toml")
	for _, want := range []string{"x.toml:1: fetchers", "x.toml:2: pipelining", "x.toml:4: limits.max_depth"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// TestRunConfigBig: a large document is read in linear time and its errors
// are capped.
func TestRunConfigBig(t *testing.T) {
	var b strings.Builder
	b.WriteString("seeds = [\n")
	for i := 0; i < 50_000; i++ {
		fmt.Fprintf(&b, "  \"https://h%d.example/\",\n", i)
	}
	b.WriteString("  \"bad\",\n]\n")
	_, err := ParseRunConfig([]byte(b.String()), "big.toml")
	if err == nil || !strings.Contains(err.Error(), "big.toml:50002: seeds[50000]: \"bad\"") {
		t.Errorf("error %v", err)
	}
	b.Reset()
	for i := 0; i < 10_000; i++ {
		fmt.Fprintf(&b, "unknown%d = 1\n", i)
	}
	_, err = ParseRunConfig([]byte(b.String()), "big.toml")
	if err == nil || !strings.Contains(err.Error(), "big.toml:1: unknown key unknown0") ||
		!strings.Contains(err.Error(), fmt.Sprintf("big.toml: %d more errors", 10_000-maxConfigErrors)) {
		t.Errorf("error %.300v", err)
	}
}

func TestLoadRunConfigAndSeeds(t *testing.T) {
	dir := t.TempDir()
	seeds := writeFile(t, dir, "seeds.txt", "# seeds\nhttps://c.example/\n\n  http://d.example/a  \n")
	path := writeFile(t, dir, "crawl.toml", "seeds = [\"https://a.example/\"]\nseeds_file = \""+seeds+"\"\n")
	c, err := LoadRunConfig(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.LoadSeeds(context.Background())
	if want := []string{"https://a.example/", "https://c.example/", "http://d.example/a"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadSeeds = %q, %v; want %q", got, err, want)
	}
	writeFile(t, dir, "seeds.txt", "https://c.example/\nnot a url\nmailto:x@y\n"+strings.Repeat("x", maxSeedLine+1)+"\n")
	_, err = c.LoadSeeds(context.Background())
	for _, want := range []string{seeds + ":2: \"not a url\" is not", seeds + ":3: \"mailto:x@y\"", "lines are at most"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadSeeds error %v lacks %q", err, want)
		}
	}
	c.SeedsFile = filepath.Join(dir, "missing")
	if _, err := c.LoadSeeds(context.Background()); err == nil || !strings.Contains(err.Error(), "seeds_file:") {
		t.Errorf("missing seeds file: %v", err)
	}
	if _, err := LoadRunConfig(context.Background(), filepath.Join(dir, "missing.toml")); err == nil || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("missing config: %v", err)
	}
	writeFile(t, dir, "crawl.toml", "[limits]\nmax_depth = 300\n")
	if _, err := LoadRunConfig(context.Background(), path); err == nil || !strings.Contains(err.Error(), path+":2: limits.max_depth") {
		t.Errorf("bad config: %v", err)
	}
}

// TestRunConfigBOM: config and seeds files saved by an editor that starts
// them with a UTF-8 byte order mark (Windows Notepad) are read as without
// it; the config was refused with "invalid character at start of key:
// U+00EF 'ï'", a character the operator cannot see, and a seeds file's
// first line was "not an absolute http(s) URL", a comment too.
func TestRunConfigBOM(t *testing.T) {
	const bom = "\ufeff"
	dir := t.TempDir()
	seeds := writeFile(t, dir, "seeds.txt", bom+"# seeds\r\nhttps://c.example/\r\n")
	path := writeFile(t, dir, "crawl.toml", bom+"seeds = [\"https://a.example/\"]\r\nseeds_file = \""+seeds+"\"\r\n[limits]\r\nmax_depth = 300\r\n")
	if _, err := LoadRunConfig(context.Background(), path); err == nil || err.Error() != path+":4: limits.max_depth: 300 is out of range 0..253" {
		t.Errorf("config with a BOM and a bad depth: %v", err)
	}
	writeFile(t, dir, "crawl.toml", bom+"seeds = [\"https://a.example/\"]\r\nseeds_file = \""+seeds+"\"\r\n")
	c, err := LoadRunConfig(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.LoadSeeds(context.Background())
	if want := []string{"https://a.example/", "https://c.example/"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LoadSeeds = %q, %v; want %q", got, err, want)
	}
	writeFile(t, dir, "seeds.txt", bom+"https://b.example/\n")
	got, err = c.LoadSeeds(context.Background())
	if want := []string{"https://a.example/", "https://b.example/"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LoadSeeds = %q, %v; want %q", got, err, want)
	}
}

// writeFile writes text to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunConfigWarnings(t *testing.T) {
	d := Defaults()
	w := strings.Join(d.Warnings(), "\n")
	for _, want := range []string{"seeds: none", "contact:"} {
		if !strings.Contains(w, want) {
			t.Errorf("Defaults' warnings lack %q:\n%s", want, w)
		}
	}
	if strings.Contains(w, "status:") {
		t.Errorf("warning for the loopback default status:\n%s", w)
	}
	for _, s := range []string{":7411", "0.0.0.0:7411", "[::]:7411", "10.1.2.3:80"} {
		d.Status = s
		if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(w, "status: \""+s+"\" is not a loopback") {
			t.Errorf("no warning for status %q", s)
		}
	}
	for _, s := range []string{"localhost:1", "127.0.0.2:1", "[::1]:1", ""} {
		d.Status = s
		if w := strings.Join(d.Warnings(), "\n"); strings.Contains(w, "status:") {
			t.Errorf("warning for status %q: %s", s, w)
		}
	}
	// A node's own status address, which it listens on in place of the
	// top-level one, was warned of only when the node listened on it, not
	// at kspider init --check.
	d.Status = ""
	d.Cluster.Nodes = []RunNode{{ID: 0, UDP: "127.0.0.1:7410", Status: "127.0.0.1:7411"}, {ID: 1, UDP: "127.0.0.1:7412", Status: "0.0.0.0:7413"}, {ID: 2, UDP: "127.0.0.1:7414"}}
	w = strings.Join(d.Warnings(), "\n")
	if !strings.Contains(w, `cluster.nodes[1].status: "0.0.0.0:7413" is not a loopback address: anyone who can reach it sees the crawl and may control it`) ||
		strings.Contains(w, "cluster.nodes[0]") || strings.Contains(w, "cluster.nodes[2]") {
		t.Errorf("warnings for cluster.nodes[].status loopback, 0.0.0.0 and none:\n%s", w)
	}
	d.Cluster.Nodes = Defaults().Cluster.Nodes
	// A short slot: a warning with turns (url partitioning) only.
	d.Cluster.Phases = 2
	d.Cluster.PhaseLength = Duration{time.Second}
	if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(w, "cluster.phase_length: 1s: no fetch starts within 200ms of either end of a slot, 40% of it") {
		t.Errorf("no warning for a 1s slot:\n%s", w)
	}
	d.Cluster.Partition = "host"
	if w := strings.Join(d.Warnings(), "\n"); strings.Contains(w, "phase_length") {
		t.Errorf("warning for a 1s slot without turns:\n%s", w)
	}
	// NTP servers a node alone never asks: said, not ignored in silence.
	d.NTPServers = []string{"ntp.example.org"}
	if w := strings.Join(d.Warnings(), "\n"); strings.Contains(w, "ntp_servers:") {
		t.Errorf("warning for the NTP servers of a cluster:\n%s", w)
	}
	d.Cluster.Phases = 1
	if w := strings.Join(d.Warnings(), "\n"); !strings.Contains(w, "ntp_servers: unused: a node alone (one node, one phase) keeps no phase clock") {
		t.Errorf("no warning for the NTP servers of a node alone:\n%s", w)
	}
}

func TestDurationString(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 250 * time.Millisecond: "250ms", time.Minute: "1m",
		24 * time.Hour: "24h", 90 * time.Minute: "1h30m", time.Hour + time.Second: "1h0m1s", -time.Minute: "-1m"} {
		if got := (Duration{d}).String(); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
		var back Duration
		if err := back.UnmarshalText([]byte(want)); err != nil || back.Duration != d {
			t.Errorf("%q reads back as %v, %v", want, back, err)
		}
	}
}

func FuzzParseRunConfig(f *testing.F) {
	f.Add([]byte(fullConfig))
	f.Add([]byte("[cluster]\nnodes = [{id = 0, udp = \"a:1\"}, {id = 1}]\n"))
	f.Add([]byte("seeds = [[1], {a = 2}]\n[a.b.c]\n[[a.b]]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseRunConfig(data, "f.toml")
		if err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("parsed config does not validate: %v", err)
			}
		}
	})
}

// TestLoadSeedsInterrupted: a seeds file that never ends (a device, a pipe)
// must not make a Ctrl-C a no-op: LoadSeeds stops with the context's error,
// naming the line.
func TestLoadSeedsInterrupted(t *testing.T) {
	dir := t.TempDir()
	seeds := writeFile(t, dir, "seeds.txt", strings.Repeat("https://a.example/\n", 3*seedsCheckEvery))
	c := Defaults()
	c.SeedsFile = seeds
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := c.LoadSeeds(ctx)
	if got != nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), fmt.Sprintf("stopped at line %d", seedsCheckEvery)) {
		t.Fatalf("LoadSeeds(cancelled) = %d seeds, %v", len(got), err)
	}
	if got, err := c.LoadSeeds(context.Background()); err != nil || len(got) != len(c.Seeds)+3*seedsCheckEvery {
		t.Fatalf("LoadSeeds = %d seeds, %v", len(got), err)
	}
}

// TestLoadFromPipeInterrupted: a config or seeds file that is a named pipe
// nothing writes to hung LoadRunConfig and LoadSeeds in open(2) (and, with
// a writer that never writes, in read(2)) past Ctrl-C and SIGTERM; now
// they end with the context's error naming the file. A pipe whose writer
// comes after the reader is still read whole.
func TestLoadFromPipeInterrupted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	c := Defaults()
	c.SeedsFile = fifo
	loaders := map[string]func(context.Context) error{
		"config": func(ctx context.Context) error { _, err := LoadRunConfig(ctx, fifo); return err },
		"seeds":  func(ctx context.Context) error { _, err := c.LoadSeeds(ctx); return err },
	}
	for name, load := range loaders {
		for _, writer := range []bool{false, true} {
			var w *os.File
			if writer { // opened, never written: the reader's open returns, its read waits
				opened := make(chan *os.File, 1)
				go func() {
					f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err != nil {
						f = nil
					}
					opened <- f
				}()
				r, err := os.Open(fifo) // lets the writer's open return
				if err != nil {
					t.Fatal(err)
				}
				w = <-opened
				r.Close()
				if w == nil {
					t.Fatal("no writer")
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- load(ctx) }()
			time.Sleep(50 * time.Millisecond)
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), fifo) {
					t.Errorf("%s, writer %v: %v; want context canceled naming %s", name, writer, err, fifo)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s, writer %v: still reading a minute after the context ended", name, writer)
			}
			if w != nil {
				w.Close()
			}
		}
	}
	// The writer opening after the reader: the seeds are read.
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.Write([]byte("https://a.example/\n"))
			f.Close()
		}
	}()
	if got, err := c.LoadSeeds(context.Background()); err != nil || len(got) != 1 {
		t.Fatalf("seeds from a pipe written to: %q, %v", got, err)
	}
}

// TestLoadSeedsEndless: a seeds file that never ends but yields valid URLs
// (a pipe fed by a loop) grew the process until Ctrl-C; now reading stops
// at the bound with an error naming the file and the bound.
func TestLoadSeedsEndless(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	stopWriter := make(chan struct{})
	defer close(stopWriter)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		for i := 0; ; i++ {
			select {
			case <-stopWriter:
				return
			default:
			}
			if _, err := fmt.Fprintf(f, "https://h%d.example/\n", i); err != nil {
				return // the reader gave up
			}
		}
	}()
	c := Defaults()
	c.SeedsFile = fifo
	// A deadline so that a reader without the bound fails the test, not hangs it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const bound = 2 << 20
	got, err := c.loadSeeds(ctx, bound)
	if want := fifo + " is over 2 MiB"; err == nil || !strings.Contains(err.Error(), want) || got != nil {
		t.Fatalf("loadSeeds of an endless pipe = %d seeds, %v; want an error with %q", len(got), err, want)
	}
}

// TestRunConfigErrorsAtOnce: README says a config's errors are reported
// all at once, but parsing stopped at the unknown keys, so an operator
// fixing them met the range errors only at the next try; now unknown keys
// and the values' checks come together, and a value go-toml cannot decode
// is reported with the unknown keys before it.
func TestRunConfigErrorsAtOnce(t *testing.T) {
	doc := "fetcherz = 3\n[limits]\nmax_depth = 300\n"
	_, err := ParseRunConfig([]byte(doc), "x.toml")
	for _, want := range []string{"x.toml:1: unknown key fetcherz", "x.toml:3: limits.max_depth: 300 is out of range"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRunConfig(%q) = %v; want it to say %q", doc, err, want)
		}
	}
	doc = "fetcherz = 3\n[politeness]\ndelay = 5\n"
	_, err = ParseRunConfig([]byte(doc), "x.toml")
	for _, want := range []string{"x.toml:1: unknown key fetcherz", "x.toml:3: politeness.delay: a TOML integer"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRunConfig(%q) = %v; want it to say %q", doc, err, want)
		}
	}
	doc = "fetcherz = 3\nfetchers = \"many\"\n"
	_, err = ParseRunConfig([]byte(doc), "x.toml")
	for _, want := range []string{"x.toml:1: unknown key fetcherz", "x.toml:2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRunConfig(%q) = %v; want it to say %q", doc, err, want)
		}
	}
}
