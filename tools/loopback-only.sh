#!/usr/bin/env bash
# loopback-only.sh CMD...: runs CMD where it can reach nothing but this
# machine's loopback: in a new network namespace with only lo up (as root,
# with unshare(1) and ip(8)). The tests talk only to loopback and to the
# namespaces they make themselves; run so, a test that would send a packet
# anywhere else (a DNS query to /etc/resolv.conf's server, a dial of a
# real address) fails with "network is unreachable" instead of sending it.
# Without the means it runs CMD as it is, and says so.
set -euo pipefail
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 &&
  unshare -n true 2>/dev/null; then
  exec unshare -n sh -c 'ip link set lo up && exec "$@"' sh "$@"
fi
echo "loopback-only: cannot make a network namespace (needs root, unshare and ip): running with this machine's network" >&2
exec "$@"
