"""The guest's PID 1 (`strata-agent`) and the files the host gives it.

The agent is a POSIX shell script baked into the guest image (its text is
part of the image key). The kernel starts it as `init=` after the Debian
initramfs mounted the read-only root. It:

1. mounts the out dir and the sync dir shared by the host (virtiofs or 9p,
   `strata.share=` on the kernel command line), and reads its instructions
   from `vm-agent.env` in the out dir (written by `env_file`);
2. sets the guest clock from the host's, NTP-style over the sync share
   (request file, host answers with its time; a TCG guest's clock starts from
   a 1 s RTC and drifts), then measures what is left of the offset;
3. prepares the data: the virtio disk found by its serial number as a block
   device (`/dev/strata-dev`) or with `guest_filesystem` made and mounted on
   `/data`, or the host directory shared on `/data`;
4. starts the guest-side collector (the guest's own /proc/diskstats and CPU
   lines of /proc/stat each second, with shell builtins only: under TCG each
   fork costs milliseconds of the guest's CPU), says `ready-<i>`, waits for
   `go` (the same barrier as the container wrapper), records `start`, runs
   the command (`vm-command.sh`), records `end` and `rc`;
5. copies out its samples, mounts and kernel log, unmounts and powers off.

On any failure it writes `agent-error` into the out dir and powers off, so
the host sees a VM that ended without `rc` and reports the reason.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from strata.stack.filesystems.mkfs import BTRFS, EXT4, XFS
from strata.stack.paths import OUT_DIR, SYNC_DIR

MKFS = {f.name: f.argv for f in (EXT4, XFS, BTRFS)}  # the guest makes its file system as the host would

AGENT_PATH = "/usr/local/sbin/strata-agent"
DATA_DIR = "/data"
DEVICE_IN_GUEST = "/dev/strata-dev"
DATA_SERIAL = "strata-data"  # the data disk's virtio serial number
TAGS = {"out": "strata-out", "sync": "strata-sync", "data": "strata-data"}  # share mount tags
ENV_FILE = "vm-agent.env"
COMMAND_FILE = "vm-command.sh"
PROBE_MARK = "strata-agent: booted"
MAIN_MARK = "# ---- main"  # the agent above this line only defines functions (unit tests run them)
# Files the agent leaves in the out dir (besides the command's own).
OUTPUT_FILES = (
    "stdout",
    "stderr",
    "start",
    "end",
    "rc",
    "clock.txt",
    "guest-stats.txt",
    "guest-mounts.txt",
    "guest-dmesg.txt",
    "guest-data-disk",
    "guest-stats.json",
    "agent-error",
)

AGENT = r"""#!/bin/sh
# strata-agent: PID 1 of a strata guest (see strata/stack/vm/agent.py).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C
OUT=@OUT@ SYNC=@SYNC@ DATA=@DATA@

say() { echo "strata-agent: $*"; }
off() { sync; echo o > /proc/sysrq-trigger; sleep 60; }
die() { say "FAILED: $*"; [ -n "$OUT_MOUNTED" ] && echo "$*" > $OUT/agent-error; off; }
arg() { for w in $(cat /proc/cmdline); do case "$w" in "strata.$1="*) echo "${w#*=}"; return;; esac; done; }
now() { date +%s.%N; }

mount_share() {  # tag dir
  case "$SHARE" in
    virtiofs) mount -t virtiofs "$1" "$2" ;;
    9p) mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=524288 "$1" "$2" ;;
    *) return 1 ;;
  esac
}

base_mounts() {  # the initramfs moved /proc, /sys and /dev here; mount them if it did not
  [ -e /proc/self ] || mount -t proc proc /proc
  [ -d /sys/block ] || mount -t sysfs sysfs /sys
  grep -q " /dev devtmpfs " /proc/mounts || mount -t devtmpfs devtmpfs /dev
  mount -t tmpfs -o mode=1777 tmpfs /tmp; mount -t tmpfs -o mode=755 tmpfs /run
  case "$SHARE" in
    virtiofs) modprobe virtiofs ;;
    9p) modprobe 9pnet_virtio; modprobe 9p ;;
  esac
}

probe() {  # the accelerator probe: boot, say so, try each share offered, power off
  say "booted"
  mkdir -p /run/p1 /run/p2
  modprobe virtiofs && mount -t virtiofs @TAG_OUT@ /run/p1 \
    && { uname -r > /run/p1/probe-virtiofs; umount /run/p1; say "virtiofs ok"; }
  modprobe 9pnet_virtio && modprobe 9p && mount -t 9p -o trans=virtio,version=9p2000.L,cache=none @TAG_SYNC@ /run/p2 \
    && { uname -r > /run/p2/probe-9p; umount /run/p2; say "9p ok"; }
  off
}

clock_round() {  # -> "guest_before guest_after host" over the sync share (builtins where timing matters)
  rm -f $SYNC/clock-$I
  a=$(now); echo "$a" > $SYNC/clock-req-$I
  while [ ! -e $SYNC/clock-$I ]; do sleep 0.005; done
  b=$(now); read -r h < $SYNC/clock-$I
  echo "$a $b $h"
}

sync_clock() {  # set the offset inside one `date` process ("now +X seconds"), then measure what is left
  set -- $(clock_round)
  off_s=$(awk -v a="$1" -v b="$2" -v h="$3" 'BEGIN { printf "%+.6f", h + (b - a) / 2 - b }')
  date -s "now $off_s seconds" > /dev/null || return 1
  set -- $(clock_round)
  awk -v a="$1" -v b="$2" -v h="$3" -v o="$off_s" 'BEGIN {
    printf "offset_set_s=%s\nrtt_s=%.6f\nresidual_s=%.6f\n", o, b - a, h + (b - a) / 2 - b }' > $OUT/clock.txt
  read -r up _ < /proc/uptime; echo "uptime_at_wall=$up $(now)" >> $OUT/clock.txt
}

find_disk() {  # serial -> /dev/vdX
  for try in 1 2 3 4 5 6 7 8 9 10; do
    for d in /sys/block/vd*; do
      [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && { echo /dev/${d##*/}; return 0; }
    done
    sleep 0.5
  done
  return 1
}

prepare_data() {
  case "$STRATA_PATH" in
    bind) mount_share @TAG_DATA@ $DATA || die "cannot mount the bind share ($SHARE)" ;;
    device|image)
      disk=$(find_disk @SERIAL@) || die "no virtio disk with serial @SERIAL@"
      echo "${disk#/dev/}" > $OUT/guest-data-disk
      if [ "$STRATA_GUEST_FS" = none ]; then ln -sf "$disk" @DEVICE@
      else
        $STRATA_MKFS "$disk" > /run/mkfs.log 2>&1 || die "mkfs on $disk: $(tail -c 500 /run/mkfs.log)"
        mount -t "$STRATA_GUEST_FS" ${STRATA_MOUNT_OPTIONS:+-o "$STRATA_MOUNT_OPTIONS"} "$disk" $DATA \
          || die "mount $STRATA_GUEST_FS on $disk failed"
        DATA_MOUNTED=1
      fi ;;
    *) die "unknown path $STRATA_PATH" ;;
  esac
}

sample() {  # one sample of the guest's own counters, shell builtins only (no fork)
  read -r up _ < /proc/uptime; echo "== $up"
  while read -r l; do echo "$l"; done < /proc/diskstats
  while read -r l; do case "$l" in cpu*) echo "$l" ;; *) break ;; esac; done < /proc/stat
}
collector() { while :; do sample; sleep 1; done; }

finish() {
  kill $COLLECTOR 2>/dev/null; wait $COLLECTOR 2>/dev/null; sample >> /run/guest-stats.txt
  cp /run/guest-stats.txt $OUT/guest-stats.txt
  cat /proc/mounts > $OUT/guest-mounts.txt; dmesg > $OUT/guest-dmesg.txt 2>&1
  [ -n "$DATA_MOUNTED" ] && umount $DATA
  [ "$STRATA_PATH" = bind ] && umount $DATA
  echo "$1" > $OUT/rc.tmp && mv $OUT/rc.tmp $OUT/rc
  sync; umount $SYNC; umount $OUT
  say "done rc=$1"; off
}

run_command() {  # the barrier, then the command, timed (as the container wrapper does)
  while [ ! -e $SYNC/go ]; do sleep 0.005; done
  now > $OUT/start
  (cd $OUT && exec sh $OUT/@COMMAND@) > $OUT/stdout 2> $OUT/stderr
  rc=$?
  now > $OUT/end
  return $rc
}

# ---- main (everything above only defines functions)
SHARE=$(arg share)
base_mounts
[ "$(arg mode)" = probe ] && probe
I=$(arg index)
mount_share @TAG_OUT@ $OUT || die "cannot mount the out dir ($SHARE)"
OUT_MOUNTED=1
mount_share @TAG_SYNC@ $SYNC || die "cannot mount the sync dir ($SHARE)"
[ -r $OUT/@ENV@ ] || die "no $OUT/@ENV@"
. $OUT/@ENV@
sync_clock || die "cannot set the clock"
prepare_data
collector > /run/guest-stats.txt 2>&1 &
COLLECTOR=$!
now > $SYNC/ready-$I
say "ready"
run_command
finish $?
"""


def agent_script() -> str:
    text = AGENT
    for key, value in {
        "@OUT@": OUT_DIR,
        "@SYNC@": SYNC_DIR,
        "@DATA@": DATA_DIR,
        "@DEVICE@": DEVICE_IN_GUEST,
        "@SERIAL@": DATA_SERIAL,
        "@ENV@": ENV_FILE,
        "@COMMAND@": COMMAND_FILE,
        "@TAG_OUT@": TAGS["out"],
        "@TAG_SYNC@": TAGS["sync"],
        "@TAG_DATA@": TAGS["data"],
    }.items():
        text = text.replace(key, value)
    return text


def env_file(path_name: str, guest_fs: str, mount_options: list[str]) -> str:
    """What one instance's agent is told (sourced by the agent: every value shell-quoted)."""
    mkfs = shlex.join(MKFS[guest_fs]) if guest_fs != "none" else ""
    values = {
        "STRATA_PATH": path_name,
        "STRATA_GUEST_FS": guest_fs,
        "STRATA_MKFS": mkfs,
        "STRATA_MOUNT_OPTIONS": ",".join(mount_options),
    }
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())


def command_file(argv: list[str]) -> str:
    return f"exec {shlex.join(argv)}\n"


def write_instance_files(
    out_dir: Path, argv: list[str], path_name: str, guest_fs: str, mount_options: list[str]
) -> None:
    """The agent's instructions, and no stale output of an earlier attempt."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in OUTPUT_FILES:
        (out_dir / stale).unlink(missing_ok=True)
    (out_dir / ENV_FILE).write_text(env_file(path_name, guest_fs, mount_options))
    (out_dir / COMMAND_FILE).write_text(command_file(argv))
