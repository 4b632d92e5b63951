#!/usr/bin/env bash
# Make sure Debian's Chromium is installed at /usr/bin/chromium (for tests/browser).
#
# Idempotent: does nothing when the binary is already there. Installs the `chromium`
# package with apt-get when it is missing, which needs root (no sudo is attempted).
# CHROMIUM overrides the path that is checked (default /usr/bin/chromium).
set -euo pipefail

chromium="${CHROMIUM:-/usr/bin/chromium}"

if [ -x "$chromium" ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_chromium: $chromium is missing and installing it needs root." >&2
    echo "ensure_chromium: run 'apt-get update && apt-get install -y chromium' as root," >&2
    echo "ensure_chromium: or set CHROMIUM to an existing Chromium binary." >&2
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: $chromium is missing and this system has no apt-get;" >&2
    echo "ensure_chromium: install Chromium by hand and set CHROMIUM to its path." >&2
    exit 1
fi

echo "ensure_chromium: installing Debian's chromium package (one-time)..."
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
    echo "ensure_chromium: apt-get failed; its output follows." >&2
    cat "$log" >&2
    exit 1
fi

if [ ! -x "$chromium" ]; then
    echo "ensure_chromium: the chromium package installed but $chromium is not there." >&2
    exit 1
fi
echo "ensure_chromium: $("$chromium" --version 2>/dev/null || echo "$chromium") installed."
