#!/usr/bin/env bash
# `make demo`: open quickstart.ipynb in JupyterLab on 127.0.0.1 and print its URL.
#
# JupyterLab serves working copies of notebooks/ in DEMO_DIR (default demo-notebooks/, which git
# ignores; scripts/demo_copies.py): play, run, save, and the tracked notebooks stay as they are.
# A copy you changed is kept on the next `make demo`; delete the folder to start afresh.
#
# Environment: PORT (default 8888; `make demo PORT=9000`), NOTEBOOK (default quickstart.ipynb,
# under notebooks/), DEMO_DIR (default demo-notebooks), JUPYTER_TOKEN (default: a fresh random
# token), BIN (default .venv/bin).
# Widgets are live here (NB_AGENTS_STATIC=0 unless set); without an API key the
# notebooks run on their offline rule-based models.
#
# The demo's JupyterLab settings live in a temporary folder: JupyterLab's news toast is off
# (it would cover the notebook) and your own settings are left alone. Kernels talk to the
# server over TCP encrypted with CurveZMQ (the kernelspec supports it), so no kernel warns
# about plain-text TCP when it starts.
# nb_agents' server extension is on (an editable install has no config file for it): saved
# notebooks keep each form's record, not a widget that needs the kernel.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${BIN:-.venv/bin}"
port="${PORT:-8888}"
notebook="${NOTEBOOK:-quickstart.ipynb}"
demo_dir="${DEMO_DIR:-demo-notebooks}"

if [ ! -f "notebooks/$notebook" ]; then
    echo "demo: notebooks/$notebook not found" >&2
    exit 1
fi
if [ ! -x "$bin/jupyter-lab" ]; then
    echo "demo: JupyterLab is not installed in $bin; run make demo (it installs the jupyter and mcp extras)" >&2
    exit 1
fi
if ! "$bin/python" - "$port" <<'PY'
import socket, sys
port = int(sys.argv[1])
with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
    try:
        probe.bind(("127.0.0.1", port))
    except OSError:
        sys.exit(1)
PY
then
    echo "demo: port $port on 127.0.0.1 is in use; pick another one: make demo PORT=$((port + 1))" >&2
    exit 1
fi

echo "nb_agents demo: JupyterLab on http://127.0.0.1:$port"
"$bin/python" scripts/demo_copies.py notebooks "$demo_dir"

token="${JUPYTER_TOKEN:-$("$bin/python" -c 'import secrets; print(secrets.token_hex(16))')}"
settings="$(mktemp -d "${TMPDIR:-/tmp}/nb_agents-demo.XXXXXX")"
trap 'rm -rf "$settings"' EXIT
mkdir -p "$settings/user-settings/@jupyterlab/apputils-extension" "$settings/workspaces"
cat > "$settings/user-settings/@jupyterlab/apputils-extension/notification.jupyterlab-settings" <<'JSON'
{"fetchNews": "false", "checkForUpdates": false}
JSON
extra=()
if [ "$(id -u)" -eq 0 ]; then
    extra+=(--allow-root)
fi
export NB_AGENTS_STATIC="${NB_AGENTS_STATIC:-0}"

echo "  open: http://127.0.0.1:$port/lab/tree/$notebook?token=$token"
echo "  stop: Ctrl+C (twice). The terminal demo is 'make demo-cli'."
# not exec: the trap removes the settings folder when JupyterLab ends
"$bin/jupyter-lab" --no-browser --ip=127.0.0.1 --port="$port" --port-retries=0 \
    --IdentityProvider.token="$token" --ServerApp.root_dir="$demo_dir" \
    --LabApp.user_settings_dir="$settings/user-settings" \
    --LabApp.workspaces_dir="$settings/workspaces" \
    --LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
    --KernelManager.transport_encryption=auto \
    --ServerApp.jpserver_extensions=nb_agents.jupyter_extension=True \
    --LabApp.default_url="/lab/tree/$notebook" ${extra[@]+"${extra[@]}"}
