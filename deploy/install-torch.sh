#!/usr/bin/env bash
# Install torch, pinned, into a virtual environment (`make install` runs this before secrag itself):
# from TORCH_INDEX_URL (PyTorch's CPU index by default; a mirror of it, or a CUDA index where one is
# wanted) when it answers within TORCH_PROBE_SECONDS, else from what pip is configured with. Falling back,
# it refuses a torch that would bring CUDA libraries (nvidia-* packages, gigabytes) to a machine without
# nvidia-smi: pip's public index serves the CUDA build on Linux x86-64. An empty TORCH_INDEX_URL takes
# pip's configured index as it is, with no check.
#
#   deploy/install-torch.sh PYTHON        # the environment's python (.venv/bin/python)
#
# Settings (environment; the Makefile passes its variables of the same names):
#   TORCH_VERSION        the pin (2.13.0; deploy/Dockerfile pins the same)
#   TORCH_INDEX_URL      https://download.pytorch.org/whl/cpu (deploy/Dockerfile's default too)
#   TORCH_PROBE_SECONDS  how long the index may take to answer (5)
set -euo pipefail

python=${1:?usage: deploy/install-torch.sh PYTHON}
pin=torch==${TORCH_VERSION:-2.13.0}
index=${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}
probe=${TORCH_PROBE_SECONDS:-5}
say() { echo "install-torch: $*" >&2; }

answers() {
    "$python" -c 'import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=float(sys.argv[2])).close()' "$1" "$probe" 2>/dev/null
}

# The packages pip would install for the pin, from its configured index, without installing them.
planned() {
    local report
    report=$(mktemp)
    trap 'rm -f "$report"' RETURN
    "$python" -m pip install --quiet --dry-run --report "$report" "$pin" >/dev/null 2>&1 || return 0
    "$python" -c 'import json, sys
print("\n".join(i["metadata"]["name"] for i in json.load(open(sys.argv[1])).get("install", [])))' "$report"
}

if [ -n "$index" ] && answers "$index"; then
    say "$pin from $index"
    exec "$python" -m pip install --quiet --index-url "$index" "$pin"
fi
if [ -n "$index" ]; then
    say "$index does not answer within $probe s; $pin from pip's configured index"
    if ! command -v nvidia-smi >/dev/null && planned | grep -qi '^nvidia-'; then
        say "pip's configured index offers the CUDA build of $pin (nvidia-* packages) and this machine has no GPU"
        say "set TORCH_INDEX_URL to a reachable CPU index (a mirror of https://download.pytorch.org/whl/cpu),"
        say "or TORCH_INDEX_URL= (empty) to take what pip's index offers"
        exit 1
    fi
fi
exec "$python" -m pip install --quiet "$pin"
