#!/usr/bin/env bash
# Run here (Debian 12): unpacks what scripts/device-check.sh needs of Debian's packages into
# .deps/root (ignored by git; carried to the GPU machine): the headers of the -dev packages, the
# audio and Graphviz libraries the grafx program links, and a Graphviz plugin list with the two
# plugins it uses (core, dot layout), found there through GVBINDIR; for CMake there (pip's build),
# pkgconf and the .pc files that sndfile's names.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.deps/' .git/info/exclude 2>/dev/null || echo /.deps/ >>.git/info/exclude
rm -rf .deps && mkdir -p .deps/debs
(cd .deps/debs && apt-get download -q nlohmann-json3-dev libcli11-dev libsndfile1-dev \
  libsamplerate0-dev libgraphviz-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev \
  lv2-dev libsndfile1 libflac12 libvorbis0a libvorbisenc2 libopus0 libogg0 libmpg123-0 \
  libmp3lame0 libsamplerate0 libgvc6 libcgraph6 libcdt5 libpathplan4 libltdl7 libxdot4 \
  libflac-dev libogg-dev libvorbis-dev libopus-dev libmpg123-dev libmp3lame-dev pkgconf-bin \
  libpkgconf3 >/dev/null)
for f in .deps/debs/*.deb; do dpkg -x "$f" .deps/root; done
rm -rf .deps/debs
# zlib1g-dev's link names this system's zlib by its full version: take whichever libz.so.1 the
# GPU machine has.
ln -sfn /lib/x86_64-linux-gnu/libz.so.1 .deps/root/usr/lib/x86_64-linux-gnu/libz.so
graphviz=.deps/root/usr/lib/x86_64-linux-gnu/graphviz
awk '/^[^ \t]+\.so\.6 [^ \t]+ \{/ { keep = ($1 ~ /^libgvplugin_(core|dot_layout)\./) }
     keep { print } /^\}/ { keep = 0 }' /usr/lib/x86_64-linux-gnu/graphviz/config6a >"$graphviz/config6a" ||
  { echo "device-deps: needs Debian's Graphviz (scripts/setup.sh)"; exit 1; }
echo "device-deps: $(du -sh .deps | cut -f1) in .deps"
