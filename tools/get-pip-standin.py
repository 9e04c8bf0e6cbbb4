"""Offline stand-in for ansible-test's get-pip bootstrap script.

ansible-test downloads get-pip.py from a host these machines cannot reach and
caches it as ~/.ansible/test/cache/get_pip_<version>.py; tools/run-tests.sh
puts this file there instead. It takes get-pip's arguments (pip install
arguments plus --no-setuptools/--no-wheel), bootstraps pip from the
interpreter's own ensurepip, then installs the requested packages from PyPI.
"""
import subprocess
import sys

OWN_FLAGS = ("--no-setuptools", "--no-wheel")


def main():
    args = [a for a in sys.argv[1:] if a not in OWN_FLAGS]
    # In a child process: ensurepip sets PIP_CONFIG_FILE=/dev/null in its own
    # environment, which would hide the machine's pip settings (CA bundle).
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--upgrade"] + args)
    # ensurepip on Python 3.11 also brings setuptools; get-pip would not.
    if "--no-setuptools" in sys.argv:
        subprocess.check_call([sys.executable, "-m", "pip", "uninstall", "-q", "-y", "setuptools"])


if __name__ == "__main__":
    main()
