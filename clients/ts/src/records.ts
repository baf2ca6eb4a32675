// Sluice records with avsc: types parsed at run time from the .avsc files (named types first,
// in one registry), and Avro single-object encoding: C3 01, the CRC-64-AVRO fingerprint of the
// schema's Parsing Canonical Form (little-endian), the Avro body.
import fs from 'node:fs';
import path from 'node:path';
import avro from 'avsc';

const NAMED_TYPES = ['Segment', 'JobSpec'];

/** CRC-64-AVRO (the Rabin fingerprint of the Avro specification), 8 bytes little-endian. */
export function crc64Avro(text: string): Buffer {
  const EMPTY = 0xc15d213aa4d7a795n;
  let fp = EMPTY;
  for (const byte of Buffer.from(text, 'utf8')) {
    let x = (fp ^ BigInt(byte)) & 0xffn;
    for (let i = 0; i < 8; i++) x = (x >> 1n) ^ (EMPTY & -(x & 1n));
    fp = (fp >> 8n) ^ x;
  }
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(fp);
  return out;
}

/** The current schemas of a directory (not its released/ copies), ready to encode and decode. */
export class Records {
  private readonly types = new Map<string, avro.Type>();
  private readonly headers = new Map<string, Buffer>();

  constructor(dir: string) {
    const registry = {};
    const names = fs.readdirSync(dir).filter((f) => f.endsWith('.avsc')).map((f) => f.slice(0, -5));
    const ordered = [...NAMED_TYPES, ...names.filter((n) => !NAMED_TYPES.includes(n))];
    for (const name of ordered) {
      const schema = JSON.parse(fs.readFileSync(path.join(dir, `${name}.avsc`), 'utf8'));
      const type = avro.Type.forSchema(schema, { registry });
      this.types.set(name, type);
      // avsc's schema() with no option is the Parsing Canonical Form
      const header = Buffer.concat([Buffer.from([0xc3, 0x01]), crc64Avro(JSON.stringify(type.schema()))]);
      this.headers.set(name, header);
    }
  }

  type(name: string): avro.Type {
    const type = this.types.get(name);
    if (!type) throw new Error(`unknown record ${name}`);
    return type;
  }

  /** A single-object encoded value; fields left out get their schema defaults. */
  encode<T extends object>(name: string, record: T): Buffer {
    const body = this.type(name).toBuffer(record);
    return Buffer.concat([this.headers.get(name) as Buffer, body]);
  }

  /** The record of a single-object value, or an Error naming why it is not one of `name`. */
  decode<T>(name: string, value: Buffer): T {
    const header = this.headers.get(name);
    if (!header) throw new Error(`unknown record ${name}`);
    if (value.length < 10 || !value.subarray(0, 10).equals(header)) {
      throw new Error(`not a current ${name} (header ${value.subarray(0, 10).toString('hex')})`);
    }
    return this.type(name).fromBuffer(value.subarray(10)) as T;
  }
}

/** The schema directory: SLUICE_SCHEMAS, else the repository's schemas/ next to this package. */
export function schemaDir(): string {
  return process.env.SLUICE_SCHEMAS ?? path.resolve(__dirname, '..', '..', '..', '..', 'schemas');
}
