#!/bin/sh
# Captures the host tests' outputs that tests/test_hosttests.py reads (sysbench 1.0.20, Debian), from this directory.
set -e
sysbench cpu --threads=2 --time=3 --report-interval=1 --percentile=95 --histogram=on run > cpu.txt 2>&1
sysbench memory --threads=1 --time=3 --report-interval=1 --percentile=95 run > memory.txt 2>&1
sysbench threads --threads=2 --time=3 --report-interval=1 run > threads.txt 2>&1
sysbench mutex --threads=2 run > mutex.txt 2>&1
dir=$(mktemp -d)
here=$(pwd)
(cd "$dir" && sysbench fileio --file-num=4 --file-total-size=32M prepare > /dev/null \
  && sysbench fileio --file-num=4 --file-total-size=32M --file-test-mode=rndrw --time=3 --report-interval=1 run \
     > "$here/fileio.txt" 2>&1 \
  && sysbench fileio --file-num=4 --file-total-size=32M cleanup > /dev/null)
rm -rf "$dir"
