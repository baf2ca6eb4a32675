// The client's consumer group is its own (./src/group.ts): a name no one derives from the job,
// every partition to every member, positions kept across rebalances.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AssignerProtocol } from 'kafkajs';
import type { Cluster, Logger } from 'kafkajs';
import {
  EVERY_PARTITION, everyPartition, missingPartitions, Positions, privateGroupId,
} from '../src/group';

const JOB = 's009M99G3V0854';

test('the group name is the job plus 128 random bits, new each run', () => {
  const a = privateGroupId(JOB);
  const b = privateGroupId(JOB);
  assert.match(a, new RegExp(`^sluice-ts-client-${JOB}-[0-9a-f]{32}$`));
  assert.notEqual(a, b);
  assert.notEqual(a, `sluice-ts-client-${JOB}`); // what another user could join: the ledger names the job
});

test('every member gets every partition, whoever else joined', async () => {
  const partitions: Record<string, number[]> = { 'p.job-starts': [2, 0, 1], 'p.events': [1, 0] };
  const cluster = {
    findTopicPartitionMetadata: (topic: string) => partitions[topic].map((partitionId) => ({ partitionId })),
  } as unknown as Cluster;
  const assigner = everyPartition({ cluster, groupId: 'g', logger: {} as Logger });
  assert.equal(assigner.name, EVERY_PARTITION);
  const metadata = assigner.protocol({ topics: ['p.job-starts', 'p.events'] }).metadata;
  const members = ['ours', 'stranger-1', 'stranger-2'].map((memberId) => ({ memberId, memberMetadata: metadata }));
  const assigned = await assigner.assign({ members, topics: ['p.job-starts', 'p.events'] });
  assert.deepEqual(assigned.map((a) => a.memberId), ['ours', 'stranger-1', 'stranger-2']);
  for (const { memberAssignment } of assigned) {
    assert.deepEqual(AssignerProtocol.MemberAssignment.decode(memberAssignment)?.assignment,
      { 'p.events': [0, 1], 'p.job-starts': [0, 1, 2] });
  }
});

test('a partition missing from an assignment is named', () => {
  const wanted = [{ topic: 't', partition: 0, offset: '5' }, { topic: 't', partition: 1, offset: '0' }];
  assert.deepEqual(missingPartitions(wanted, { t: [0, 1] }), []);
  assert.deepEqual(missingPartitions(wanted, { t: [1] }), ['t[0]']);
  assert.deepEqual(missingPartitions(wanted, {}), ['t[0]', 't[1]']);
});

test('positions start at the ends and move past each record read, never back', () => {
  const positions = new Positions([{ topic: 't', partition: 0, offset: '5' }, { topic: 'u', partition: 3, offset: '0' }]);
  positions.read('t', 0, '7');
  positions.read('t', 0, '6'); // an older record (a re-fetch after a seek) does not move it back
  positions.read('x', 9, '1'); // not ours: ignored
  assert.deepEqual(positions.all(), [{ topic: 't', partition: 0, offset: '8' }, { topic: 'u', partition: 3, offset: '0' }]);
});
