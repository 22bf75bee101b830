// Package warccheck runs an independent WARC reader, the warcio npm package
// (pinned in package.json, installed into node_modules by tools/testdeps.sh),
// over a WARC file for tests: archive tools must read what kspider exports,
// and a reader we did not write is the honest check.
package warccheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/testenv"
)

// Record is one record as warcio read it (see warccheck.mjs).
type Record struct {
	Offset        int64       `json:"offset"`
	Type          string      `json:"type"`
	TargetURI     string      `json:"targetURI"`
	WARCHeaders   [][2]string `json:"warcHeaders"`
	StatusLine    string      `json:"statusline"`
	Status        int         `json:"status"`
	HTTPHeaders   [][2]string `json:"httpHeaders"`
	PayloadLength int         `json:"payloadLength"`
	PayloadSHA1   string      `json:"payloadSHA1"` // hex
	Payload       []byte      `json:"payload"`     // with payload only
}

// WARCHeader returns the first WARC header named name (case-insensitive).
func (r *Record) WARCHeader(name string) string { return first(r.WARCHeaders, name) }

// HTTPHeader returns the first HTTP header named name (case-insensitive).
func (r *Record) HTTPHeader(name string) string { return first(r.HTTPHeaders, name) }

func first(pairs [][2]string, name string) string {
	for _, p := range pairs {
		if strings.EqualFold(p[0], name) {
			return p[1]
		}
	}
	return ""
}

// Dir returns the directory holding warccheck.mjs and package.json.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Read reads the WARC file at path with warcio and returns its records, with
// payloads when withPayload is set. It skips the test when node or the npm
// package is missing (fails under make test, which installs them).
func Read(t testing.TB, path string, withPayload bool) []Record {
	t.Helper()
	node := testenv.Binary(t, "node", "nodejs")
	dir := Dir()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "warcio", "package.json")); err != nil {
		msg := "the warcio npm package is not installed in " + dir + " (run: cd tools/warccheck && npm install, or make test)"
		if testenv.RequireServers() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	args := []string{filepath.Join(dir, "warccheck.mjs"), path}
	if withPayload {
		args = append(args, "--payload")
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("warcio could not read %s: %v\n%s", path, err, stderr.String())
	}
	var recs []Record
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("warccheck output line %d: %v: %.200s", len(recs)+1, err, sc.Text())
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("warccheck output: %v", err)
	}
	return recs
}
