#!/usr/bin/env bash
# Install headless Chromium (Debian package `chromium`) for the slow UI test (tests/assets/test_ui.py).
# Idempotent: does nothing when a chromium binary is already on PATH. Needs root (or sudo).
set -euo pipefail
for bin in chromium chromium-browser google-chrome; do
  if command -v "$bin" >/dev/null 2>&1; then
    echo "chromium already installed: $(command -v "$bin")"
    exit 0
  fi
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "installed: $(command -v chromium) ($(chromium --version 2>/dev/null || true))"
