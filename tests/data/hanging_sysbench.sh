#!/bin/sh
# A stand-in for sysbench for the time-out tests (tests/test_faults.py): it hangs in the phase named
# by FAKE_SYSBENCH_HANG (prepare, run or cleanup) and hands every other call, --version included,
# to the real sysbench. While hanging it ignores SIGTERM and keeps a child in its process group,
# so only the runner's SIGKILL to the whole group ends it. It runs in sysbench's sandbox, which writes
# nowhere the test reads: its child `sleep 3600 $FAKE_SYSBENCH_MARK` (a fraction of a second more) is
# what the test finds with pgrep, hanging and then gone. (The worker passes both variables into the
# sandbox through BENCHAPP_SANDBOX_PASS_ENV.)
for last; do :; done
if [ -n "$FAKE_SYSBENCH_HANG" ] && [ "$last" = "$FAKE_SYSBENCH_HANG" ]; then
    trap '' TERM
    echo "sysbench 1.0.20 (fake: hanging in $last)"
    sleep 3600 "${FAKE_SYSBENCH_MARK:-0}" &
    wait
fi
exec sysbench "$@"
