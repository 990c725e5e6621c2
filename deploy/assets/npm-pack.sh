# Sourced by the asset scripts of this directory (not run by itself): sets
# root to the repository, moves into a temporary directory removed on exit,
# and defines fetch, which unpacks a pinned npm package into ./<name> once
# its tarball's SHA-256 matches the pin.

root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fetch() { # name version sha256
  local file
  file=$(npm pack --silent "$1@$2" 2>/dev/null | tail -n 1)
  echo "$3  $file" | sha256sum -c --quiet - || { echo "checksum mismatch for $1@$2" >&2; exit 1; }
  mkdir -p "$1" && tar -xzf "$file" -C "$1" --strip-components=1
}

# license_text prints the legal code of an SPDX license id, from the pinned
# spdx-license-list, fetched on first use.
SPDX_VERSION=6.12.0
SPDX_SHA256=54cc8d13086187333ca1457c8edaa06d9a412144f076aa7f7c1b59c4f3b0a1ef
license_text() { # spdx-id
  [ -d spdx-license-list ] || fetch spdx-license-list "$SPDX_VERSION" "$SPDX_SHA256"
  node -e 'process.stdout.write(require(process.argv[1]).licenseText.trim() + "\n")' \
      "$tmp/spdx-license-list/licenses/$1.json"
}
