"""The `vm` runtime: a QEMU virtual machine per instance (issue 10; seed study 001 compares
the same workload natively, in containers and in VMs).

- params.py      the runtime's parameters (`VmRuntime`) and how a load's limits map onto a VM
- guest.py       the guest image: Debian from debootstrap, kernel, initramfs, and what the workload's image holds
- agent.py       the guest's PID 1: shares, clock, data disk, barrier, command, results, power off
- accel.py       which accelerator boots a guest here (KVM, else TCG), found by booting one
- qemu.py        QEMU and virtiofsd command lines; their processes under the journal
- cgroup.py      a blkio cgroup for a VM whose bind path is throttled (no other cgroup: it costs)
- procstat.py    the host CPU of QEMU and virtiofsd
- rundir.py      a VM's sockets and pid files on the host
- session.py     the paths (device, image, bind)
- running.py     N VMs of a trial: booted to the barrier, released, waited for, torn down
- guest_stats.py the guest's own diskstats and CPU, as series and totals
- runtime.py     `available` and `provision_vm`, the session's facts (accelerator, `emulated`)
"""
