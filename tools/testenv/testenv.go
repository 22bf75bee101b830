// Package testenv holds the conventions tests use for what lies outside the
// repository: real server binaries (nginx, dnsmasq, chronyd, node) and the
// shared data sets.
//
// Under `make test` the environment variable KSPIDER_REQUIRE_SERVERS=1 is set
// (and the Makefile has installed the packages), so a missing binary fails the
// test, naming the Debian package. A plain `go test` skips instead, so a
// checkout without them still passes. Missing data sets always skip: the data
// is not redistributable and a checkout may not have it.
package testenv

import (
	"os"
	"testing"

	"github.com/kspider/kspider/tools/daemon"
	"github.com/kspider/kspider/tools/dataset"
)

// RequireServers reports whether missing server binaries must fail tests.
func RequireServers() bool { return os.Getenv("KSPIDER_REQUIRE_SERVERS") == "1" }

// LookBinary finds a program in PATH or in Debian's sbin directories.
func LookBinary(name string) (string, bool) { return daemon.Look(name) }

// Binary returns the path of program name, or fails (under make test) or
// skips the test, naming the Debian package that provides it.
func Binary(t testing.TB, name, debianPackage string) string {
	t.Helper()
	if p, ok := LookBinary(name); ok {
		return p
	}
	if RequireServers() {
		t.Fatalf("%s not found: install the Debian package %s (make test does this as root)", name, debianPackage)
	}
	t.Skipf("%s not found (Debian package %s); run make test to install it", name, debianPackage)
	return ""
}

// Data returns the path of a shared data set (dataset.URLsWeb, …), or skips
// the test when the file is not there.
func Data(t testing.TB, name string) string {
	t.Helper()
	p, ok := dataset.Path(name)
	if !ok {
		t.Skipf("shared data set %s not found beside the repository (../shared/data); skipping", name)
	}
	return p
}
