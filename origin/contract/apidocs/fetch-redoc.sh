#!/usr/bin/env bash
# Fetches Redoc's standalone bundle from the npm registry at the version
# pinned in apidocs.go (RedocVersion, RedocIntegrity) into redoc/, applies
# the one patch the reference page needs, and points index.html at the
# versioned path. `make apidocs` runs it; commit what it changes.
#
# The patch: Redoc draws Redocly's logo in the menu's footer from
# cdn.redoc.ly, unconditionally (no option turns it off). The page makes no
# request to another host and its CSP allows none, so the logo's address
# becomes an empty inline SVG; the "API docs by Redocly" link stays.
set -euo pipefail
cd "$(dirname "$0")"

version=$(sed -n 's/^const RedocVersion = "\(.*\)"$/\1/p' apidocs.go)
integrity=$(sed -n 's/^const RedocIntegrity = "\(.*\)"$/\1/p' apidocs.go)
if [ -z "$version" ] || [ -z "$integrity" ]; then
	echo "fetch-redoc: RedocVersion or RedocIntegrity missing from apidocs.go" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --no-audit --no-fund "redoc@$version" >/dev/null)
tarball="$tmp/redoc-$version.tgz"
got=$(node -e 'const c = require("crypto"), fs = require("fs");
process.stdout.write("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$tarball")
if [ "$got" != "$integrity" ]; then
	echo "fetch-redoc: redoc@$version is $got, apidocs.go pins $integrity" >&2
	exit 1
fi
tar -xzf "$tarball" -C "$tmp"

cp "$tmp/package/LICENSE" redoc/LICENSE
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" redoc/redoc.standalone.js.LICENSE.txt
node - "$tmp/package/bundles/redoc.standalone.js" redoc/redoc.standalone.js <<'JS'
const fs = require("fs");
const [src, dst] = process.argv.slice(2);
const logo = 'src:"https://cdn.redoc.ly/redoc/logo-mini.svg"';
const empty = 'src:"data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 width=%220%22 height=%220%22/%3E"';
const js = fs.readFileSync(src, "utf8");
const n = js.split(logo).length - 1;
if (n !== 1) {
	console.error(`fetch-redoc: the bundle names the CDN logo ${n} times, the patch expects 1: review the patch`);
	process.exit(1);
}
fs.writeFileSync(dst, js.replace(logo, empty));
JS
# The edge serves the .br and .gz forms made here, never compressing per request.
(cd ../../.. && go run ./origin/contract/precompress/write origin/contract/apidocs/redoc/redoc.standalone.js \
	origin/contract/apidocs/redoc/redoc.standalone.js.LICENSE.txt origin/contract/apidocs/redoc/LICENSE)
sed -i "s#/docs/redoc-[^\"]*\.js#/docs/redoc-$version.js#" index.html
echo "fetch-redoc: redoc@$version in $(pwd)/redoc"
