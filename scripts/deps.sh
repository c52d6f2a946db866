#!/usr/bin/env bash
# Installs what drover needs to build and test, and only what is missing:
# libzmq (with its headers) and pkg-config for the ZeroMQ binding, tmux
# for the terminal tests, iproute2 (ip) for the network-namespace test, python3-zmq and python3-scrapy for the Python
# client's tests, and wget, nodejs, npm and diffutils-doc (a real HTML tree)
# for the crawl's tests, and redis-server (with redis-cli) for the Redis
# store's tests and the side-by-side benchmarks. Uses apt-get, through sudo
# when not root.
# Usage: scripts/deps.sh [build|test|bench]
set -euo pipefail
want=${1:-build}

missing=()
pkg-config --exists libzmq 2>/dev/null || missing+=(libzmq3-dev pkg-config)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if [ "$want" = test ] || [ "$want" = bench ]; then
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
  # The Python client's tests (clients/python) and its Scrapy integration.
  /usr/bin/python3 -c 'import zmq' >/dev/null 2>&1 || missing+=(python3-zmq)
  /usr/bin/python3 -c 'import scrapy' >/dev/null 2>&1 || missing+=(python3-scrapy)
  # the crawl's parity and WARC tests: wget to compare with, a real HTML
  # tree (GNU diffutils' manual), node and npm for the warcio package
  command -v wget >/dev/null 2>&1 || missing+=(wget)
  [ -f /usr/share/doc/diffutils/index.html ] || missing+=(diffutils-doc)
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  # the Redis store backend's tests and `make bench-peers`
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

# de-duplicate
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if ! command -v apt-get >/dev/null 2>&1; then
  echo "drover needs: ${missing[*]} (libzmq >= 4.3 with headers, pkg-config, tmux)." >&2
  echo "This system has no apt-get: install them with your package manager and retry." >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "drover needs ${missing[*]} but is not root and sudo is missing." >&2; exit 1
  fi
fi
echo ">>> installing missing packages with apt-get: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo ">>> installed: ${missing[*]}"
