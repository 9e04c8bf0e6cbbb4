#!/bin/sh
# Lays a lab node out as the Kubernetes distribution $1 lays out its containerd (tests/lab/test_distributions_lab.py):
# its files, directories and socket paths, its program path, and a systemd unit of the distribution's name whose start
# first regenerates the config (the stand-in for the distribution's own start: k3s and RKE2 write config.toml from their
# base, k0s writes containerd.toml while it manages it, MicroK8s renders its template) and then runs the node's real
# Debian containerd with that config and socket. What is real: containerd, systemd, the files' contents (see
# tests/fixtures/distributions/SOURCE.md). What is laid out: the paths, the unit, the regeneration.
# The fixtures are in /usr/local/lib/gpuops-lab/distributions (podman cp puts them there first).
set -eu
name=$1
lib=/usr/local/lib/gpuops-lab/distributions
regenerate=/usr/local/lib/gpuops-lab/regenerate-$name
case $name in
  k3s|rke2)
    data=/var/lib/rancher/$name
    config=$data/agent/etc/containerd/config.toml
    socket=/run/k3s/containerd/containerd.sock
    root=$data/agent/containerd state=/run/k3s/containerd
    [ "$name" = k3s ] && program=$data/data/current/bin/containerd units=k3s.service
    [ "$name" = rke2 ] && program=$data/bin/containerd units=rke2-agent.service
    # k3s (and RKE2) register the NVIDIA runtime they find at start (runtimes.go); the drop-in directory is not made.
    cat > "$regenerate" <<SCRIPT
#!/bin/sh
cat $lib/$name-config.toml > $config
if [ -x /usr/bin/nvidia-container-runtime ]; then cat $lib/k3s-detected-nvidia.toml >> $config; fi
SCRIPT
    ;;
  k0s)
    config=/etc/k0s/containerd.toml socket=/run/k0s/containerd.sock
    root=/var/lib/k0s/containerd state=/run/k0s/containerd program=/var/lib/k0s/bin/containerd units=k0sworker.service
    mkdir -p /etc/k0s/containerd.d
    # k0s writes its file only while its first line says it manages it.
    cat > "$regenerate" <<SCRIPT
#!/bin/sh
if [ ! -e $config ] || [ "\$(head -n 1 $config)" = "# k0s_managed=true" ]; then cat $lib/k0s-containerd.toml > $config; fi
SCRIPT
    ;;
  microk8s)
    args=/var/snap/microk8s/current/args
    config=$args/containerd.toml socket=/var/snap/microk8s/common/run/containerd.sock
    root=/var/snap/microk8s/common/var/lib/containerd state=/var/snap/microk8s/common/run/containerd
    program=/snap/microk8s/current/bin/containerd units=snap.microk8s.daemon-containerd.service
    mkdir -p $args
    cp $lib/microk8s-containerd-template.toml $args/containerd-template.toml
    # run-containerd-with-args renders the template with sed at each start (SNAPSHOTTER and RUNTIME_TYPE as on a
    # cgroup2 host with overlayfs).
    cat > "$regenerate" <<SCRIPT
#!/bin/sh
sed 's@\\\${SNAP}@/snap/microk8s/current@g;s@\\\${SNAP_DATA}@/var/snap/microk8s/current@g;s@\\\${SNAPSHOTTER}@overlayfs@g;s@\\\${RUNTIME}@runc@g' $args/containerd-template.toml > $config
sed -i 's@\\\${RUNTIME_TYPE}@io.containerd.runc.v2@g' $config
SCRIPT
    ;;
  *) echo "unknown distribution $name" >&2; exit 2 ;;
esac
chmod 755 "$regenerate"
mkdir -p "$(dirname "$config")" "$(dirname "$socket")" "$(dirname "$program")" "$root"
ln -sf /usr/bin/containerd "$program"
# The node's own containerd gives way to the distribution's: one containerd, started by the distribution's unit.
systemctl disable --now containerd.service >/dev/null 2>&1
systemctl mask containerd.service >/dev/null 2>&1
cat > "/etc/systemd/system/$units" <<UNIT
[Unit]
Description=gpuops lab: $name's containerd (laid out; the Debian containerd underneath)
[Service]
Type=notify
ExecStartPre=$regenerate
ExecStart=/usr/bin/containerd --config $config --address $socket --root $root --state $state
Delegate=yes
KillMode=process
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now "$units" >/dev/null 2>&1
