#!/bin/sh
# Create the peer server's virtual environment at .secrag/peer-venv (run from the repository root):
#     sh bench/peer/setup.sh          # chromadb, the ONNX encoder
#     sh bench/peer/setup.sh torch    # and sentence-transformers on torch (server.py --encoder sentence-transformers)
# It uses the interpreter of secrag's .venv (or $PYTHON) and never touches .venv itself.
set -eu
cd "$(dirname "$0")/../.."
python=${PYTHON:-$(readlink -f .venv/bin/python 2>/dev/null || command -v python3)}
"$python" -m venv .secrag/peer-venv
.secrag/peer-venv/bin/pip install --quiet --upgrade pip
.secrag/peer-venv/bin/pip install --quiet -r bench/peer/requirements.txt
.secrag/peer-venv/bin/python -c "import chromadb, onnxruntime; print('peer venv ready: chromadb', chromadb.__version__)"
if [ "${1:-}" = torch ]; then
    deploy/install-torch.sh .secrag/peer-venv/bin/python    # the CPU build, pinned (never CUDA)
    .secrag/peer-venv/bin/pip install --quiet -r bench/peer/requirements-torch.txt
    .secrag/peer-venv/bin/python -c "import sentence_transformers; print('peer venv: sentence-transformers', sentence_transformers.__version__)"
fi
