#!/usr/bin/env bash
# The "Fresh clone" figures of docs/operations.md: the README's two commands on a fresh clone of this checkout's
# HEAD, with empty uv and pip caches (as on a bare machine) and a RECALL_HOME of its own, for each installer.
#   bash benchmarks/fresh_clone.sh [uv|pip ...]        (both by default; about 15 minutes each on 2 cores)
# Per installer: the first `make demo` (installing included), a second `make demo`, then on another fresh clone
# `make install` and `make test`. The embedded warehouse the demo starts is stopped and its home removed after.
set -uo pipefail
source_repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=$(mktemp -d /tmp/fresh-clone.XXXXXX)
echo "commit $(git -C "$source_repo" rev-parse --short HEAD); $(nproc) cores; logs under $work"

timed() {  # timed LABEL LOG COMMAND...: run COMMAND into LOG and print LABEL, exit code and seconds
    local label=$1 log=$2 start=$SECONDS
    shift 2
    "$@" > "$log" 2>&1
    echo "$label: exit $? in $((SECONDS - start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
}

installers=("$@")
[ ${#installers[@]} -gt 0 ] || installers=(uv pip)
for installer in "${installers[@]}"; do
    for what in demo test; do
        clone=$work/$installer-$what
        git clone -q "$source_repo" "$clone"
        (
            cd "$clone" || exit 1
            export RECALL_INSTALLER=$installer RECALL_HOME=$clone.home
            export UV_CACHE_DIR=$clone.cache/uv PIP_CACHE_DIR=$clone.cache/pip
            if [ "$what" = demo ]; then
                timed "$installer: first make demo" "$clone.first.log" make demo
                timed "$installer: second make demo" "$clone.second.log" make demo
                .venv/bin/python -m seed reset > /dev/null 2>&1
            else
                timed "$installer: make install" "$clone.install.log" make install
                timed "$installer: make test after it" "$clone.test.log" make test
            fi
        )
        rm -rf "$clone.cache"
    done
done
