#!/bin/sh
# nginx.sh: serve real HTML from Debian documentation packages through nginx
# under many host names on loopback addresses, with dnsmasq answering for
# those names (and NXDOMAIN for every other name: it never forwards).
#
#   tools/testweb/nginx.sh start [DIR]   start; prints DIR, ports and hosts
#   tools/testweb/nginx.sh stop DIR      stop both daemons and remove DIR
#   tools/testweb/nginx.sh status DIR
#
# Everything lives in DIR (default: a new mktemp -d): configuration, pid
# files, logs, nginx temp paths. No global configuration is read or written.
# After start, DIR/env holds NGINX_PORT, DNS_ADDR and DIR for sourcing, and
# DIR/hosts lists "ip name docroot" for every host.
#
# Environment:
#   NGINX_PORT      HTTP port shared by every host address (default: random)
#   DNS_PORT        dnsmasq port on 127.0.0.1 (default: random)
#   HOSTS_PER_DOC   host names per documentation package (default 10)
#   KEEPALIVE_REQUESTS  nginx's keepalive_requests (default 1000000); tests
#                   set it low to see a client reconnect
#   NGINX_BIN, DNSMASQ_BIN  the binaries (default /usr/sbin/nginx, /usr/sbin/dnsmasq)
#
# Packages used when installed: postgresql-doc-15, python3.11-doc,
# openjdk-17-doc. Missing ones are named on stderr; at least one is needed.
set -eu

NGINX_BIN=${NGINX_BIN:-/usr/sbin/nginx}
# nginx reads $NGINX as a list of inherited sockets: never pass one on.
unset NGINX
DNSMASQ_BIN=${DNSMASQ_BIN:-/usr/sbin/dnsmasq}
HOSTS_PER_DOC=${HOSTS_PER_DOC:-10}
KEEPALIVE_REQUESTS=${KEEPALIVE_REQUESTS:-1000000}

die() { echo "nginx.sh: $*" >&2; exit 1; }

# docs prints "package label suffix docroot" for each installed package.
docs() {
	found=0
	for spec in \
		"postgresql-doc-15 pgdocs ac.th /usr/share/doc/postgresql-doc-15/html" \
		"python3.11-doc pydocs co.th /usr/share/doc/python3.11/html" \
		"openjdk-17-doc javadocs com /usr/share/doc/openjdk-17-jre-headless/api /usr/lib/jvm/java-17-openjdk-amd64/docs/api /usr/share/doc/openjdk-17-doc/api"
	do
		set -- $spec
		pkg=$1 label=$2 suffix=$3
		shift 3
		root=
		for d in "$@"; do
			if [ -f "$d/index.html" ]; then root=$d; break; fi
		done
		if [ -n "$root" ]; then
			echo "$pkg $label $suffix $root"
			found=1
		else
			echo "nginx.sh: $pkg not installed (apt-get install $pkg); skipping it" >&2
		fi
	done
	[ $found = 1 ] || die "none of postgresql-doc-15, python3.11-doc, openjdk-17-doc is installed"
}

randport() { echo $(( 20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000 )); }

start() {
	[ -x "$NGINX_BIN" ] || die "$NGINX_BIN not found (Debian package nginx-light)"
	[ -x "$DNSMASQ_BIN" ] || die "$DNSMASQ_BIN not found (Debian package dnsmasq-base)"
	dir=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kspider-nginx.XXXXXX")}
	mkdir -p "$dir/tmp" "$dir/logs"
	chmod 755 "$dir" # nginx workers may run as another user
	: > "$dir/hosts"
	: > "$dir/dnsmasq.hosts"
	servers=
	n=0
	docs > "$dir/docs"
	pkgi=0
	while read -r pkg label suffix root; do
		pkgi=$((pkgi + 1))
		i=1
		while [ $i -le "$HOSTS_PER_DOC" ]; do
			name="www.$label$i.$suffix"
			ip="127.3.$pkgi.$i"
			echo "$ip $name $root" >> "$dir/hosts"
			echo "$ip $name" >> "$dir/dnsmasq.hosts"
			i=$((i + 1))
			n=$((n + 1))
		done
	done < "$dir/docs"

	for attempt in 1 2 3 4 5; do
		port=${NGINX_PORT:-$(randport)}
		{
			cat <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
    types { text/html html htm; text/css css; application/javascript js; image/png png; image/gif gif; image/jpeg jpg; image/svg+xml svg; text/plain txt; }
    default_type application/octet-stream;
    access_log $dir/logs/access.log;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    sendfile on;
    keepalive_requests $KEEPALIVE_REQUESTS;
    keepalive_timeout 120s;
CONF
			while read -r ip name root; do
				printf '    server { listen %s:%s; server_name %s; root %s; index index.html; }\n' "$ip" "$port" "$name" "$root"
			done < "$dir/hosts"
			echo "}"
		} > "$dir/nginx.conf"
		if "$NGINX_BIN" -e "$dir/logs/error.log" -p "$dir" -c "$dir/nginx.conf" >/dev/null 2>"$dir/logs/start.log" </dev/null; then
			break
		fi
		[ -z "${NGINX_PORT:-}" ] && [ $attempt -lt 5 ] || { cat "$dir/logs/start.log" >&2; die "nginx did not start"; }
	done

	for attempt in 1 2 3 4 5; do
		dport=${DNS_PORT:-$(randport)}
		# --no-resolv and --local=/#/: answer from our hosts file only,
		# NXDOMAIN for anything else, never forward.
		if "$DNSMASQ_BIN" --conf-file=/dev/null --no-resolv --no-hosts --local='/#/' \
			--addn-hosts="$dir/dnsmasq.hosts" --listen-address=127.0.0.1 --bind-interfaces \
			--port="$dport" --pid-file="$dir/dnsmasq.pid" --user="$(id -un)" --group="$(id -gn)" \
			--log-facility="$dir/logs/dnsmasq.log" --local-ttl=300 --cache-size=0 >/dev/null 2>"$dir/logs/dnsmasq-start.log" </dev/null; then
			break
		fi
		[ -z "${DNS_PORT:-}" ] && [ $attempt -lt 5 ] || { cat "$dir/logs/dnsmasq-start.log" >&2; stop "$dir"; die "dnsmasq did not start"; }
	done
	# dnsmasq writes its pid file after it daemonises; wait for it briefly.
	i=0
	while [ ! -s "$dir/dnsmasq.pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done

	cat > "$dir/env" <<ENV
DIR=$dir
NGINX_PORT=$port
DNS_ADDR=127.0.0.1:$dport
ENV
	echo "dir   $dir"
	echo "http  port $port on $n host addresses (127.3.x.y)"
	echo "dns   127.0.0.1:$dport"
	echo "docs  $(cut -d' ' -f1 "$dir/docs" | tr '\n' ' ')"
	head -n 3 "$dir/hosts" | while read -r ip name root; do echo "host  http://$name:$port/ ($ip)"; done
	echo "stop  $0 stop $dir"
}

stop() {
	dir=${1:?usage: nginx.sh stop DIR}
	[ -d "$dir" ] || die "$dir: no such directory"
	[ -f "$dir/nginx.conf" ] || die "$dir: not a nginx.sh directory"
	# Read the pids once: nginx removes its pid file while it is still
	# shutting down, so the files cannot say when the processes are gone.
	nginx_pid=$(cat "$dir/nginx.pid" 2>/dev/null || true)
	dnsmasq_pid=$(cat "$dir/dnsmasq.pid" 2>/dev/null || true)
	if [ -n "$nginx_pid" ]; then
		"$NGINX_BIN" -e "$dir/logs/error.log" -p "$dir" -c "$dir/nginx.conf" -s stop 2>/dev/null || kill "$nginx_pid" 2>/dev/null || true
	fi
	if [ -n "$dnsmasq_pid" ]; then
		kill "$dnsmasq_pid" 2>/dev/null || true
	fi
	# Wait for both to exit before removing their files. A zombie has
	# exited (nothing reaps it in a container without an init).
	i=0
	while [ $i -lt 50 ]; do
		alive=0
		for pid in $nginx_pid $dnsmasq_pid; do
			if kill -0 "$pid" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; then alive=1; fi
		done
		[ $alive = 0 ] && break
		sleep 0.1
		i=$((i + 1))
	done
	rm -rf "$dir"
}

status() {
	dir=${1:?usage: nginx.sh status DIR}
	for f in nginx.pid dnsmasq.pid; do
		if [ -s "$dir/$f" ] && kill -0 "$(cat "$dir/$f")" 2>/dev/null; then
			echo "${f%.pid} running (pid $(cat "$dir/$f"))"
		else
			echo "${f%.pid} not running"
		fi
	done
}

case "${1:-}" in
start) shift; start "$@" ;;
stop) shift; stop "$@" ;;
status) shift; status "$@" ;;
*) echo "usage: $0 start [DIR] | stop DIR | status DIR" >&2; exit 2 ;;
esac
