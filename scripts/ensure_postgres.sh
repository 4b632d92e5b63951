#!/usr/bin/env bash
# Make sure PostgreSQL's server binaries are installed (for tests/stores/test_postgres.py).
#
# Idempotent: does nothing when initdb and postgres are under /usr/lib/postgresql/*/bin
# (or under $PG_BINDIR, when set). Otherwise installs Debian's `postgresql` package with
# apt-get, which needs root (no sudo is attempted). The tests start their own throwaway
# server in a temporary directory; this script starts nothing, and asks Debian not to
# create (and start) its default "main" cluster on install.
set -euo pipefail

have_binaries() {
    local dir
    if [ -n "${PG_BINDIR:-}" ]; then
        [ -x "$PG_BINDIR/initdb" ] && [ -x "$PG_BINDIR/postgres" ]
        return
    fi
    for dir in /usr/lib/postgresql/*/bin; do
        if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then
            return 0
        fi
    done
    return 1
}

# As root, initdb refuses to run; the tests run it as this system user.
ensure_user() {
    if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
        useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/sh postgres
        echo "ensure_postgres: created the 'postgres' system user."
    fi
}

if have_binaries; then
    ensure_user
    exit 0
fi

if [ -n "${PG_BINDIR:-}" ]; then
    echo "ensure_postgres: PG_BINDIR=$PG_BINDIR has no initdb and postgres." >&2
    exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_postgres: PostgreSQL is missing and installing it needs root." >&2
    echo "ensure_postgres: run 'apt-get update && apt-get install -y postgresql' as root," >&2
    echo "ensure_postgres: or set PG_BINDIR to a folder holding initdb and postgres." >&2
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_postgres: PostgreSQL is missing and this system has no apt-get;" >&2
    echo "ensure_postgres: install it by hand and set PG_BINDIR to its bin folder." >&2
    exit 1
fi

echo "ensure_postgres: installing Debian's postgresql package (one-time)..."
# no default cluster: nothing is started on port 5432 behind the tests' back
mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/nb-agents-no-main-cluster.conf
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql; } >"$log" 2>&1; then
    echo "ensure_postgres: apt-get failed; its output follows." >&2
    cat "$log" >&2
    exit 1
fi

if ! have_binaries; then
    echo "ensure_postgres: the postgresql package installed but no initdb is under /usr/lib/postgresql/*/bin." >&2
    exit 1
fi
ensure_user
echo "ensure_postgres: $(ls -d /usr/lib/postgresql/*/bin | tail -n 1) installed."
