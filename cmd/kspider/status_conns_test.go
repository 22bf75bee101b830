package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestStatusIdleConnsGiveWay: a connection kept alive after its request
// held one of the page's maxStatusConns slots for the server's idle
// timeout (a minute, renewed by a request a minute), so one client that
// kept that many open shut ctl and the dashboard out for as long as it
// liked (ctl: "no node answers" after its 10 s); now a connection waiting
// for a slot has the longest idle one closed.
func TestStatusIdleConnsGiveWay(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 3, 3, 1, "1h")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr, _, exit := startRun(t, ctx, "--config", conf, "--ca", ca, "--quiet")
	for range maxStatusConns {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: time.Minute}).Get("http://" + addr + "/status")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close() // the connection stays open, idle, in tr
	}
	code, out, errOut := runCmd(t, "", "ctl", "pause", "--status", addr, "--dir", dir)
	if code != 0 {
		t.Errorf("ctl pause past %d idle connections: exit %d:\n%s%s", maxStatusConns, code, out, errOut)
	}
	cancel()
	<-exit
}
