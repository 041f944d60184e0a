#!/usr/bin/env bash
# Debian's bubblewrap, the sandbox every stdio MCP server runs in (MCP_STDIO_SANDBOX=bubblewrap, the default): new
# user, PID, IPC and network namespaces, a read-only view of only what the server needs, resource limits. Does nothing
# when BWRAP_PATH names an executable or `bwrap` is on the PATH; otherwise installs Debian's package with apt-get (as
# root, or through sudo when it needs no password). prlimit (util-linux, essential on Debian) applies the limits.
set -euo pipefail

if [ -n "${BWRAP_PATH:-}" ]; then
  if [ -x "$BWRAP_PATH" ]; then exit 0; fi
  echo "install-sandbox: BWRAP_PATH=$BWRAP_PATH is not an executable" >&2
  exit 1
fi
if command -v bwrap >/dev/null 2>&1; then exit 0; fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-sandbox: stdio MCP servers run under bubblewrap: install it (package bubblewrap), or set MCP_STDIO_SANDBOX=off" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! sudo -n true 2>/dev/null; then
    echo "install-sandbox: stdio MCP servers run under bubblewrap: run 'sudo apt-get install bubblewrap', or set MCP_STDIO_SANDBOX=off" >&2
    exit 1
  fi
  sudo="sudo -n"
fi
echo "install-sandbox: installing Debian's bubblewrap (once)"
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap
