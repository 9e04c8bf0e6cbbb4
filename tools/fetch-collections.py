"""Lay out the collections the project needs under .build/collections.

kubernetes.core and containers.podman are taken from the PyPI ``ansible``
wheel (Galaxy is not reachable from the lab machines); this collection is
linked in as ansible_collections/gpuops/gpu_operator so ansible finds it by
its FQCN straight from the working tree.
"""
import argparse
import os
import shutil
import subprocess
import sys
import zipfile

WANTED = ("ansible_collections/kubernetes/core/", "ansible_collections/containers/podman/")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ansible-version", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--repo", required=True)
    args = parser.parse_args()

    cache = os.path.join(args.build_dir, "cache")
    dest = os.path.join(args.build_dir, "collections")
    stamp = os.path.join(dest, ".ansible-" + args.ansible_version)
    if not os.path.exists(stamp):
        wheel = os.path.join(cache, "ansible-%s-py3-none-any.whl" % args.ansible_version)
        if not os.path.exists(wheel):
            print("==> downloading ansible %s wheel" % args.ansible_version, flush=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "ansible==" + args.ansible_version, "-d", cache], check=True)
        shutil.rmtree(dest, ignore_errors=True)
        print("==> extracting kubernetes.core and containers.podman", flush=True)
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(dest, [n for n in zf.namelist() if n.startswith(WANTED)])
        with open(stamp, "w", encoding="utf-8"):
            pass

    link = os.path.join(dest, "ansible_collections", "gpuops", "gpu_operator")
    target = os.path.relpath(os.path.abspath(args.repo), os.path.dirname(link))
    if not (os.path.islink(link) and os.readlink(link) == target):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)


if __name__ == "__main__":
    main()
