#!/bin/sh
# Submit a job to Sluice with kcat (docs/clients.md, "kcat"). Needs kcat and the sluice CLI
# (for `sluice sluid new` and `sluice encode`). Settings, as for the CLI:
#   KAFKA_BOOTSTRAP, SLUICE_TOPIC_PREFIX (default sluice), SLUICE_JWT (from `sluice token`),
#   SLUICE_CLUSTER_ID (the SLUIDs' cluster id), JOB (a SLUID to use; default: a new one),
#   KCAT_PARTITIONER (default murmur2_random; empty: kcat's own default, which Sluice refuses).
# Usage: submit.sh WORKDIR MESSAGE   (the job runs `echo MESSAGE` in WORKDIR)
set -eu
[ $# -eq 2 ] || { echo "usage: submit.sh WORKDIR MESSAGE" >&2; exit 2; }
workdir=$1 message=$2
job=${JOB:-$(sluice sluid new)}
partitioner=${KCAT_PARTITIONER-murmur2_random}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# $1 as the inside of a JSON string: backslashes, quotes, tabs, carriage returns and newlines
# escaped (a message with a quote was not JSON, and sluice encode refused it).
json_string() {
  printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e "s/$(printf '\t')/\\\\t/g" \
    -e "s/$(printf '\r')/\\\\r/g" | awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }'
}

# The record as JSON; every field left out gets its schema default (ntasks 1, cpus_per_task 1 ...).
cat > "$tmp/job.json" <<JSON
{"job_sluid": "$(json_string "$job")",
 "spec": {"user": "", "name": "kcat", "command": ["echo", "$(json_string "$message")"],
          "workdir": "$(json_string "$workdir")"}}
JSON
sluice encode SubmitJob "$tmp/job.json" -o "$tmp/job.avro"

# The key is the job SLUID, and it must land where Java's murmur2 partitioner puts it:
# librdkafka's default (consistent_random) hashes with CRC32, so name murmur2_random.
set -- -P -b "${KAFKA_BOOTSTRAP:-127.0.0.1:9092}" -t "${SLUICE_TOPIC_PREFIX:-sluice}.requests" -k "$job" \
  -H "sluice-request-id=$(sluice sluid new)"
[ -z "$partitioner" ] || set -- "$@" -X "topic.partitioner=$partitioner"
[ -z "${SLUICE_JWT:-}" ] || set -- "$@" -H "sluice-auth=jwt $SLUICE_JWT"
kcat "$@" "$tmp/job.avro"
echo "submitted $job"
