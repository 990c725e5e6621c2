#!/usr/bin/env bash
# Rebuilds the third-party rule list that origin/consent embeds, from a pinned
# npm package:
#   easylist-cookie.txt.gz  EasyList Cookie's element-hiding rules, as compiled
#                           into rules/filterlist.txt of @duckduckgo/autoconsent
#   LICENSE-EasyList        CC BY-SA 3.0 legal code (EasyList is dual-licensed
#                           GPLv3 / CC BY-SA 3.0; Pictor uses it under the latter)
#   LICENSE-autoconsent     MPL-2.0, the license of the package that carries it
# origin/consent/pictor.txt (CMP network rules and CMP roots) is Pictor's own
# and edited by hand. The build does not run this script; run it by hand to
# move to a new version, then update the pins below and origin/consent/NOTICE.
# Needs npm, node, gzip and sha256sum. The output is reproducible for the same pins.
#
# 15.1.0 is the last autoconsent release that carries EasyList Cookie (16.0.0
# dropped filter lists); no other license-compatible npm package ships it. A
# newer EasyList means another carrier: keep the file name and format (ABP
# syntax) and origin/consent parses it unchanged.
set -euo pipefail

AUTOCONSENT_VERSION=15.1.0
AUTOCONSENT_SHA256=6e6b2ac0c9f9d85d0200d0f67ca7c5aa0fe0b1a8c91729dcd2d52f041c5cc30a

. "$(dirname "$0")/npm-pack.sh"
out=$root/origin/consent
fetch @duckduckgo/autoconsent "$AUTOCONSENT_VERSION" "$AUTOCONSENT_SHA256"

list=@duckduckgo/autoconsent/rules/filterlist.txt
grep -q '^! Based on EasyList ' "$list" || { echo "$list is not the EasyList Cookie compilation" >&2; exit 1; }
rules=$(grep -c '##' "$list")
[ "$rules" -gt 10000 ] || { echo "only $rules element-hiding rules in $list" >&2; exit 1; }
gzip -9 -n -c "$list" > "$out/easylist-cookie.txt.gz"

cp @duckduckgo/autoconsent/LICENSE "$out/LICENSE-autoconsent"
license_text CC-BY-SA-3.0 > "$out/LICENSE-EasyList"

echo "easylist-cookie.txt.gz: $rules rules ($(sed -n 's/^! Based on //p' "$list")), $(wc -c < "$out/easylist-cookie.txt.gz") bytes"
