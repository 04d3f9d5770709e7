#!/usr/bin/env bash
# Install the tools behind the offline report views, as root on Debian 12. Idempotent;
# silent on success, one line naming the failed step otherwise. Logs go to
# build/setup-report-tools.log.
#   inferno-flamegraph  (crates.io "inferno", pinned; cargo from rustup or Debian): flame graph
#                       SVGs, into build/tools/bin
#   chromium, chromium-driver (Debian): the headless browser the HTML report is tested in
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
# 0.11.13 with its lockfile builds with Debian 12's rustc 1.63 as well as with current ones.
inferno_version=0.11.13
mkdir -p "$build"
log=$build/setup-report-tools.log
: > "$log"

step() {  # step NAME CMD... : run CMD, quiet unless it fails
  local name=$1; shift
  if ! "$@" >>"$log" 2>&1; then
    echo "setup-report-tools: step '$name' failed (see $log)" >&2
    exit 1
  fi
}

browser_debs() {
  local missing=()
  for p in chromium chromium-driver; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

find_cargo() {  # rustup's cargo (maybe not on a non-login PATH), else Debian's, installed now
  local cargo
  for cargo in "$(command -v cargo)" "$HOME/.cargo/bin/cargo"; do
    [ -x "$cargo" ] && { echo "$cargo"; return 0; }
  done
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cargo >&2 &&
    echo /usr/bin/cargo
}

inferno() {
  local tools=$build/tools cargo minor
  local stamp=$tools/.inferno-$inferno_version  # 0.11 has no --version to ask
  [ -f "$stamp" ] && [ -x "$tools/bin/inferno-flamegraph" ] && return 0
  cargo=$(find_cargo) || return 1
  minor=$("$cargo" --version | sed -n 's/^cargo 1\.\([0-9]*\).*/\1/p')
  if [ "${minor:-0}" -lt 68 ]; then
    # Debian 12's cargo 1.65 reads the crates.io index through git (github.com); the sparse
    # index over HTTPS is an unstable feature there, enabled for this one install.
    RUSTC_BOOTSTRAP=1 "$cargo" -Z sparse-registry install --quiet --locked --root "$tools" \
      --version "$inferno_version" inferno
  else
    "$cargo" install --quiet --locked --root "$tools" --version "$inferno_version" inferno
  fi && touch "$stamp"
}

[ "$(id -u)" -eq 0 ] || { echo "setup-report-tools: must run as root (apt-get)" >&2; exit 1; }
step "install chromium and chromium-driver" browser_debs
step "install inferno $inferno_version (cargo)" inferno
