#!/usr/bin/env bash
# Rebuilds the assets that origin/twemoji embeds from pinned npm packages:
#   svg.tar.bz2       the Twemoji SVGs (@twemoji/svg), graphics under CC-BY 4.0
#   twemoji.min.js    the Twemoji parser (@twemoji/api, MIT) without its CDN default
#   LICENSE           the parser's MIT license, as the package ships it
#   LICENSE-GRAPHICS  the CC-BY 4.0 legal code (from spdx-license-list)
# The build does not run this; run it by hand to move to new versions, then
# update the pins below and the versions named in origin/twemoji/NOTICE.
# Needs npm, node, GNU tar, bzip2 and sha256sum. The output is byte-for-byte
# reproducible for the same pins (sorted names, fixed owners, modes and times).
set -euo pipefail

SVG_VERSION=15.0.0
SVG_SHA256=1d2907557a422c7c4e3feca50ef915c39da1db3d76b4a4d7e73fb59bce4403c3
# The parser is pinned to the release whose emoji set matches the SVGs (Emoji
# 15.1 sequences it knows but the SVGs lack fall back to native text). 17.0.3
# names some text-default emoji with U+FE0F wrongly ("" instead of 1f3cb).
API_VERSION=15.1.0
API_SHA256=05e2ff1360bf8c558382e3e9f87e93166f6569d91da8d3ffff84b71ddce7de13

. "$(dirname "$0")/npm-pack.sh"
out=$root/origin/twemoji
fetch @twemoji/svg "$SVG_VERSION" "$SVG_SHA256"
fetch @twemoji/api "$API_VERSION" "$API_SHA256"

# SVGs: one solid bzip2 stream (the files share most of their text, so a
# solid archive is a third of a zip with one deflate stream per file).
(cd @twemoji/svg && find . -maxdepth 1 -name '*.svg' -printf '%f\n' | LC_ALL=C sort > ../../svg.list)
count=$(wc -l < svg.list)
[ "$count" -gt 3000 ] || { echo "only $count SVGs in @twemoji/svg@$SVG_VERSION" >&2; exit 1; }
tar --create --format=ustar --owner=0 --group=0 --numeric-owner --mode=0644 \
    --mtime=@0 --directory=@twemoji/svg --files-from=svg.list --file=svg.tar
bzip2 -9 -c svg.tar > "$out/svg.tar.bz2"

# Parser: drop the jsDelivr default base so the snippet names no host; the
# renderer always passes its own callback.
sed -E 's#https://cdn\.jsdelivr\.net/gh/jdecked/twemoji@[0-9.]+/assets/##' \
    @twemoji/api/dist/twemoji.min.js > "$out/twemoji.min.js"
if grep -Eq 'https?://' "$out/twemoji.min.js"; then
  echo "twemoji.min.js still names a URL; update the sed above" >&2
  exit 1
fi

cp @twemoji/api/LICENSE "$out/LICENSE"
license_text CC-BY-4.0 > "$out/LICENSE-GRAPHICS"

echo "svg.tar.bz2: $count SVGs, $(wc -c < "$out/svg.tar.bz2") bytes; twemoji.min.js: $(wc -c < "$out/twemoji.min.js") bytes"
