#!/bin/bash
# What a broker outage costs a whole system: `sluice up` (8 node daemons) from TREE against the
# local broker of DIR:PORT (infra.kafka), 30 s idle, then the broker killed -9 for 30 s; prints
# the CPU ticks (1/100 s) of the worker, the views and the 8 daemons and the lines they logged
# in each window, with the load average; then restarts the broker (same DIR) and times the
# first `sluice submit`. Run each tree in turn (A/B), e.g.:
#   benchmarks/broker_outage_cost.sh /tmp/base chaos-ab1 /tmp/chaos-kafka 19800 19805
#   benchmarks/broker_outage_cost.sh "$PWD" chaos-ab2 /tmp/chaos-kafka 19800 19805
set -u
TREE=$1; PFX=$2; DIR=$3; PORT=$4; API=$5
export SLUICE_HOME=/tmp/$PFX-home SLUICE_TOPIC_PREFIX=$PFX KAFKA_BOOTSTRAP=127.0.0.1:$PORT \
  SLUICE_API=127.0.0.1:$API SLUICE_WORKER_METRICS=127.0.0.1:$((API + 1)) PYTHONPATH=$TREE \
  SLUICE_ALLOW_ROOT_JOBS=1
PY=/work/main/.venv/bin/python; [ -x "$PY" ] || PY=python3
S="$PY -m cli.main"
rm -rf "$SLUICE_HOME"; cd /tmp || exit 1
timeout 300 $S up --nodes 8 --cpus 2 --mem 2048 > /dev/null 2>&1 || { echo "sluice up failed"; exit 1; }
sleep 10
pids() { cat "$SLUICE_HOME"/run/"$1"*.pid; }
ticks() { local t=0; for p in $(pids "$1"); do t=$((t + $(awk '{print $14+$15}' /proc/"$p"/stat))); done; echo $t; }
lines() { cat "$SLUICE_HOME"/logs/"$1"*.log | wc -l; }
window() {
  local w0 v0 n0 lw ln; w0=$(ticks worker); v0=$(ticks projections); n0=$(ticks node-)
  lw=$(lines worker); ln=$(lines node-); sleep 30
  echo "$1: worker $(( $(ticks worker)-w0 )) ticks, views $(( $(ticks projections)-v0 )), 8 daemons $(( $(ticks node-)-n0 )); log lines worker $(( $(lines worker)-lw )), daemons $(( $(lines node-)-ln )); load $(cut -d' ' -f1 /proc/loadavg)"
}
window idle
broker=$(pgrep -f "java.*$DIR" | head -1); kill -9 "$broker"; sleep 1
window outage
(cd "$TREE" && setsid env PYTHONPATH=. "$PY" -m infra.kafka start --dir "$DIR" --port "$PORT" >> "$DIR.log" 2>&1 &)
t0=$(date +%s.%N)
until (echo > /dev/tcp/127.0.0.1/"$PORT") 2>/dev/null; do sleep 0.2; done; t1=$(date +%s.%N)
out=$(timeout 180 $S submit --wrap true 2>&1); t2=$(date +%s.%N)
echo "broker listening after $(echo "$t1-$t0" | bc) s; first submit after it answered in $(echo "$t2-$t1" | bc) s: $out"
$S down > /dev/null 2>&1
