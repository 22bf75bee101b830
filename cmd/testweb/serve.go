package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

const serveDescription = `Serves a deterministic web of many hosts on loopback: every host has its own
127.x address and all share one HTTP port and one HTTPS port (a self-signed CA
generated at start; --ca writes it out). A DNS server on --dns answers for
every host name. The same --seed always gives the same web. Serves until
SIGINT or SIGTERM; prints the seed URLs and the addresses to use.`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(stderr, "serve", "[serve] [flags]", serveDescription)
	hosts := fs.Int("hosts", 2000, "number of hosts (each takes 2 open files: at most (RLIMIT_NOFILE - 512) / 2)")
	seed := fs.Int64("seed", 1, "generation seed")
	maxPages := fs.Int("max-pages", 0, "pages of the most popular host (0: 30000)")
	seeds := fs.Int("seeds", 10, "number of seed URLs (0: 10)")
	plain := fs.Bool("plain", false, "no hostile hosts, DNS failures or odd robots.txt")
	httpAddr := fs.String("http", "127.0.0.1:18080", "HTTP ip:port (the port every host address shares; 0 picks one)")
	httpsAddr := fs.String("https", "127.0.0.1:18443", "HTTPS ip:port")
	dnsAddr := fs.String("dns", "127.0.0.1:15353", "DNS ip:port (UDP and TCP); empty: no DNS")
	logPath := fs.String("log", "", "write the request log (JSON lines) to this file")
	caPath := fs.String("ca", "", "write the CA certificate (PEM) to this file")
	anyAddr := fs.Bool("any-addr", false, "serve any host on any address (no 421 for misdirected requests)")
	slow := fs.Duration("slow", 2*time.Second, "delay of slow hosts (0: 2s)")
	stall := fs.Duration("stall", 10*time.Second, "how long stalling responses stall (0: 10s)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *hosts < 1 {
		return usagef("--hosts must be at least 1")
	}
	if err := checkHosts(*hosts, openFilesLimit()); err != nil {
		return err
	}
	// Below zero each of these was taken as its default (--slow -1s as
	// 2 s), which is not what was asked for.
	switch {
	case *maxPages < 0:
		return usagef("--max-pages %d is negative", *maxPages)
	case *seeds < 0:
		return usagef("--seeds %d is negative", *seeds)
	case *slow < 0:
		return usagef("--slow %v is negative", *slow)
	case *stall < 0:
		return usagef("--stall %v is negative", *stall)
	}
	var logw io.Writer
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		logw = f
	}
	web := testweb.Generate(testweb.Config{Hosts: *hosts, Seed: *seed, MaxPages: *maxPages, Seeds: *seeds, Plain: *plain})
	srv, err := testweb.Start(ctx, web, testweb.ServeConfig{
		HTTPAddr: *httpAddr, HTTPSAddr: *httpsAddr, DNSAddr: *dnsAddr, Log: logw,
		AnyAddr: *anyAddr, SlowDelay: *slow, StallFor: *stall,
	})
	if err != nil {
		return err
	}
	if *caPath != "" {
		if err := os.WriteFile(*caPath, srv.CACertPEM(), 0o644); err != nil {
			srv.Close()
			return err
		}
	}
	out := bufio.NewWriter(stdout)
	fmt.Fprintf(out, "testweb: %d hosts, %d pages, seed %d\n", len(web.Hosts()), web.PageCount(), *seed)
	fmt.Fprintf(out, "http  %s (port %d on every host address)\n", srv.HTTPAddr(), srv.Ports().HTTP)
	fmt.Fprintf(out, "https %s (port %d)\n", srv.HTTPSAddr(), srv.Ports().HTTPS)
	if srv.DNSAddr() != "" {
		fmt.Fprintf(out, "dns   %s\n", srv.DNSAddr())
	}
	if *caPath != "" {
		fmt.Fprintf(out, "ca    %s\n", *caPath)
	}
	fmt.Fprintln(out, "seeds:")
	for _, u := range srv.SeedURLs() {
		fmt.Fprintln(out, u)
	}
	if err := out.Flush(); err != nil {
		// Nobody learns the ports: serving on would be serving no one.
		srv.Close()
		return fmt.Errorf("writing the addresses: %w", err)
	}
	<-ctx.Done()
	return srv.Close()
}
