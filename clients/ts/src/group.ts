// The consumer group of one run of the client, kept its own against other users of the broker.
//
// kafkajs has no consumer without a group (the Go and Java clients assign partitions and have
// none), and on `sluice up`'s users' listener every client is the same Kafka user (ANONYMOUS),
// allowed to join any `sluice-ts-client-*` group. Seen (red team, 8 Dec 2026): another local
// user following the ledger read each new job SLUID, joined `sluice-ts-client-<that SLUID>` at
// once and, as the group's leader, gave our client no partition: it waited out its timeout
// ("no job-start notification") while the job ran. Hence:
//
// - the group's name ends with 128 random bits, so it cannot be derived from the job;
// - every member gets every partition (`everyPartition`): a late joiner takes nothing away;
// - a member is positioned by us on every (re)join (`Positions`), not by the group's committed
//   offsets (none: nothing is committed), so a rebalance forced by a joiner loses no record;
// - an assignment that misses a partition (the group was someone else's first) is reported,
//   not waited out (`missingPartitions`).
import { randomBytes } from 'node:crypto';
import { AssignerProtocol } from 'kafkajs';
import type { Assignment, PartitionAssigner } from 'kafkajs';

/** The protocol name of `everyPartition` (members of a classic group must share one). */
export const EVERY_PARTITION = 'SluiceEveryPartition';

/** This run's group: `sluice-ts-client-<job>-<32 random hex digits>`. */
export function privateGroupId(job: string): string {
  return `sluice-ts-client-${job}-${randomBytes(16).toString('hex')}`;
}

/** A partition assigner giving every member every partition of the subscribed topics. */
export const everyPartition: PartitionAssigner = ({ cluster }) => ({
  name: EVERY_PARTITION,
  version: 0,
  async assign({ members, topics }) {
    const assignment: Assignment = {};
    for (const topic of [...topics].sort()) {
      assignment[topic] = cluster.findTopicPartitionMetadata(topic)
        .map(({ partitionId }) => partitionId).sort((a, b) => a - b);
    }
    const encoded = AssignerProtocol.MemberAssignment.encode({
      version: 0, assignment, userData: Buffer.alloc(0),
    });
    return members.map(({ memberId }) => ({ memberId, memberAssignment: encoded }));
  },
  protocol({ topics }) {
    return {
      name: EVERY_PARTITION,
      metadata: AssignerProtocol.MemberMetadata.encode({
        version: 0, topics, userData: Buffer.alloc(0),
      }),
    };
  },
});

export interface TopicPartitionOffset { topic: string; partition: number; offset: string }

/** The partitions of `wanted` that `assigned` lacks, as `topic[partition]`. */
export function missingPartitions(wanted: readonly TopicPartitionOffset[],
  assigned: Assignment): string[] {
  return wanted.filter(({ topic, partition }) => !(assigned[topic] ?? []).includes(partition))
    .map(({ topic, partition }) => `${topic}[${partition}]`);
}

/** The next offset to read of each partition: where it ended before the run, then one past
 * the last record read. */
export class Positions {
  private readonly next = new Map<string, TopicPartitionOffset>();

  constructor(ends: readonly TopicPartitionOffset[]) {
    for (const end of ends) this.next.set(`${end.topic}/${end.partition}`, { ...end });
  }

  /** A record at `offset` was read. */
  read(topic: string, partition: number, offset: string): void {
    const position = this.next.get(`${topic}/${partition}`);
    const after = (BigInt(offset) + 1n).toString();
    if (position && BigInt(after) > BigInt(position.offset)) position.offset = after;
  }

  /** Every partition's next offset, for `consumer.seek` after each join. */
  all(): TopicPartitionOffset[] {
    return [...this.next.values()].map((p) => ({ ...p }));
  }
}
