"""Pure parts of the lab's kubelet simulator (tests/lab/kubelet_sim.py)."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.lab.kubelet_sim import gpu_count, runtime_handlers, selecting, selector_matches, xml_gpu_count

HERE = Path(__file__).resolve().parent
GPUS = HERE.parent / "fixtures" / "gpus"


@pytest.mark.parametrize("version", ["1.6.20", "1.7.24", "2.1.9"])
def test_runtime_handlers_of_real_default_configs(version):
    text = (HERE / "fixtures" / "containerd" / ("default-%s.toml" % version)).read_text()
    assert "runc" in runtime_handlers(text)
    assert "nvidia" not in runtime_handlers(text)


@pytest.mark.parametrize("text, expected", [
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\nruntime_type = "x"\n', {"nvidia"}),
    ('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\nruntime_type = "x"\n', {"nvidia"}),
    ('version = 2\n', set()),
])
def test_runtime_handlers_per_config_version(text, expected):
    assert runtime_handlers(text) == expected


@pytest.mark.parametrize("fixture, count", [("h100-sxm5-80gb-x1", 1), ("h200-x1", 1)])
def test_gpu_count_of_captured_listings(fixture, count):
    assert gpu_count((GPUS / fixture / "nvidia-smi" / "L.txt").read_text()) == count


def test_gpu_count_ignores_mig_lines_and_noise():
    listing = "GPU 0: A (UUID: GPU-1)\n  MIG 1g.10gb     Device  0: (UUID: MIG-1)\nGPU 1: A (UUID: GPU-2)\n"
    assert gpu_count(listing) == 2
    assert gpu_count("") == 0


@pytest.mark.parametrize("selector, labels, expected", [
    ({"nvidia.com/gpu.deploy.device-plugin": "true"}, {"nvidia.com/gpu.deploy.device-plugin": "true", "x": "y"}, True),
    ({"nvidia.com/gpu.deploy.device-plugin": "true"}, {"nvidia.com/gpu.deploy.device-plugin": "false"}, False),
    ({"nvidia.com/gpu.deploy.device-plugin": "true"}, {}, False),
    ({}, {}, True),
])
def test_selector_matches(selector, labels, expected):
    assert selector_matches(selector, labels) is expected


@pytest.mark.parametrize("fixture, count", [("a100-sxm4-80gb-mig", 1), ("t4", 1), ("h200-x1", 1)])
def test_xml_gpu_count_of_captured_reports(fixture, count):
    # The A100 capture lists 1 of its 4 attached GPUs (see its SOURCE.md): the listed ones count.
    assert xml_gpu_count((GPUS / fixture / "nvidia-smi" / "q-x.xml").read_text()) == count


def test_selecting_names_the_daemonsets_whose_selector_matches():
    def daemonset(name, selector):
        return SimpleNamespace(metadata=SimpleNamespace(name=name), spec=SimpleNamespace(template=SimpleNamespace(spec=SimpleNamespace(
            node_selector=selector))))
    sets = [daemonset('nvidia-mig-manager', {'nvidia.com/gpu.deploy.mig-manager': 'true'}),
            daemonset('nvidia-device-plugin-mps-control-daemon', {'nvidia.com/gpu.deploy.device-plugin': 'true', 'nvidia.com/mps.capable': 'true'}),
            daemonset('nvidia-device-plugin-daemonset', {'nvidia.com/gpu.deploy.device-plugin': 'true'}), daemonset('anywhere', None)]
    labels = {'nvidia.com/gpu.deploy.device-plugin': 'true', 'nvidia.com/mps.capable': 'false'}
    assert selecting(sets, labels) == ['anywhere', 'nvidia-device-plugin-daemonset']
    assert selecting(sets, dict(labels, **{'nvidia.com/mps.capable': 'true', 'nvidia.com/gpu.deploy.mig-manager': 'true'})) == [
        'anywhere', 'nvidia-device-plugin-daemonset', 'nvidia-device-plugin-mps-control-daemon', 'nvidia-mig-manager']
