#!/usr/bin/env bash
# A screenshot of a report page (report.html of grafx fit, demo or prune) in headless Chromium:
# how the page looks in a real browser, for the report screenshot test and docs/images/report.png.
#
#   scripts/report-screenshot.sh demo-output/report.html report.png [WIDTH [HEIGHT [SCALE]]]
#
# The window is WIDTH×HEIGHT CSS pixels (default 1280×4000): the top of the page, the rest cut
# off. SCALE (default 1) scales the picture: 0.5 gives 640×2000 pixels of the same page (a
# lighter picture for the docs, docs/images/report.png).
# Exits 2 when no Chromium is installed (scripts/setup.sh --tests installs Debian's chromium).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 5 ]; then
  echo "usage: $0 REPORT.html OUT.png [WIDTH [HEIGHT [SCALE]]]" >&2
  exit 1
fi
report=$1 out=$2 width=${3:-1280} height=${4:-4000} scale=${5:-1}
[ -f "$report" ] || { echo "$0: $report: no such file" >&2; exit 1; }
browser=""
for name in chromium chromium-browser google-chrome; do
  if command -v "$name" >/dev/null 2>&1; then browser=$(command -v "$name"); break; fi
done
[ -n "$browser" ] || { echo "$0: no chromium found (scripts/setup.sh --tests installs it)" >&2; exit 2; }

# file:// URL of the page, with the characters a URL cannot hold percent-encoded.
url="file://$(realpath "$report" | sed -e 's/%/%25/g' -e 's/ /%20/g' -e 's/#/%23/g' -e 's/?/%3F/g')"
out=$(realpath -m "$out")
# A fresh profile each time: runs neither share state nor leave any behind.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$out"
# --virtual-time-budget: the page's pictures and the players' metadata load before the shot.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --mute-audio \
  --no-first-run --no-default-browser-check --user-data-dir="$profile" \
  --virtual-time-budget=5000 --window-size="$width,$height" --force-device-scale-factor="$scale" \
  --screenshot="$out" "$url" \
  >"$profile/log" 2>&1 || { cat "$profile/log" >&2; exit 1; }
[ -s "$out" ] || { cat "$profile/log" >&2; echo "$0: no screenshot written" >&2; exit 1; }
