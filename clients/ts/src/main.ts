#!/usr/bin/env node
// Submits a job, submits a held job and cancels it, then follows the job-start notifications
// and prints the one of the first job; a refusal of either job in the ledger (JobRejected,
// RequestDenied), or a dead letter of either request the views found by its SLUID (GET
// /v1/decisions: the intake could not read it, so no fact will come), ends it with the reason.
// Settings come from the environment, as for the sluice CLI: KAFKA_BOOTSTRAP,
// SLUICE_TOPIC_PREFIX, SLUICE_CLUSTER_ID, SLUICE_JWT (from `sluice token`), SLUICE_API.
//
// Usage: node dist/src/main.js [--workdir DIR] [--timeout SECONDS]
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import type { Consumer } from 'kafkajs';
import { Records, schemaDir } from './records';
import type {
  CancelJob, JobRejected, JobStartNotification, RequestDenied, SubmitJob,
} from './records.gen';
import { everyPartition, missingPartitions, Positions, privateGroupId } from './group';
import type { TopicPartitionOffset } from './group';
import { Generator } from './sluid';

function usage(problem: string): never {
  console.error(`sluice-client: ${problem}\nusage: sluice-client [--workdir DIR] [--timeout SECONDS]`);
  process.exit(2);
}

function parseArgs(argv: string[]): { workdir: string; timeoutS: number } {
  let workdir = process.cwd();
  let timeoutS = 120;
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1];
    if (argv[i] === '--workdir' && value) workdir = path.resolve(argv[++i]);
    else if (argv[i] === '--timeout' && value && /^[1-9]\d*$/.test(value)) timeoutS = Number(argv[++i]);
    else usage(`bad argument ${argv[i]}`);
  }
  return { workdir, timeoutS };
}

async function main(): Promise<number> {
  const { workdir, timeoutS } = parseArgs(process.argv.slice(2));
  const prefix = process.env.SLUICE_TOPIC_PREFIX ?? 'sluice';
  const token = process.env.SLUICE_JWT ?? '';
  const ids = new Generator(Number(process.env.SLUICE_CLUSTER_ID ?? '2'));
  const records = new Records(schemaDir());
  const kafka = new Kafka({
    clientId: 'sluice-ts-client',
    brokers: (process.env.KAFKA_BOOTSTRAP ?? '127.0.0.1:9092').split(','),
    logLevel: logLevel.WARN,
  });

  // Where the job-start and ledger topics end now: the notification of our job, or its
  // refusal, can only come later.
  const topics = [`${prefix}.job-starts`, `${prefix}.events`];
  const admin = kafka.admin();
  await admin.connect();
  const ends = await Promise.all(topics.map(async (topic) =>
    (await admin.fetchTopicOffsets(topic)).map(({ partition, offset }) => ({ topic, partition, offset }))));
  await admin.disconnect();

  // kafkajs 2's DefaultPartitioner is Java's murmur2 (the LegacyPartitioner is not).
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const send = async (key: string, name: string, record: object): Promise<void> => {
    const headers: Record<string, string> = { 'sluice-request-id': ids.next() };
    if (token) headers['sluice-auth'] = `jwt ${token}`;
    await producer.send({
      topic: `${prefix}.requests`,
      acks: -1,
      messages: [{ key, value: records.encode(name, record), headers }],
    });
  };
  const job = ids.next();
  const held = ids.next();
  // Fields left out (ntasks, cpus_per_task, nodes_min ...) get their schema defaults.
  // A nonce per submission (kept if it is sent again) tells a redelivery from another client's
  // job that drew the same SLUID (docs/wire-format.md): 48 random bits, exact in a JS number.
  const nonce = (): number => randomBytes(6).readUIntBE(0, 6) || 1;
  const submit: SubmitJob = {
    job_sluid: job,
    spec: { user: '', name: 'ts-client', command: ['/bin/sh', '-c', 'echo hello from ts'], workdir },
    nonce: nonce(),
  };
  const heldSubmit: SubmitJob = {
    job_sluid: held,
    spec: { user: '', name: 'ts-client-cancelled', command: ['sleep', '600'], workdir, hold: true },
    nonce: nonce(),
  };
  const cancel: CancelJob = { job_sluid: held };
  await send(job, 'SubmitJob', submit);
  console.log(`submitted ${job}`);
  await send(held, 'SubmitJob', heldSubmit);
  await send(held, 'CancelJob', cancel);
  console.log(`cancel requested ${held}`);
  await producer.disconnect();
  return (await follow(kafka, records, topics, ends.flat(), job, held, timeoutS)) ? 0 : 1;
}

/** A refusal in the ledger (`JobRejected`, `RequestDenied`), as a line; else null. */
function refusal(records: Records, value: Buffer): string | null {
  try {
    const r = records.decode<JobRejected>('JobRejected', value);
    return `refused ${r.job_sluid} JobRejected ${r.reason}: ${r.detail}`;
  } catch {
    // not a JobRejected
  }
  try {
    const d = records.decode<RequestDenied>('RequestDenied', value);
    return `refused ${d.subject_sluid} RequestDenied ${d.reason}: ${d.detail} (a ${d.request})`;
  } catch {
    return null; // JobQueued, JobStarted ... of our jobs
  }
}

interface DeadLetterAnswer { reason?: string; meaning?: string; detail?: string }

/** Long-polls GET /v1/decisions (the views, SLUICE_API) for `sluids`, without a nonce, until
 * each is decided: a dead_letter answer (the intake could not read the request: it never
 * reached the ledger) is its refusal line; null when none came or the views did not answer
 * (which it says: the ledger is still read). */
async function watchDeadLetters(sluids: string[], signal: AbortSignal): Promise<string | null> {
  let api = process.env.SLUICE_API ?? '127.0.0.1:6817';
  if (!api.includes('://')) api = `http://${api}`;
  const token = process.env.SLUICE_JWT ?? '';
  const pending = new Set(sluids);
  while (pending.size > 0 && !signal.aborted) {
    const query = new URLSearchParams({ ids: [...pending].join(','), wait: '30' });
    let decisions: Record<string, { dead_letter?: DeadLetterAnswer } | null>;
    try {
      const response = await fetch(`${api}/v1/decisions?${query}`, {
        signal, headers: token ? { Authorization: `Bearer ${token}` } : {},
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      decisions = ((await response.json()) as { decisions?: typeof decisions }).decisions ?? {};
    } catch (err) {
      if (!signal.aborted) {
        console.error(`sluice-client: the views at ${api} did not answer (${(err as Error).message}): `
          + 'dead-lettered requests are not seen');
      }
      return null;
    }
    for (const sluid of sluids) {
      const decision = decisions[sluid];
      if (!decision) continue; // not decided yet
      pending.delete(sluid);
      const letter = decision.dead_letter;
      if (letter) {
        return `refused ${sluid} DeadLetter ${letter.reason ?? ''}: `
          + `${letter.detail || letter.meaning || ''} (dead-lettered by the intake)`;
      }
    }
  }
  return null;
}

/** Reads job-start notifications from the offsets `ends` until the one of `job`, and the ledger
 * for a refusal of `job` or `held` (the ledger is keyed by the subject's SLUID).
 *
 * kafkajs has no consumer without a group (the Go and Java clients assign partitions and have
 * none): this one's group, `sluice-ts-client-<job>-<random>` (./group.ts: kept its own against
 * other users of the broker), commits nothing and is deleted at the end, so no run leaves a
 * group on the broker. */
async function follow(kafka: Kafka, records: Records, topics: string[],
  ends: { topic: string; partition: number; offset: string }[], job: string, held: string,
  timeoutS: number,
): Promise<boolean> {
  const groupId = privateGroupId(job);
  const consumer = kafka.consumer({
    groupId, readUncommitted: false, partitionAssigners: [everyPartition],
  });
  try {
    await consumer.connect();
    return await followWith(consumer, groupId, records, topics, ends, job, held, timeoutS);
  } finally {
    await consumer.disconnect();
    await deleteGroup(kafka, groupId);
  }
}

/** Deletes the consumer group of this run (a warning, not a failure, when it cannot). */
async function deleteGroup(kafka: Kafka, groupId: string): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.deleteGroups([groupId]);
  } catch (err) {
    console.error(`sluice-client: consumer group ${groupId} left on the broker: ${(err as Error).message}`);
  } finally {
    await admin.disconnect();
  }
}

async function followWith(consumer: Consumer, groupId: string, records: Records,
  topics: string[], ends: TopicPartitionOffset[], job: string, held: string, timeoutS: number,
): Promise<boolean> {
  await consumer.subscribe({ topics });
  let resolve: (found: boolean) => void = () => undefined;
  const found = new Promise<boolean>((r) => { resolve = r; });
  // Positioned by us on every join (the first, and any rebalance another joiner causes).
  const positions = new Positions(ends);
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const lost = missingPartitions(ends, payload.memberAssignment);
    if (lost.length > 0) {
      console.error(`sluice-client: consumer group ${groupId} gave this client only part of `
        + `the topics (another client leads it), not ${lost.join(', ')}`);
      resolve(false);
      return;
    }
    for (const position of positions.all()) consumer.seek(position);
  });
  const timer = setTimeout(() => {
    console.error(`no job-start notification for ${job} within ${timeoutS} s`);
    resolve(false);
  }, timeoutS * 1000);
  await consumer.run({
    autoCommit: false, // positioned by seek each run: nothing to keep
    eachMessage: async ({ topic, partition, message }) => {
      positions.read(topic, partition, message.offset);
      if (!topic.endsWith('.job-starts')) {
        const key = message.key?.toString();
        const refused = key === job || key === held ? refusal(records, message.value ?? Buffer.alloc(0)) : null;
        if (refused) {
          console.error(`sluice-client: ${refused}`);
          resolve(false);
        }
        return;
      }
      let started: JobStartNotification;
      try {
        started = records.decode<JobStartNotification>('JobStartNotification', message.value ?? Buffer.alloc(0));
      } catch (err) {
        console.error(`skipped an unreadable record at offset ${message.offset}: ${(err as Error).message}`);
        return;
      }
      if (started.job_sluid === job) {
        console.log(`job-start job_sluid=${started.job_sluid} job_id=${started.job_id} `
          + `user=${started.user} nodes=${started.nodes.join(',')}`);
        resolve(true);
      }
    },
  });
  // The views answer at once when the intake dead-lettered either request; the ledger has the
  // rest. The first refusal ends the wait.
  const watching = new AbortController();
  void watchDeadLetters([job, held], watching.signal).then((refused) => {
    if (refused) {
      console.error(`sluice-client: ${refused}`);
      resolve(false);
    }
  });
  const result = await found;
  watching.abort();
  clearTimeout(timer);
  return result;
}

main().then((code) => process.exit(code), (err: Error) => {
  console.error(`sluice-client: ${err.message}`);
  process.exit(1);
});
