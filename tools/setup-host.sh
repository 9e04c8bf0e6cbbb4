#!/usr/bin/env bash
# Host prerequisites for the lab and the tests: Debian packages and podman's engine settings.
# Idempotent; needs root (a fresh Debian 12 machine is the target).
set -euo pipefail

# openjdk-17-jre-headless: ansible-rulebook's rule engine (Drools) runs in Java 17 (tests/eda).
packages=(podman runc debootstrap uidmap slirp4netns fuse-overlayfs
          conmon containernetworking-plugins git make shellcheck
          python3.11 python3.11-venv openjdk-17-jre-headless)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "==> apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# crun fails on this host's hybrid cgroup layout and podman's default ulimits
# exceed the hard limit, so the lab needs these two engine settings.
conf=/etc/containers/containers.conf
want=$(dirname "$0")/containers.conf
if [[ ! -e $conf ]]; then
  install -D -m 0644 "$want" "$conf"
  echo "==> wrote $conf"
elif ! cmp -s "$want" "$conf"; then
  if ! grep -q '^runtime = "runc"' "$conf" || ! grep -q 'nofile=1024:1024' "$conf"; then
    echo "error: $conf exists and lacks the lab's settings; merge tools/containers.conf into it" >&2
    exit 1
  fi
fi
