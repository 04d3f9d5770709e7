# Debian roots: debootstrap (minbase) of a suite from the mirror the host's apt uses, packages
# installed in it with its own apt. Sourced by scripts/fixture.sh (a server from Debian's
# packages) and scripts/dist-check.sh (fresh roots the release wheel is installed in).

host_mirror() {  # the Debian mirror in the host's apt sources (a Debian host always has one)
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    sed -n -E 's,^(URIs:|deb)[[:space:]]+(\[[^]]*\][[:space:]]+)?(https?://[^[:space:]]*/debian)/?([[:space:]].*)?$,\3,p' |
    head -n 1)
  [ -n "$uri" ] && echo "$uri"
}

remove_tree() {  # remove_tree DIR: rm -rf, first unmounting what an interrupted debootstrap left
  [ -e "$1" ] || return 0
  local m
  awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m"; done
  rm -rf --one-file-system "$1"  # never into /proc, /sys or /dev should one still be mounted
}

setup_root() {  # setup_root DIR: what the root needs before apt and the server run in it
  # The mirror's Release files may be past their Valid-Until date.
  echo 'Acquire::Check-Valid-Until "false";' >"$1/etc/apt/apt.conf.d/99innostall" &&
    printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$1/etc/hosts"
}

root_apt() {  # root_apt DIR apt-get arguments...: the root's own apt-get, run in it
  local dir=$1; shift
  LC_ALL=C DEBIAN_FRONTEND=noninteractive chroot "$dir" apt-get -q -y "$@"
}
