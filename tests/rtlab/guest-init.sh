#!/bin/sh
# rtloop's PREEMPT_RT lab: PID 1 of the lab's guest (installed as /sbin/rtlab-init in the cached
# root image by tests/rtlab/rtlab.sh; a change here rebuilds the image). Mounts what the checks
# need, runs the check script from the lab disk (/dev/vdb), then powers off: a minbase root has
# no poweroff, and PID 1 must never exit (the kernel panics), so it ends with sysrq 'o'.
#
#   booted with: init=/sbin/rtlab-init (and isolcpus=1 nohz_full=1 rcu_nocbs=1)
#
# Thread contract: the only process at start; everything it starts has ended before power-off.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /lab
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
mount -t cgroup2 nodev /sys/fs/cgroup
if mount -t ext4 /dev/vdb /lab; then
  /bin/bash /lab/guest-checks.sh
  echo "rtlab-init: checks ended with $?"
  sync
  umount /lab
else
  echo "rtlab-init: the lab disk /dev/vdb did not mount"
fi
echo o >/proc/sysrq-trigger
sleep 60
