package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/status"
)

// runCtl sends a control request to a running node's status server.
func runCtl(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "ctl", "ctl pause|resume|drain|set KEY=VALUE... [--status ADDR] [--dir DIR]", `
Steers a running 'kspider run' through its status server:
  pause          cut the lists out (their URLs go back to the queue) and start none
  resume         start lists again
  drain          start no list, let the lists out finish; the run then syncs and
                 exits 0, and running it again continues
  set KEY=VALUE  change a setting at run time: delay (politeness delay after each
                 list, like 250ms) or fetchers (lists at once, up to the configured)
The control token is read from DIR/STATUS_TOKEN (the node's data directory)
and, unless --status is given, the node's status address from DIR/STATUS_ADDR,
which the node writes as its status page starts listening. The token is
sent to no server of this machine another user than the file's owner
(or root) runs (on Linux, where /proc/net/tcp says who: the node stopped,
another user's process may hold its port).`)
	addr := fs.String("status", "", "the node's status server `ADDR`ess (host:port; default: the one DIR/STATUS_ADDR records)")
	dir := fs.String("dir", ".", "the node's data `DIR`ectory, which holds STATUS_TOKEN")
	// Flags may come after the action: kspider ctl pause --status ADDR.
	var words []string
	rest := args
	for {
		if err := parseFlags(e, fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(words) == 0 {
		return usagef("an action is required: pause, resume, drain or set KEY=VALUE")
	}
	action, form := words[0], url.Values{}
	switch action {
	case "pause", "resume", "drain":
		if len(words) > 1 {
			return usagef("%s takes no argument, got %q", action, words[1])
		}
	case "set":
		if len(words) < 2 {
			return usagef("set needs KEY=VALUE (delay=250ms, fetchers=100)")
		}
		for _, kv := range words[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usagef("set: %q is not KEY=VALUE", kv)
			}
			if form.Has(k) && form.Get(k) != v {
				// The node takes the last, so "delay=1s delay=10s" set
				// 10s of a mistyped line without a word: refused as a
				// flag given twice is.
				return usagef("set: %s is given twice, with different values (%q, %q): give it once", k, form.Get(k), v)
			}
			form.Set(k, v)
		}
	default:
		return usagef("unknown action %q: pause, resume, drain or set KEY=VALUE", action)
	}
	addrFile := "" // the file *addr was read from, if it was
	if *addr == "" {
		// The node's config, a --status of its run or its cluster.nodes
		// entry may each have set it, a port 0 chosen at the listen: the
		// node records where it listens, and only it knows.
		a, err := spider.ReadStatusAddr(*dir)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: not found: no node with a status page runs on %s (stopped, its status off, or another --dir); give its address with --status",
				filepath.Join(*dir, spider.StatusAddrFile), *dir)
		}
		if err != nil {
			return fmt.Errorf("status address: %w; or give it with --status", err)
		}
		*addr, addrFile = a, filepath.Join(*dir, spider.StatusAddrFile)
	}
	// Checked before the token goes out: "host:port/x?" would send it, to
	// another path, wherever that names.
	_, port, err := net.SplitHostPort(*addr)
	if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 1 || p > 65535 || strings.ContainsAny(*addr, "/?#@ ") {
		return usagef("--status %q is not host:port (a port from 1 to 65535)", *addr)
	}
	tok, err := status.ReadToken(*dir)
	if err != nil {
		return fmt.Errorf("control token: %w (give the node's data directory with --dir)", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+*addr+"/control/"+action, strings.NewReader(form.Encode()))
	if err != nil {
		return usagef("--status %q: %v", *addr, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+tok)
	owner, err := fileOwner(filepath.Join(*dir, status.TokenFile))
	if err != nil {
		return fmt.Errorf("control token: %w", err)
	}
	resp, err := ctlClient(owner).Do(req)
	var foreign *foreignServerError
	if errors.As(err, &foreign) {
		return foreign
	}
	if err != nil && addrFile != "" {
		// The node removes the file when its page stops, so one left names
		// a node killed (kill -9, a crash, the machine's power) more often
		// than one gone quiet.
		return fmt.Errorf("no node answers at %s, the address %s records: %w; the node that wrote it may be stopped (killed before it could remove the file): check that a kspider runs on %s (%s names its pid), or give its address with --status",
			*addr, addrFile, err, *dir, filepath.Join(*dir, "LOCK"))
	}
	if err != nil {
		return fmt.Errorf("no node answers at %s: %w", *addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var ans struct {
		OK    bool   `json:"ok"`
		State string `json:"state"`
		Error string `json:"error"`
	}
	// A 200 that does not say ok is no node's answer (another server on
	// the port, a proxy's page): the node is not known to have done it.
	if err := json.Unmarshal(body, &ans); err != nil || resp.StatusCode != http.StatusOK || !ans.OK {
		msg := strings.TrimSpace(ans.Error)
		if msg == "" {
			msg = strings.TrimSpace(string(body))
		}
		if resp.StatusCode == http.StatusForbidden && addrFile != "" {
			// This directory's node wrote the address: another node
			// listening there now took it after this one stopped.
			return fmt.Errorf("the node at %s, the address %s records, refused the token of %s (%s): it is another data directory's node, which listens there since the node that wrote %s stopped (killed before it could remove the file); check that a kspider runs on %s, or give its address with --status",
				*addr, addrFile, filepath.Join(*dir, status.TokenFile), msg, addrFile, *dir)
		}
		if resp.StatusCode == http.StatusForbidden {
			// ctl sends no Origin or Sec-Fetch-Site: the token is what
			// was refused, and the file is likely right but another
			// node's (two on one machine, the other's --status or --dir).
			return fmt.Errorf("the node at %s refused the token of %s (%s): it is another data directory's node; give the address of that directory's with --status, or this one's directory with --dir",
				*addr, filepath.Join(*dir, status.TokenFile), msg)
		}
		if resp.StatusCode == http.StatusOK && addrFile != "" {
			// Another server holds the port this directory's node had.
			return fmt.Errorf("%s, the address %s records, answered 200 but not ok: %.200q: not a node's answer, the node is not known to have done it; the node that wrote %s may be stopped (killed before it could remove the file) and another server listen there now: check that a kspider runs on %s, or give its address with --status",
				*addr, addrFile, msg, addrFile, *dir)
		}
		if resp.StatusCode == http.StatusOK {
			return fmt.Errorf("%s answered 200 but not ok: %.200q: not a node's answer; the node is not known to have done it", *addr, msg)
		}
		return fmt.Errorf("%s: %s: %s", *addr, resp.Status, msg)
	}
	fmt.Fprintf(e.stdout, "%s: ok, node %s\n", action, ans.State)
	return nil
}

// ctlClient is the client ctl sends the token with. It asks no proxy:
// http.DefaultClient's takes one from $HTTP_PROXY for any address but
// loopback, and a machine set up so (as many are) sent the token to its
// proxy with every ctl of a node on another machine. And it sends nothing
// to a server of this machine that another user than uid (the token's
// owner) runs (checkServerOwner).
func ctlClient(uid uint32) *http.Client {
	dial := (&net.Dialer{}).DialContext
	return &http.Client{Transport: &http.Transport{Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if err := checkServerOwner(conn, uid); err != nil {
				conn.Close()
				return nil, err
			}
			return conn, nil
		}}}
}
