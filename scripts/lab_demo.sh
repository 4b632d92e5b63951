#!/usr/bin/env bash
# `make demo`: open notebooks/quickstart.ipynb in JupyterLab on 127.0.0.1 and print its URL.
#
# Environment: PORT (default 8888), NOTEBOOK (default quickstart.ipynb, under notebooks/),
# JUPYTER_TOKEN (default: a fresh random token), BIN (default .venv/bin).
# Widgets are live here (NB_AGENTS_STATIC=0 unless set); without an API key the
# notebooks run on their offline scripted models.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${BIN:-.venv/bin}"
port="${PORT:-8888}"
notebook="${NOTEBOOK:-quickstart.ipynb}"

if [ ! -f "notebooks/$notebook" ]; then
    echo "demo: notebooks/$notebook not found" >&2
    exit 1
fi
if [ ! -x "$bin/jupyter-lab" ]; then
    echo "demo: JupyterLab is not installed in $bin; install the e2e extra: $bin/pip install -e '.[e2e]'" >&2
    exit 1
fi

token="${JUPYTER_TOKEN:-$("$bin/python" -c 'import secrets; print(secrets.token_hex(16))')}"
extra=()
if [ "$(id -u)" -eq 0 ]; then
    extra+=(--allow-root)
fi
export NB_AGENTS_STATIC="${NB_AGENTS_STATIC:-0}"

echo "nb_agents demo: JupyterLab on http://127.0.0.1:$port"
echo "  open: http://127.0.0.1:$port/lab/tree/$notebook?token=$token"
echo "  stop: Ctrl+C (twice). The terminal demo is 'make demo-cli'."
exec "$bin/jupyter-lab" --no-browser --ip=127.0.0.1 --port="$port" --port-retries=0 \
    --IdentityProvider.token="$token" --ServerApp.root_dir=notebooks \
    --LabApp.default_url="/lab/tree/$notebook" ${extra[@]+"${extra[@]}"}
