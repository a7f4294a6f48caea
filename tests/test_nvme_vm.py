"""tools/nvme_vm without booting: the QEMU options a VmSpec makes, QEMU's write-cache arithmetic,
the refusals of a spec QEMU would reject, and what the helper says when it cannot run here.
(The boots are in test_nvme_e2e.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.nvme_vm import Controller, Namespace, VmSpec, WriteCache, parse_size
from tools.nvme_vm import vm as vm_module
from tools.nvme_vm.spec import image_names, numa_options, qemu_args


def test_one_controller_one_namespace():
    spec = VmSpec(controllers=(Controller(namespaces=(Namespace("1G", 4096),), serial="S1"),))
    args = qemu_args(spec, Path("/img"))
    assert args == ["-device", "nvme,id=ctrl0,serial=S1",
                    "-drive", "file=/img/nvme0-ns1.img,if=none,id=nvm0n1,format=raw",
                    "-device", ("nvme-ns,drive=nvm0n1,bus=ctrl0,nsid=1,logical_block_size=4096,"
                    "physical_block_size=4096")]
    assert image_names(spec) == [(0, 0, "nvme0-ns1.img")]
    assert numa_options(spec) == []


def test_namespaces_warning_numa_and_write_cache():
    cache = WriteCache(fast=200_000_000, slow=20_000_000, burst_s=5)
    spec = VmSpec(controllers=(
        Controller(namespaces=(Namespace("1G", 512, cache), Namespace("256M")), serial="A"),
        Controller(serial="B", critical_warning=0x2, numa_node=1),
    ), numa_nodes=2, cpus=2, memory_mib=2048)
    args = " ".join(qemu_args(spec, Path("/i")))
    assert "-device nvme-subsys,id=subsys0,nqn=tk-subsys0 -device nvme,id=ctrl0,serial=A," \
           "subsys=subsys0" in args
    assert ("file=/i/nvme0-ns1.img,if=none,id=nvm0n1,format=raw,throttling.bps-write=20000000,"
            "throttling.bps-write-max=200000000,throttling.bps-write-max-length=5") in args
    assert "nvme-ns,drive=nvm0n2,bus=ctrl0,nsid=2," in args
    assert "-device pxb-pcie,id=pxb1,bus_nr=80,numa_node=1,bus=pcie.0 -device " \
           "pcie-root-port,id=rp1,bus=pxb1,chassis=11,slot=0 -device " \
           "nvme,id=ctrl1,serial=B,smart_critical_warning=2,bus=rp1" in args
    assert numa_options(spec) == ["--numa", "1024M,cpus=0", "--numa", "1024M,cpus=1"]
    assert spec.namespace_count == 3


def test_qemus_write_bucket_arithmetic():
    # util/throttle.c: the bucket holds max x burst_length and leaks at the average rate, so
    # writing at max fills it at max - avg: 1000 MB / 180 MB/s = 5.56 s at 200 MB/s
    cache = WriteCache(fast=200_000_000, slow=20_000_000, burst_s=5)
    assert cache.bucket_bytes == 1_000_000_000
    assert cache.cache_bytes == pytest.approx(1_111_111_111, rel=1e-9)
    assert cache.recover_bytes_per_s == 20_000_000


@pytest.mark.parametrize("make, message", [
    (lambda: WriteCache(fast=10, slow=20), "slow < fast"),
    (lambda: WriteCache(burst_s=1), "burst_s >= 2"),
    (lambda: Namespace("1G", 1024), "512 or 4096"),
    (lambda: Namespace(4096 * 3 + 512, 4096), "not a multiple"),
    (lambda: Controller(serial="has space"), "serial"),
    (lambda: Controller(critical_warning=256), "one byte"),
    (lambda: VmSpec(controllers=(Controller(numa_node=1),)), "numa_nodes >"),
    (lambda: VmSpec(controllers=(Controller(serial="X"), Controller(serial="X"))), "distinct"),
    (lambda: VmSpec(numa_nodes=2, cpus=3), "split evenly"),
])
def test_specs_qemu_would_refuse_are_refused_here(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_sizes():
    assert parse_size("1G") == 2**30 and parse_size("512M") == 2**29
    assert parse_size("64k") == 65536 and parse_size(4096) == 4096
    with pytest.raises(ValueError):
        parse_size("lots")


def test_unavailable_says_what_is_missing_and_how_to_add_it(tmp_path, monkeypatch):
    monkeypatch.setattr(vm_module, "CACHE", tmp_path / "no-cache")
    why = vm_module.available(root=tmp_path)
    assert why is not None and "env.bash --nvme-vm" in why


def test_the_venvs_base_python_is_shared_cached_only_outside_usr(tmp_path):
    """pyvenv.cfg's home names the base interpreter's bin folder: its prefix holds the standard
    library, which the guest reads cached (a share of its own) unless /usr, shared already, does."""
    venv = tmp_path / "venv"
    venv.mkdir()
    assert vm_module.base_prefix(venv) is None  # no pyvenv.cfg: nothing said
    cfg = venv / "pyvenv.cfg"
    cfg.write_text("home = /root/.pyenv/versions/3.11.7/bin\nversion = 3.11.7\n")
    assert vm_module.base_prefix(venv) == Path("/root/.pyenv/versions/3.11.7")
    shares = vm_module._cached_shares(venv)
    assert f"local,id={vm_module.BASE_TAG},path=/root/.pyenv/versions/3.11.7,security_model=none," \
           "readonly=on" in shares
    for home in ("/usr/bin", "/usr/local/bin"):
        cfg.write_text(f"home = {home}\n")
        assert vm_module.base_prefix(venv) is None
        assert not any(vm_module.BASE_TAG in arg for arg in vm_module._cached_shares(venv))
