#!/usr/bin/env bash
# Starts, checks and stops a local Redis Cluster for trying the Redis store
# by hand: six redis-server processes on 127.0.0.1 (three masters, three
# replicas, cluster-node-timeout 2000 ms) on ports BASE..BASE+5, whose
# cluster bus ports (+10000) must be free too.
#
# Usage: scripts/redis-cluster.sh start|status|stop [BASE]
#   BASE defaults to $REDIS_CLUSTER_BASE or 30001; state lives in
#   $REDIS_CLUSTER_DIR (default /tmp/drover-redis-cluster-BASE).
# start prints the store URL to give `drover serve --store`.
set -euo pipefail
cmd=${1:-}
base=${2:-${REDIS_CLUSTER_BASE:-30001}}
dir=${REDIS_CLUSTER_DIR:-/tmp/drover-redis-cluster-$base}
ports=()
for i in 0 1 2 3 4 5; do ports+=($((base + i))); done

die() { echo "redis-cluster: $*" >&2; exit 1; }
free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

state_ok() {
  for p in "${ports[@]}"; do
    redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
  done
}

case "$cmd" in
start)
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
    die "redis-server and redis-cli are needed (scripts/deps.sh test installs them)"
  for p in "${ports[@]}"; do
    free "$p" || die "port $p is in use (choose another BASE)"
    free $((p + 10000)) || die "cluster bus port $((p + 10000)) is in use (choose another BASE)"
  done
  mkdir -p "$dir" && chmod 700 "$dir"
  addrs=()
  for p in "${ports[@]}"; do
    mkdir -p "$dir/$p"
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
      --dir "$dir/$p" --save '' --appendonly no --daemonize yes \
      --logfile redis.log --pidfile "$dir/$p/redis.pid"
    addrs+=("127.0.0.1:$p")
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$p" ping >/dev/null 2>&1 || die "redis-server on port $p did not start (see $dir/$p/redis.log)"
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 ||
    die "redis-cli --cluster create failed (see $dir/create.log)"
  for _ in $(seq 300); do state_ok && break; sleep 0.2; done
  state_ok || die "cluster_state is not ok after 60 s"
  echo "redis://$(IFS=,; echo "${addrs[*]}")"
  ;;
status)
  for p in "${ports[@]}"; do
    role=$(redis-cli -p "$p" info replication 2>/dev/null | tr -d '\r' | sed -n 's/^role://p') || role=
    st=$(redis-cli -p "$p" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p') || st=
    echo "127.0.0.1:$p ${role:-down} cluster_state:${st:-?}"
  done
  state_ok
  ;;
stop)
  for p in "${ports[@]}"; do
    pidf="$dir/$p/redis.pid"
    [ -f "$pidf" ] || continue
    pid=$(cat "$pidf")
    redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start|status|stop [BASE]" >&2; exit 2 ;;
esac
