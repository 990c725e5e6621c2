#!/usr/bin/env bash
# A local Pictor cluster on one machine: PostgreSQL (a private cluster of
# Debian's postgresql, run as the postgres system user), versitygw (S3),
# two origins and two edges.
#
#   deploy/cluster.sh up     [--dir DIR]   start; the last line is one JSON object
#                                          {"edges","origins","store","api_id","api_key"}
#   deploy/cluster.sh status [--dir DIR]   {"processes": {"<name>": {"pid","url","healthy"}}}
#                                          (pid null: stopped by `stop`)
#   deploy/cluster.sh down   [--dir DIR]   stop everything `up` started there, nothing else
#   deploy/cluster.sh stop   NAME [--kill] [--dir DIR]
#                                          stop one process (postgres, s3, origin-N, edge-N):
#                                          SIGTERM and wait, or SIGKILL with --kill
#                                          (PostgreSQL: pg_ctl stop -m fast, or -m immediate)
#   deploy/cluster.sh start  NAME [--dir DIR]
#                                          start it again with the same command, port and
#                                          files, and wait until it is healthy
#
# DIR (default /tmp/pictor-cluster) holds every file of the cluster, so two
# checkouts with two DIRs never collide. Progress goes to stderr.
#
# PICTOR_BIN is the pictor binary to run (default bin/pictor, built when
# missing). Every other PICTOR_* variable set when `up` runs reaches every
# process, which reads those of its own flags (PICTOR_ALLOW_PRIVATE_URLS=true
# for the origins, PICTOR_ORIGIN_CHECK_INTERVAL=250ms for the edges, ...);
# `up` keeps them in DIR/env, so `start` runs a process as `up` did.
#
# Secrets (the PostgreSQL password inside the store URL, the master key, the
# edge token, the S3 secret) never go on a command line, where every user
# sees them in ps: each process reads them from its environment, which its
# run file sets from DIR/NAME/secrets (0600). Every file is created 0600 and
# every directory 0700 (umask 077); DIR itself is 0711, so that PostgreSQL's
# user can reach DIR/pg, while Chromium's user (pictor), which the origins
# run renders as, can list nothing and read no log, master or key.
set -euo pipefail
umask 077

cmd=${1:-}
[ $# -gt 0 ] && shift
DIR=/tmp/pictor-cluster
NAME=""
KILL=""
while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=$2; shift 2 ;;
	--dir=*) DIR=${1#--dir=}; shift ;;
	--kill) KILL=1; shift ;;
	-*) echo "cluster.sh: unknown argument $1" >&2; exit 2 ;;
	*)
		if [ -n "$NAME" ]; then echo "cluster.sh: unknown argument $1" >&2; exit 2; fi
		NAME=$1; shift ;;
	esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PGBIN=/usr/lib/postgresql/15/bin
VGW=$ROOT/.tools/versitygw-v1.8.0/versitygw
PROCS=$DIR/procs # name pid url, one process a line (pid 0: stopped)
S3_KEY=PICTORCLUSTERKEY
BUCKET=pictor

say() { echo "cluster.sh: $*" >&2; }

# free_port prints a loopback port nothing listens on and no other
# process of the cluster was given (DIR/ports). It draws below the
# kernel's ephemeral range: a port in that range, free when checked, can be
# taken by any outgoing connection (the origins' own to PostgreSQL and S3,
# Chromium's) before the process it was picked for binds it.
free_port() {
	local p lo hi
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
	local from=10000 span=$((lo - 10000))
	if [ "$span" -lt 1000 ]; then from=$((hi + 1)) span=$((65535 - hi)); fi
	if [ "$span" -lt 1000 ]; then from=1024 span=$((65536 - 1024)); fi
	while :; do
		p=$((from + (RANDOM * 32768 + RANDOM) % span))
		grep -qx "$p" "$DIR/ports" 2>/dev/null && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p" >>"$DIR/ports"
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

# alive tells whether pid runs (a zombie does not).
alive() {
	[ "$1" -gt 0 ] 2>/dev/null || return 1
	kill -0 "$1" 2>/dev/null || return 1
	local state
	state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

# field prints column $2 (2: pid, 3: url) of process $1's line.
field() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$PROCS"; }

# record sets the pid of process $1, adding its line (URL $3) if new.
record() {
	local name=$1 pid=$2 url=${3:-}
	if grep -q "^$name " "$PROCS"; then
		awk -v n="$name" -v p="$pid" '$1 == n { $2 = p } { print }' "$PROCS" >"$PROCS.new"
		mv "$PROCS.new" "$PROCS"
	else
		echo "$name $pid $url" >>"$PROCS"
	fi
}

# pg_start starts the private PostgreSQL on the port of its URL.
pg_start() {
	local port=$1
	pg pg_ctl -D "$DIR/pg/data" -l "$DIR/pg/server.log" -w \
		-o "-p $port -k $DIR/pg -c listen_addresses=127.0.0.1" start >&2
	record postgres "$(head -1 "$DIR/pg/data/postmaster.pid")" "postgres://127.0.0.1:$port"
}

# write_secrets writes DIR/NAME/secrets (0600): an export line for each
# VAR=value argument, which NAME's run file reads.
write_secrets() {
	local name=$1 kv
	shift
	mkdir -p "$DIR/$name"
	: >"$DIR/$name/secrets"
	chmod 600 "$DIR/$name/secrets"
	for kv in "$@"; do
		printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}" >>"$DIR/$name/secrets"
	done
}

# write_run writes DIR/NAME/run, the command that starts process NAME
# (its log appended to DIR/NAME/log), from the arguments. The process gets
# the PICTOR_* settings of DIR/env and its own DIR/NAME/secrets; with
# --only "VAR ...", nothing of the environment but PATH, HOME and those.
write_run() {
	local name=$1 only=""
	shift
	if [ "$1" = --only ]; then
		only=$2
		shift 2
	fi
	mkdir -p "$DIR/$name"
	{
		echo '#!/usr/bin/env bash'
		echo 'umask 077'
		[ -n "$only" ] || echo "[ -f $(printf %q "$DIR/env") ] && . $(printf %q "$DIR/env")"
		echo "[ -f $(printf %q "$DIR/$name/secrets") ] && . $(printf %q "$DIR/$name/secrets")"
		if [ -n "$only" ]; then
			printf 'for v in $(compgen -e); do case " PATH HOME %s " in *" $v "*) ;; *) unset "$v" ;; esac; done\n' "$only"
		fi
		printf 'exec'
		printf ' %q' "$@"
		printf ' >>%q 2>&1\n' "$DIR/$name/log"
	} >"$DIR/$name/run"
	chmod 700 "$DIR/$name/run"
}

# launch starts process NAME from its run file and records its pid.
launch() {
	local name=$1 url=$2
	"$DIR/$name/run" </dev/null &
	record "$name" $! "$url"
}

# wait_healthy waits until process NAME answers its health check, and
# fails at once if it exits.
wait_healthy() {
	local name=$1 url=$2 pid path=/healthz secs=60
	pid=$(field "$name" 2)
	case $name in
	s3) path=/health secs=30 ;;
	origin-*) secs=120 ;;
	esac
	for _ in $(seq $((secs * 10))); do
		if curl -fsS "$url$path" >/dev/null 2>&1; then return 0; fi
		if ! alive "$pid"; then
			say "$name exited before it was healthy; the end of $DIR/$name/log:"
			tail -n 5 "$DIR/$name/log" >&2
			return 1
		fi
		sleep 0.1
	done
	say "$name $url did not come up within ${secs}s"
	return 1
}

up() {
	if [ -s "$PROCS" ]; then
		say "a cluster already runs in $DIR (deploy/cluster.sh down --dir $DIR first)"
		exit 1
	fi
	[ -x "$PGBIN/initdb" ] || "$ROOT/deploy/install-packages.sh" postgresql >&2
	local bin=${PICTOR_BIN:-$ROOT/bin/pictor}
	if [ -z "${PICTOR_BIN:-}" ]; then
		[ -x "$bin" ] || make -C "$ROOT" build >&2
	elif [ ! -x "$bin" ]; then
		say "PICTOR_BIN=$bin is not an executable"
		exit 1
	fi
	bin=$(readlink -f "$bin")
	[ -x "$VGW" ] || (cd "$ROOT" && GOBIN=$(dirname "$VGW") go install github.com/versity/versitygw/cmd/versitygw@v1.8.0) >&2
	"$ROOT/deploy/chromium-user.sh" >&2
	mkdir -p "$DIR"
	chmod 711 "$DIR"
	: >"$PROCS"
	: >"$DIR/ports"
	set -E # the trap below also for failures inside functions
	trap 'say "up failed: stopping what it started (logs in $DIR)"; down' ERR
	# The PICTOR_* settings of this run, for `start` to run processes alike.
	local v
	: >"$DIR/env"
	chmod 600 "$DIR/env"
	for v in $(compgen -e | grep '^PICTOR_' || true); do
		printf 'export %s=%q\n' "$v" "${!v}" >>"$DIR/env"
	done

	# PostgreSQL: a private cluster, password auth on 127.0.0.1 only.
	local pgport pgpw
	pgport=$(free_port)
	pgpw=$(hexkey 16)
	mkdir -p "$DIR/pg"
	echo "$pgpw" >"$DIR/pg/pw"
	chown -R postgres "$DIR/pg"
	chmod 700 "$DIR/pg"
	pg initdb -D "$DIR/pg/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 --pwfile="$DIR/pg/pw" >"$DIR/pg/initdb.log"
	pg_start "$pgport"
	# On standard input, not -c: psql's command line is public.
	printf "CREATE ROLE pictor LOGIN PASSWORD '%s';\nCREATE DATABASE pictor OWNER pictor;\n" "$pgpw" |
		pg psql -q -v ON_ERROR_STOP=1 -h "$DIR/pg" -p "$pgport" -U postgres >&2
	local store="postgres://pictor:$pgpw@127.0.0.1:$pgport/pictor?sslmode=disable"

	# versitygw over a directory, and the bucket of the masters.
	local s3port s3secret
	s3port=$(free_port)
	s3secret=$(hexkey 20)
	mkdir -p "$DIR/s3/data"
	write_secrets s3 HOME="$DIR/s3" ROOT_ACCESS_KEY_ID="$S3_KEY" ROOT_SECRET_ACCESS_KEY="$s3secret"
	write_run s3 --only "ROOT_ACCESS_KEY_ID ROOT_SECRET_ACCESS_KEY" "$VGW" --port "127.0.0.1:$s3port" \
		--region us-east-1 --health /health posix "$DIR/s3/data"
	launch s3 "http://127.0.0.1:$s3port"
	wait_healthy s3 "http://127.0.0.1:$s3port"
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
	org=$(PICTOR_MASTER_KEY=$master PICTOR_STORE=$store "$bin" admin org create --name default --plan scale)
	local api_id api_key
	api_id=$(echo "$org" | sed -n 's/.*"api_id":"\([^"]*\)".*/\1/p')
	api_key=$(echo "$org" | sed -n 's/.*"api_key":"\([^"]*\)".*/\1/p')

	# Two origins on the shared store and bucket, behind the edges' URL.
	local origins=() i port
	for i in 1 2; do
		port=$(free_port)
		write_secrets "origin-$i" PICTOR_MASTER_KEY="$master" PICTOR_EDGE_TOKEN="$token" PICTOR_STORE="$store" \
			AWS_ACCESS_KEY_ID="$S3_KEY" AWS_SECRET_ACCESS_KEY="$s3secret"
		write_run "origin-$i" "$bin" origin --data-dir "$DIR/origin-$i" --addr "127.0.0.1:$port" --blobs "$blobs" \
			--public-url "http://127.0.0.1:$e1port"
		launch "origin-$i" "http://127.0.0.1:$port"
		origins+=("http://127.0.0.1:$port")
	done
	for i in 1 2; do wait_healthy "origin-$i" "${origins[$((i - 1))]}"; done

	# Two edges, each in front of both origins.
	local edges=()
	for i in 1 2; do
		port=$([ "$i" = 1 ] && echo "$e1port" || echo "$e2port")
		write_secrets "edge-$i" PICTOR_EDGE_TOKEN="$token"
		write_run "edge-$i" "$bin" edge --name "edge-$i" --addr "127.0.0.1:$port" --origin-url "$(IFS=,; echo "${origins[*]}")" \
			--cache-dir "$DIR/edge-$i/cache" --public-url "http://127.0.0.1:$e1port"
		launch "edge-$i" "http://127.0.0.1:$port"
		edges+=("http://127.0.0.1:$port")
	done
	for i in 1 2; do wait_healthy "edge-$i" "${edges[$((i - 1))]}"; done

	printf '{"edges":["%s","%s"],"origins":["%s","%s"],"store":"%s","api_id":"%s","api_key":"%s"}\n' \
		"${edges[0]}" "${edges[1]}" "${origins[0]}" "${origins[1]}" "$store" "$api_id" "$api_key"
}

healthy() {
	local name=$1 pid=$2 url=$3
	alive "$pid" || return 1
	case $name in
	postgres) pg pg_isready -q -h 127.0.0.1 -p "${url##*:}" ;;
	s3) curl -fsS "$url/health" ;;
	*) curl -fsS "$url/healthz" ;;
	esac
}

status() {
	local out="" name pid url h p
	if [ -f "$PROCS" ]; then
		while read -r name pid url; do
			h=false
			healthy "$name" "$pid" "$url" >/dev/null 2>&1 && h=true
			p=$pid
			[ "$pid" = 0 ] && p=null
			out="$out${out:+,}\"$name\":{\"pid\":$p,\"url\":\"$url\",\"healthy\":$h}"
		done <"$PROCS"
	fi
	echo "{\"processes\":{$out}}"
}

# wait_gone waits up to 45 s for pid to exit, then kills it.
wait_gone() {
	local pid=$1
	for _ in $(seq 450); do alive "$pid" || return 0; sleep 0.1; done
	kill -KILL "$pid" 2>/dev/null || true
	for _ in $(seq 50); do alive "$pid" || return 0; sleep 0.1; done
}

# known fails unless process $1 is part of the cluster.
known() {
	[ -f "$PROCS" ] && grep -q "^$1 " "$PROCS" && return 0
	say "no process $1 in $DIR"
	exit 1
}

stop_one() {
	local name=$1 pid
	known "$name"
	pid=$(field "$name" 2)
	if [ "$name" = postgres ]; then
		pg pg_ctl -D "$DIR/pg/data" -m "$([ -n "$KILL" ] && echo immediate || echo fast)" -w stop >&2 || true
	elif alive "$pid"; then
		kill "-$([ -n "$KILL" ] && echo KILL || echo TERM)" "$pid" 2>/dev/null || true
		wait_gone "$pid"
	fi
	record "$name" 0
}

start_one() {
	local name=$1 pid url
	known "$name"
	pid=$(field "$name" 2)
	url=$(field "$name" 3)
	if alive "$pid"; then
		say "$name already runs (pid $pid)"
		exit 1
	fi
	if [ "$name" = postgres ]; then
		pg_start "${url##*:}"
		wait_for postgres 30 pg pg_isready -q -h 127.0.0.1 -p "${url##*:}"
		return
	fi
	launch "$name" "$url"
	wait_healthy "$name" "$url"
}

down() {
	[ -f "$PROCS" ] || { say "no cluster in $DIR"; return 0; }
	local name pid url
	# Edges first, then origins, then the stores.
	for kind in edge origin s3; do
		while read -r name pid url; do
			case $name in "$kind"*) if alive "$pid"; then kill -TERM "$pid" 2>/dev/null || true; fi ;; esac
		done <"$PROCS"
	done
	while read -r name pid url; do
		[ "$name" = postgres ] && continue
		if alive "$pid"; then wait_gone "$pid"; fi
	done <"$PROCS"
	if grep -q '^postgres ' "$PROCS" && [ -f "$DIR/pg/data/postmaster.pid" ]; then
		pg pg_ctl -D "$DIR/pg/data" -m fast -w stop >&2 || true
	fi
	# pg_ctl -w returns once the server removed its pid file, a moment
	# before its process exits.
	pid=$(field postgres 2)
	if [ -n "$pid" ] && alive "$pid"; then wait_gone "$pid"; fi
	: >"$PROCS"
}

need_name() {
	[ -n "$NAME" ] && return 0
	echo "usage: deploy/cluster.sh $cmd NAME [--dir DIR]" >&2
	exit 2
}

case $cmd in
up) up ;;
status) status ;;
down) down ;;
stop) need_name; stop_one "$NAME" ;;
start) need_name; start_one "$NAME" ;;
*) echo "usage: deploy/cluster.sh up|status|down|stop NAME [--kill]|start NAME [--dir DIR]" >&2; exit 2 ;;
esac
