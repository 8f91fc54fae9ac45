#!/bin/sh
# A stand-in for sysbench for the time-out tests (tests/test_faults.py): it hangs in the phase named
# by FAKE_SYSBENCH_HANG (prepare, run or cleanup) and hands every other call, --version included,
# to the real sysbench. While hanging it ignores SIGTERM and keeps a child in its process group,
# so only the runner's SIGKILL to the whole group ends it; it records its own and its child's pid
# in FAKE_SYSBENCH_PIDS so that the test can check that nothing survived.
for last; do :; done
if [ -n "$FAKE_SYSBENCH_HANG" ] && [ "$last" = "$FAKE_SYSBENCH_HANG" ]; then
    trap '' TERM
    echo "sysbench 1.0.20 (fake: hanging in $last)"
    sleep 3600 &
    [ -n "$FAKE_SYSBENCH_PIDS" ] && echo "$$ $!" >> "$FAKE_SYSBENCH_PIDS"
    wait
fi
exec sysbench "$@"
