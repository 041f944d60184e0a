#!/usr/bin/env bash
# Debian's Chromium, for the console's browser test (test/src/console.e2e.test.ts drives it with playwright-core,
# which downloads no browser of its own). Does nothing when CHROMIUM_PATH names an executable or `chromium` is on the
# PATH; otherwise installs Debian's package with apt-get (as root, or through sudo when it needs no password).
set -euo pipefail

if [ -n "${CHROMIUM_PATH:-}" ]; then
  if [ -x "$CHROMIUM_PATH" ]; then exit 0; fi
  echo "install-chromium: CHROMIUM_PATH=$CHROMIUM_PATH is not an executable" >&2
  exit 1
fi
if command -v chromium >/dev/null 2>&1; then exit 0; fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: the console's browser test needs Chromium: install it, or set CHROMIUM_PATH to its executable" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! sudo -n true 2>/dev/null; then
    echo "install-chromium: the console's browser test needs Debian's chromium: run 'sudo apt-get install chromium', or set CHROMIUM_PATH" >&2
    exit 1
  fi
  sudo="sudo -n"
fi
echo "install-chromium: installing Debian's chromium (once)"
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
