// Package testweb generates and serves kspider's test web: a deterministic
// web of thousands of hosts on loopback, with its own DNS server, hostile
// hosts, a request log and a politeness audit.
//
//	web := testweb.Generate(testweb.Config{Hosts: 2000, Seed: 1})
//	srv, err := testweb.Start(ctx, web, testweb.ServeConfig{
//		HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0", Log: w})
//	defer srv.Close()
//	srv.SeedURLs(); srv.DNSAddr(); srv.CertPool(); srv.Truth()
//	report, err := testweb.Audit(logReader, testweb.AuditOptions{})
//
// # The web
//
// Everything is a pure function of (seed, host, path): pages are generated
// when requested, never stored, and the same seed gives a byte-identical
// web. Truth computes from the same functions what each URL answers, what is
// reachable from the seeds within a depth, and what robots.txt allows.
//
// # Addresses and binding
//
// Each host has an IPv4 address in 127.1.0.0/16 upwards (some share one, as
// virtual hosts do); 127.0.0.0/16 is left to everything else. The server
// binds one listener per distinct host address, all at the same port (and the
// same for HTTPS), plus the "front" address given in ServeConfig.HTTPAddr,
// which serves any host by its Host header. It never binds 0.0.0.0, so
// nothing outside loopback can reach it. A request arriving at a host
// address other than its own answers 421 unless ServeConfig.AnyAddr is set:
// a crawler must connect where DNS sent it. Hosts with IPv6 get AAAA ::1
// and are served on [::1] too.
//
// # HTTP
//
// The server speaks HTTP/1.1 itself (keep-alive, pipelining, HEAD) so that
// hostile hosts can misbehave exactly (see Behaviour). Every slow, stalling
// or endless response is bounded by ServeConfig durations and sizes and ends
// when the server closes.
package testweb
