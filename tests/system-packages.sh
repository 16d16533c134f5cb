#!/bin/sh
# The system packages the tests use, installed when missing (Debian/Ubuntu: apt-get, through sudo when not root):
# redis-server (the Redis tests start their own on free ports), tinyproxy (the proxy tests' real proxy) and Chromium
# (the render tests' browser). The README's test command runs this first; .ci/run runs that command.
set -eu
missing=""
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
command -v tinyproxy >/dev/null 2>&1 || missing="$missing tinyproxy"
[ -x /usr/lib/chromium/chromium ] || command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "the tests need:$missing -- install them with your system's package manager" >&2
  exit 1
fi
as_root=""
[ "$(id -u)" = 0 ] || as_root="sudo"
echo "installing:$missing" >&2
$as_root apt-get update -qq && $as_root apt-get install -y -qq $missing
