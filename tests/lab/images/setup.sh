#!/bin/sh
# Runs inside the freshly debootstrapped rootfs (chroot) before it becomes an
# image. labctl.py passes SUITE, MIRROR and COMPONENTS.
set -eu

# deb822 sources with every component: NVIDIA's packages are in non-free.
rm -f /etc/apt/sources.list
cat > /etc/apt/sources.list.d/debian.sources <<SOURCES
Types: deb
URIs: ${MIRROR}
Suites: ${SUITE}
Components: ${COMPONENTS}
SOURCES

# The reachable mirror may be a frozen snapshot whose sid/testing Release
# files have passed their Valid-Until; apt would then refuse to update.
echo 'Acquire::Check-Valid-Until "false";' > /etc/apt/apt.conf.d/99gpuops-lab

# An empty machine-id makes systemd generate one per container, so nodes
# started from one image do not share an identity.
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id /etc/hostname

apt-get clean
rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log
