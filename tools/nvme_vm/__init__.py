"""An NVMe drive on any machine: QEMU's NVMe controller in a small VM (virtme-ng, Debian's kernel).

    from tools.nvme_vm import Controller, Namespace, VmSpec, WriteCache, nvme_vm
    with nvme_vm(VmSpec(controllers=(Controller(namespaces=(Namespace("1G", 4096),)),))) as vm:
        result = vm.run("lsblk -J -O /dev/nvme0n1")

spec.py says what the VM holds and the QEMU options for it; vm.py boots it; scenarios.py runs
several named commands in one boot; setup.bash installs what it needs (`sudo bash env.bash
--nvme-vm`). The CLI: `python -m tools.nvme_vm --help`. Costs and needs: docs/nvme-vm.md.
"""

from tools.nvme_vm.spec import Controller, Namespace, VmSpec, WriteCache, parse_size
from tools.nvme_vm.vm import GuestFailed, Unavailable, Vm, VmResult, available, nvme_vm

__all__ = ["Controller", "GuestFailed", "Namespace", "Unavailable", "Vm", "VmResult", "VmSpec",
           "WriteCache", "available", "nvme_vm", "parse_size"]
