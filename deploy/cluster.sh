#!/usr/bin/env bash
# A local Pictor cluster on one machine: PostgreSQL (a private cluster of
# Debian's postgresql, run as the postgres system user), versitygw (S3),
# two origins and two edges.
#
#   deploy/cluster.sh up     [--dir DIR]   start; the last line is one JSON object
#                                          {"edges","origins","store","api_id","api_key"}
#   deploy/cluster.sh status [--dir DIR]   {"processes": {"<name>": {"pid","url","healthy"}}}
#   deploy/cluster.sh down   [--dir DIR]   stop everything `up` started there, nothing else
#
# DIR (default /tmp/pictor-cluster) holds every file of the cluster, so two
# checkouts with two DIRs never collide. Progress goes to stderr.
set -euo pipefail

cmd=${1:-}
[ $# -gt 0 ] && shift
DIR=/tmp/pictor-cluster
while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=$2; shift 2 ;;
	--dir=*) DIR=${1#--dir=}; shift ;;
	*) echo "cluster.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGBIN=/usr/lib/postgresql/15/bin
VGW=$ROOT/.tools/versitygw-v1.8.0/versitygw
PROCS=$DIR/procs # name pid url, one process a line
S3_KEY=PICTORCLUSTERKEY
BUCKET=pictor

say() { echo "cluster.sh: $*" >&2; }

# free_port prints a loopback port nothing listens on.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# wait_for runs a check until it passes, for at most $2 seconds.
wait_for() {
	local what=$1 secs=$2
	shift 2
	for _ in $(seq $((secs * 10))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	say "$what did not come up within ${secs}s"
	return 1
}

hexkey() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

pg() { runuser -u postgres -- "$PGBIN/$@"; }

up() {
	if [ -s "$PROCS" ]; then
		say "a cluster already runs in $DIR (deploy/cluster.sh down --dir $DIR first)"
		exit 1
	fi
	[ -x "$PGBIN/initdb" ] || "$ROOT/deploy/install-packages.sh" postgresql >&2
	[ -x "$ROOT/bin/pictor" ] || make -C "$ROOT" build >&2
	[ -x "$VGW" ] || (cd "$ROOT" && GOBIN=$(dirname "$VGW") go install github.com/versity/versitygw/cmd/versitygw@v1.8.0) >&2
	"$ROOT/deploy/chromium-user.sh" >&2
	mkdir -p "$DIR"
	chmod 755 "$DIR"
	: >"$PROCS"
	trap 'say "up failed: stopping what it started (logs in $DIR)"; down' ERR
	local bin=$ROOT/bin/pictor

	# PostgreSQL: a private cluster, password auth on 127.0.0.1 only.
	local pgport pgpw
	pgport=$(free_port)
	pgpw=$(hexkey 16)
	mkdir -p "$DIR/pg"
	echo "$pgpw" >"$DIR/pg/pw"
	chown -R postgres "$DIR/pg"
	chmod 700 "$DIR/pg"
	pg initdb -D "$DIR/pg/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 --pwfile="$DIR/pg/pw" >"$DIR/pg/initdb.log"
	pg pg_ctl -D "$DIR/pg/data" -l "$DIR/pg/server.log" -w \
		-o "-p $pgport -k $DIR/pg -c listen_addresses=127.0.0.1" start >&2
	pg psql -q -h "$DIR/pg" -p "$pgport" -U postgres \
		-c "CREATE ROLE pictor LOGIN PASSWORD '$pgpw'" -c "CREATE DATABASE pictor OWNER pictor" >&2
	local store="postgres://pictor:$pgpw@127.0.0.1:$pgport/pictor?sslmode=disable"
	echo "postgres $(head -1 "$DIR/pg/data/postmaster.pid") postgres://127.0.0.1:$pgport" >>"$PROCS"

	# versitygw over a directory, and the bucket of the masters.
	local s3port s3secret
	s3port=$(free_port)
	s3secret=$(hexkey 20)
	mkdir -p "$DIR/s3/data"
	env -i PATH="$PATH" HOME="$DIR/s3" "$VGW" --port "127.0.0.1:$s3port" --access "$S3_KEY" --secret "$s3secret" \
		--region us-east-1 --health /health posix "$DIR/s3/data" >"$DIR/s3/log" 2>&1 &
	echo "s3 $! http://127.0.0.1:$s3port" >>"$PROCS"
	wait_for s3 30 curl -fsS "http://127.0.0.1:$s3port/health"
	curl -fsS -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_KEY:$s3secret" \
		-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "http://127.0.0.1:$s3port/$BUCKET" >&2
	local blobs="s3://$BUCKET/masters?endpoint=http://127.0.0.1:$s3port&region=us-east-1&path_style=true"

	# Shared secrets, and the default organization on the scale plan.
	local master token e1port e2port
	master=$(hexkey 32)
	token=$(hexkey 32)
	echo "$master" >"$DIR/master.key"
	chmod 600 "$DIR/master.key"
	e1port=$(free_port)
	e2port=$(free_port)
	local org
	org=$(PICTOR_MASTER_KEY=$master "$bin" admin org create --store "$store" --name default --plan scale)
	local api_id api_key
	api_id=$(echo "$org" | sed -n 's/.*"api_id":"\([^"]*\)".*/\1/p')
	api_key=$(echo "$org" | sed -n 's/.*"api_key":"\([^"]*\)".*/\1/p')

	# Two origins on the shared store and bucket, behind the edges' URL.
	local origins=() i port
	for i in 1 2; do
		port=$(free_port)
		mkdir -p "$DIR/origin-$i"
		PICTOR_MASTER_KEY=$master PICTOR_EDGE_TOKEN=$token AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$s3secret \
			"$bin" origin --data-dir "$DIR/origin-$i" --addr "127.0.0.1:$port" --store "$store" --blobs "$blobs" \
			--public-url "http://127.0.0.1:$e1port" >"$DIR/origin-$i/log" 2>&1 &
		echo "origin-$i $! http://127.0.0.1:$port" >>"$PROCS"
		origins+=("http://127.0.0.1:$port")
	done
	for u in "${origins[@]}"; do wait_for "origin $u" 120 curl -fsS "$u/healthz"; done

	# Two edges, each in front of both origins.
	local edges=()
	for i in 1 2; do
		port=$([ "$i" = 1 ] && echo "$e1port" || echo "$e2port")
		mkdir -p "$DIR/edge-$i"
		PICTOR_EDGE_TOKEN=$token "$bin" edge --addr "127.0.0.1:$port" --origin-url "$(IFS=,; echo "${origins[*]}")" \
			--cache-dir "$DIR/edge-$i/cache" --public-url "http://127.0.0.1:$e1port" >"$DIR/edge-$i/log" 2>&1 &
		echo "edge-$i $! http://127.0.0.1:$port" >>"$PROCS"
		edges+=("http://127.0.0.1:$port")
	done
	for u in "${edges[@]}"; do wait_for "edge $u" 60 curl -fsS "$u/healthz"; done

	printf '{"edges":["%s","%s"],"origins":["%s","%s"],"store":"%s","api_id":"%s","api_key":"%s"}\n' \
		"${edges[0]}" "${edges[1]}" "${origins[0]}" "${origins[1]}" "$store" "$api_id" "$api_key"
}

healthy() {
	local name=$1 pid=$2 url=$3
	kill -0 "$pid" 2>/dev/null || return 1
	case $name in
	postgres) pg pg_isready -q -h 127.0.0.1 -p "${url##*:}" ;;
	s3) curl -fsS "$url/health" ;;
	*) curl -fsS "$url/healthz" ;;
	esac
}

status() {
	local out="" name pid url h
	if [ -f "$PROCS" ]; then
		while read -r name pid url; do
			h=false
			healthy "$name" "$pid" "$url" >/dev/null 2>&1 && h=true
			out="$out${out:+,}\"$name\":{\"pid\":$pid,\"url\":\"$url\",\"healthy\":$h}"
		done <"$PROCS"
	fi
	echo "{\"processes\":{$out}}"
}

down() {
	[ -f "$PROCS" ] || { say "no cluster in $DIR"; return 0; }
	local name pid url
	# Edges first, then origins, then the stores.
	for kind in edge origin s3; do
		while read -r name pid url; do
			case $name in "$kind"*) kill -TERM "$pid" 2>/dev/null || true ;; esac
		done <"$PROCS"
	done
	while read -r name pid url; do
		[ "$name" = postgres ] && continue
		for _ in $(seq 450); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	done <"$PROCS"
	if grep -q '^postgres ' "$PROCS"; then
		pg pg_ctl -D "$DIR/pg/data" -m fast -w stop >&2 || true
	fi
	: >"$PROCS"
}

case $cmd in
up) up ;;
status) status ;;
down) down ;;
*) echo "usage: deploy/cluster.sh up|status|down [--dir DIR]" >&2; exit 2 ;;
esac
