#!/usr/bin/env bash
# Regenerates docs/report-demo.png, the README's picture of a report: the page `maintwatch demo
# --report` writes for the single-proxy scenario, loaded in headless Chromium (Debian's
# `chromium`; MAINTWATCH_CHROMIUM names another). Chromium runs with --no-sandbox because CI runs
# it as root.
#
#   scripts/release/report-screenshot.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
chromium=${MAINTWATCH_CHROMIUM:-chromium}
command -v "$chromium" >/dev/null || { echo "missing: $chromium" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo run -q -- demo --scenario single-proxy --speed 10 --color never --report "$work/demo.html" >/dev/null
"$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --hide-scrollbars --window-size=1280,720 \
    --screenshot="$PWD/docs/report-demo.png" "file://$work/demo.html" 2>/dev/null
ls -l docs/report-demo.png
