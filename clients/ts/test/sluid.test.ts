// The SLUID code against the shared vectors (schemas/sluid-vectors.json), and the records
// against the schemas: defaults filled, the fingerprint header of the Avro specification.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { crc64Avro, Records, schemaDir } from '../src/records';
import { compose, format, Generator, mint, parse } from '../src/sluid';

const vectors = JSON.parse(fs.readFileSync(path.join(schemaDir(), 'sluid-vectors.json'), 'utf8'));

test('compose and format give every vector', () => {
  assert.ok(vectors.compose.length > 0);
  for (const c of vectors.compose) {
    const value = compose(c.cluster_id, c.unix_ms, c.sequence);
    assert.equal(value.toString(), c.value);
    assert.equal(format(value), c.text);
  }
});

test('every accepted spelling parses and every invalid text is refused', () => {
  for (const c of vectors.parse) {
    assert.equal(parse(c.text).toString(), c.value, c.text);
    assert.equal(format(parse(c.text)), c.canonical);
  }
  for (const text of vectors.invalid) assert.throws(() => parse(text), SyntaxError, text);
});

test('mint gives the vector and the next clock', () => {
  for (const c of vectors.mint) {
    const [value, next] = mint({ clusterId: c.clock.cluster_id, lastMs: c.clock.last_ms,
      sequence: c.clock.sequence }, c.now_ms, c.first_sequence);
    assert.equal(format(value), c.text);
    assert.deepEqual([next.lastMs, next.sequence], [c.next.last_ms, c.next.sequence]);
  }
});

test('a generator mints strictly increasing ids', () => {
  const generator = new Generator(2);
  let previous = '';
  for (let i = 0; i < 3000; i++) {
    const next = generator.next();
    assert.ok(next > previous, `${next} after ${previous}`);
    previous = next;
  }
  assert.throws(() => new Generator(1), RangeError);
});

test('the CRC-64-AVRO of the specification', () => {
  assert.equal(crc64Avro('"null"').toString('hex'), '8a8f25cce724dd63');
  assert.equal(crc64Avro('"int"').toString('hex'), '8f5c393f1ad57572');
});

test('a JobSpec left with only its required fields gets the schema defaults', () => {
  const records = new Records(schemaDir());
  const value = records.encode('SubmitJob', { job_sluid: 's14DK8YBDF0000', spec: { user: 'alice' } });
  const decoded = records.decode<{ spec: Record<string, unknown> }>('SubmitJob', value);
  assert.equal(decoded.spec.nodes_min, 1);
  assert.equal(decoded.spec.ntasks, 1);
  assert.equal(decoded.spec.cpus_per_task, 1);
  assert.throws(() => records.decode('CancelJob', value), /not a current CancelJob/);
});
