#!/usr/bin/env bash
# Creates the system user Chromium runs as when pictor runs as root
# (render.DefaultUser): no home, no login shell, a group of its own.
# Does nothing when it exists or when not run as root (pictor then runs
# Chromium as its own user).
set -euo pipefail
user="${1:-pictor}"
if id -u "$user" >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
  exit 0
fi
echo "creating system user $user for Chromium"
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
