#!/usr/bin/env bash
# Installs what `make test` needs when it is missing: real servers the tests
# talk to on loopback (nginx, dnsmasq, chronyd), promtool and headless
# Chromium for the status page, the Debian doc packages whose
# HTML the benchmarks and interoperability tests use (every package
# tools/testweb/nginx.sh serves), and the independent WARC
# reader (npm package warcio, pinned in tools/warccheck/package.json).
# As root on Debian it installs them (apt-get update once, then apt-get
# install); otherwise it fails with a message naming the packages.
set -euo pipefail
cd "$(dirname "$0")/.."

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

pkgs=()
have nginx   || pkgs+=(nginx-light)
have dnsmasq || pkgs+=(dnsmasq-base)
have chronyd || pkgs+=(chrony)
have promtool || pkgs+=(prometheus)   # promtool check metrics (spider/status)
have chromium || pkgs+=(chromium)     # the status dashboard in a real browser (cmd/kspider)
[ -d /usr/share/doc/postgresql-doc-15/html ] || pkgs+=(postgresql-doc-15)
[ -f /usr/share/doc/python3.11/html/index.html ] || pkgs+=(python3.11-doc)
[ -f /usr/share/doc/openjdk-17-jre-headless/api/index.html ] || [ -f /usr/lib/jvm/java-17-openjdk-amd64/docs/api/index.html ] || pkgs+=(openjdk-17-doc)
if [ -f tools/warccheck/package.json ]; then
  have node || pkgs+=(nodejs)
  have npm  || pkgs+=(npm)
fi

if [ ${#pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "testdeps: installing ${pkgs[*]}" >&2
    # Keep the packages' services (chronyd would ask public NTP pools, nginx
    # would take port 80) from starting: the tests start their own, on
    # loopback, and nothing may leave this machine. policy-rc.d is Debian's
    # switch for that; an existing one is left as it is.
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
      trap 'rm -f "$policy"' EXIT
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
  else
    echo "testdeps: missing Debian packages: ${pkgs[*]}" >&2
    echo "testdeps: install them as root: apt-get update && apt-get install -y ${pkgs[*]}" >&2
    exit 1
  fi
fi

if [ -f tools/warccheck/package.json ] && [ ! -d tools/warccheck/node_modules/warcio ]; then
  echo "testdeps: installing the warcio npm package into tools/warccheck" >&2
  (cd tools/warccheck && npm install --no-audit --no-fund --silent >/dev/null) || {
    echo "testdeps: 'npm install' in tools/warccheck failed (needs the npm registry)" >&2
    exit 1
  }
fi
