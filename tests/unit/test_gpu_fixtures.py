"""Consistency of the captured GPU fixtures (tests/fixtures/gpus) and behaviour of the lab nvidia-smi simulator."""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

GPUS = Path(__file__).resolve().parents[1] / "fixtures" / "gpus"
SIM = GPUS / "gpuops-lab-nvidia-smi"
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.\n")

# What each capture holds; the A100 capture lists 1 of its 4 attached GPUs (trimmed upstream, see its SOURCE.md).
FIXTURES = {
    "h100-sxm5-80gb-x1": {"listed": 1, "attached": 1, "captures": {"query-gpu.csv", "query-gpu.fields", "L.txt"}, "proc": True},
    "a100-sxm4-80gb-mig": {"listed": 1, "attached": 4, "captures": {"q-x.xml"}, "proc": True},
    "t4": {"listed": 1, "attached": 1, "captures": {"q-x.xml"}, "proc": False},
    "h200-x1": {"listed": 1, "attached": 1, "proc": True,
                "captures": {"q-x.xml", "q.txt", "L.txt", "version.txt", "mig-lgip.txt", "topo-m.txt", "query-gpu.csv", "query-gpu.fields"}},
    "h100-x1": {"listed": 1, "attached": 1, "proc": True,
                "captures": {"q-x.xml", "q.txt", "L.txt", "version.txt", "mig-lgip.txt", "topo-m.txt", "query-gpu.csv", "query-gpu.fields"}},
    "cpu-only": {"listed": 0, "attached": 0, "captures": None, "proc": False},
}
HEX = {"vendor": r"0x[0-9a-f]{4}\n", "device": r"0x[0-9a-f]{4}\n", "subsystem_vendor": r"0x[0-9a-f]{4}\n",
       "subsystem_device": r"0x[0-9a-f]{4}\n", "class": r"0x[0-9a-f]{6}\n"}


def pci_devices(fixture):
    """Map lowercase sysfs address -> {file: value} for one fixture."""
    root = GPUS / fixture / "sys" / "bus" / "pci" / "devices"
    return {d.name: {f.name: f.read_text() for f in d.iterdir()} for d in sorted(root.iterdir())}


def nvidia_display(fixture):
    """sysfs entries that are NVIDIA display-class (base class 0x03) devices."""
    return {addr: f for addr, f in pci_devices(fixture).items() if f["vendor"] == "0x10de\n" and f["class"].startswith("0x03")}


def sysfs_addr(nvsmi_bus_id):
    """nvidia-smi prints 00000000:18:00.0; sysfs names it 0000:18:00.0 in lowercase."""
    domain, rest = nvsmi_bus_id.split(":", 1)
    return ("%04x:" % int(domain, 16)) + rest.lower()


def split_id(combined):
    """0x233010DE / 233010DE -> ('0x2330', '0x10de'): device (or subsystem) id first, vendor last."""
    value = int(combined, 16)
    return "0x%04x" % (value >> 16), "0x%04x" % (value & 0xFFFF)


def proc_driver_version(fixture):
    """The driver version named by the NVRM line of proc/driver/nvidia/version."""
    text = (GPUS / fixture / "proc" / "driver" / "nvidia" / "version").read_text()
    match = re.match(r"NVRM version: NVIDIA UNIX .*?Kernel Module(?: for \S+)?  (\d+\.\d+(?:\.\d+)?)  ", text)
    assert match, "unparseable NVRM line: %r" % text
    return match.group(1)


def csv_table(fixture):
    """Header cells, unit-free field names and rows of the captured query-gpu CSV."""
    lines = (GPUS / fixture / "nvidia-smi" / "query-gpu.csv").read_text().splitlines()
    header = lines[0].split(", ")
    return header, [re.sub(r" \[[^\]]+\]$", "", h) for h in header], [line.split(", ") for line in lines[1:] if line]


def run_sim(fixture, *args):
    """Run the simulator against a fixture directory the way the lab does."""
    env = dict(os.environ, GPUOPS_LAB_GPU_FIXTURE=str(GPUS / fixture))
    return subprocess.run([sys.executable, str(SIM), *args], env=env, capture_output=True, text=True, timeout=30, check=False)


def test_every_fixture_directory_is_described_here():
    assert sorted(p.name for p in GPUS.iterdir() if p.is_dir()) == sorted(FIXTURES)


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_source_md_names_every_captured_file(fixture):
    source = (GPUS / fixture / "SOURCE.md").read_text()
    smi = GPUS / fixture / "nvidia-smi"
    for name in (sorted(p.name for p in smi.iterdir()) if smi.is_dir() else []):
        assert name in source, "%s/SOURCE.md does not mention %s" % (fixture, name)
    # A published capture is cited by URL; our own captures name the script that took them.
    assert "http" in source or "tests/fixtures/gpus/capture.sh" in source, "SOURCE.md must cite where the data came from"


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_fixture_layout_matches_its_capture_list(fixture):
    spec = FIXTURES[fixture]
    smi = GPUS / fixture / "nvidia-smi"
    if spec["captures"] is None:
        assert not smi.exists()
    else:
        assert {p.name for p in smi.iterdir()} == spec["captures"]
    assert (GPUS / fixture / "proc" / "driver" / "nvidia" / "version").is_file() == spec["proc"]


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_sysfs_files_use_kernel_format(fixture):
    devices = pci_devices(fixture)
    assert devices
    for addr, files in devices.items():
        assert re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", addr)
        assert {"vendor", "device", "class"} <= set(files), addr
        for name, value in files.items():
            assert re.fullmatch(HEX[name], value), "%s/%s: %r" % (addr, name, value)


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_nvidia_display_devices_match_listed_gpus(fixture):
    assert len(nvidia_display(fixture)) == FIXTURES[fixture]["listed"]


@pytest.mark.parametrize("fixture", sorted(f for f, s in FIXTURES.items() if s["captures"] and "q-x.xml" in s["captures"]))
def test_xml_agrees_with_sysfs_and_proc(fixture):
    root = ET.parse(GPUS / fixture / "nvidia-smi" / "q-x.xml").getroot()
    assert root.tag == "nvidia_smi_log"
    assert int(root.findtext("attached_gpus")) == FIXTURES[fixture]["attached"]
    gpus = root.findall("gpu")
    sysfs = nvidia_display(fixture)
    assert sorted(sysfs_addr(g.get("id")) for g in gpus) == sorted(sysfs)
    for gpu in gpus:
        files = sysfs[sysfs_addr(gpu.findtext("pci/pci_bus_id"))]
        assert (files["device"].strip(), files["vendor"].strip()) == split_id(gpu.findtext("pci/pci_device_id"))
        assert (files["subsystem_device"].strip(), files["subsystem_vendor"].strip()) == split_id(gpu.findtext("pci/pci_sub_system_id"))
    if FIXTURES[fixture]["proc"]:
        assert proc_driver_version(fixture) == root.findtext("driver_version")


def test_mig_fixture_reports_mig_enabled():
    gpu = ET.parse(GPUS / "a100-sxm4-80gb-mig" / "nvidia-smi" / "q-x.xml").getroot().find("gpu")
    assert gpu.findtext("mig_mode/current_mig") == "Enabled"
    assert len(gpu.findall("mig_devices/mig_device")) == 4


@pytest.mark.parametrize("fixture", sorted(f for f, s in FIXTURES.items() if s["captures"] and "query-gpu.csv" in s["captures"]))
def test_csv_agrees_with_fields_sysfs_and_proc(fixture):
    header, names, rows = csv_table(fixture)
    fields = (GPUS / fixture / "nvidia-smi" / "query-gpu.fields").read_text().splitlines()
    assert len(fields) == 1
    assert fields[0].split(",") == names
    assert rows and all(len(row) == len(header) for row in rows)
    col = names.index
    sysfs = nvidia_display(fixture)
    assert len(rows) == FIXTURES[fixture]["listed"]
    assert sorted(sysfs_addr(row[col("pci.bus_id")]) for row in rows) == sorted(sysfs)
    for row in rows:
        assert int(row[col("count")]) == FIXTURES[fixture]["attached"]
        files = sysfs[sysfs_addr(row[col("pci.bus_id")])]
        assert (files["device"].strip(), files["vendor"].strip()) == split_id(row[col("pci.device_id")])
        assert (files["subsystem_device"].strip(), files["subsystem_vendor"].strip()) == split_id(row[col("pci.sub_device_id")])
        assert files["class"] == "0x%02x%02x00\n" % (int(row[col("pci.baseClass")], 16), int(row[col("pci.subClass")], 16))
        assert proc_driver_version(fixture) == row[col("driver_version")]


@pytest.mark.parametrize("fixture", ["h100-sxm5-80gb-x1", "h200-x1"])
def test_list_capture_matches_csv_uuids(fixture):
    _fields, names, rows = csv_table(fixture)
    listed = (GPUS / fixture / "nvidia-smi" / "L.txt").read_text().splitlines()
    assert listed == ["GPU %s: %s (UUID: %s)" % (r[names.index("index")], r[names.index("name")], r[names.index("uuid")]) for r in rows]


def test_h200_captures_describe_one_gpu():
    # Two H200s were captured that day; the fixture must hold one GPU's files only (see its SOURCE.md).
    _fields, names, rows = csv_table("h200-x1")
    gpu = ET.parse(GPUS / "h200-x1" / "nvidia-smi" / "q-x.xml").getroot().find("gpu")
    assert gpu.findtext("uuid") == rows[0][names.index("uuid")]
    assert gpu.findtext("serial") == rows[0][names.index("serial")]
    assert gpu.findtext("uuid") in (GPUS / "h200-x1" / "host" / "proc-driver-nvidia-gpus-information").read_text()


def test_sim_help_first_line_says_it_is_a_lab_simulator():
    first = run_sim("t4", "--help").stdout.splitlines()[0]
    assert "lab simulator" in first and "captured fixtures" in first


@pytest.mark.parametrize("fixture", ["a100-sxm4-80gb-mig", "t4"])
def test_sim_serves_xml_verbatim(fixture):
    res = run_sim(fixture, "-q", "-x")
    assert res.returncode == 0
    assert res.stdout == (GPUS / fixture / "nvidia-smi" / "q-x.xml").read_text()


def test_sim_list_and_index_filter():
    text = (GPUS / "h100-sxm5-80gb-x1" / "nvidia-smi" / "L.txt").read_text()
    assert run_sim("h100-sxm5-80gb-x1", "-L").stdout == text
    assert run_sim("h100-sxm5-80gb-x1", "-L", "-i", "0").stdout == text
    missing = run_sim("h100-sxm5-80gb-x1", "-L", "-i", "5")
    assert missing.returncode != 0 and "index 5" in missing.stderr


def test_sim_query_gpu_selects_captured_columns():
    res = run_sim("h100-sxm5-80gb-x1", "--query-gpu=pci.bus_id,name,memory.total", "--format=csv")
    assert res.returncode == 0
    assert res.stdout == "pci.bus_id, name, memory.total [MiB]\n00000000:00:09.0, NVIDIA H100 80GB HBM3, 81559 MiB\n"


def test_sim_query_gpu_noheader_nounits_and_index():
    res = run_sim("h100-sxm5-80gb-x1", "--query-gpu=index,memory.total,power.draw,power.management",
                  "--format=csv,noheader,nounits", "-i", "0")
    assert res.returncode == 0
    assert res.stdout == "0, 81559, 69.85, [Requested functionality has been deprecated]\n"
    assert run_sim("h100-sxm5-80gb-x1", "--query-gpu=index", "--format=csv,noheader", "--id=3").returncode != 0


@pytest.mark.parametrize("args, needle", [
    (("--query-gpu=gpu_name", "--format=csv"), "not captured"),
    (("--query-gpu=index",), "--format"),
    (("--query-gpu=index", "--format=json"), "unsupported --format"),
    (("--bogus",), "unsupported argument"),
])
def test_sim_refuses_what_was_not_captured(args, needle):
    res = run_sim("h100-sxm5-80gb-x1", *args)
    assert res.returncode != 0 and res.stdout == "" and needle in res.stderr


def test_sim_refuses_an_answer_the_fixture_lacks():
    assert "not captured" in run_sim("t4", "-L").stderr
    assert "not captured" in run_sim("h100-sxm5-80gb-x1", "-q", "-x").stderr


@pytest.mark.parametrize("fixture", ["cpu-only", "no-such-fixture"])
def test_sim_without_driver_fails_like_nvidia_smi(fixture):
    res = run_sim(fixture, "-L")
    assert res.returncode == 9
    assert res.stdout == NO_DRIVER
