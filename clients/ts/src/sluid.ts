// SLUIDs as Sluice mints them (docs/wire-format.md, "SLUIDs"): 12-bit cluster id, 42-bit Unix
// time in ms, 10-bit sequence; "s" + 13 Crockford Base32 characters. A SLUID does not fit a JS
// number, so the value is a bigint.
import { randomInt } from 'node:crypto';

export const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const CLUSTER_ID_MIN = 2;
export const CLUSTER_ID_MAX = 4094;
export const SEQUENCE_MAX = 1023;
const TIME_MAX = (1n << 42n) - 1n;

/** The minting state: the cluster id, the last millisecond used and its sequence. */
export interface Clock {
  clusterId: number;
  lastMs: number;
  sequence: number;
}

export function newClock(clusterId: number): Clock {
  if (!Number.isInteger(clusterId) || clusterId < CLUSTER_ID_MIN || clusterId > CLUSTER_ID_MAX) {
    throw new RangeError(`cluster id ${clusterId} is outside ${CLUSTER_ID_MIN}..${CLUSTER_ID_MAX}`);
  }
  return { clusterId, lastMs: 0, sequence: -1 };
}

export function compose(clusterId: number, unixMs: number, sequence: number): bigint {
  const ms = BigInt(unixMs);
  if (clusterId < 0 || clusterId > 0xfff || ms < 0n || ms > TIME_MAX || sequence < 0 || sequence > SEQUENCE_MAX) {
    throw new RangeError(`cluster ${clusterId}, time ${unixMs}, sequence ${sequence} do not fit 12/42/10 bits`);
  }
  return (BigInt(clusterId) << 52n) | (ms << 10n) | BigInt(sequence);
}

/**
 * The next id and clock: a new millisecond starts at firstSequence; the same (or an earlier)
 * millisecond counts on; past 1023 the next millisecond is borrowed.
 */
export function mint(clock: Clock, nowMs: number, firstSequence = 0): [bigint, Clock] {
  let ms = nowMs;
  let seq = firstSequence;
  if (nowMs <= clock.lastMs) {
    [ms, seq] = clock.sequence < SEQUENCE_MAX ? [clock.lastMs, clock.sequence + 1] : [clock.lastMs + 1, 0];
  }
  return [compose(clock.clusterId, ms, seq), { clusterId: clock.clusterId, lastMs: ms, sequence: seq }];
}

export function format(value: bigint): string {
  let out = 's';
  for (let shift = 60n; shift >= 0n; shift -= 5n) out += ALPHABET[Number((value >> shift) & 0x1fn)];
  return out;
}

/** Parses the text form; accepts s/S, lower case and Crockford's O=0, I=L=1. */
export function parse(text: string): bigint {
  if (text.length !== 14 || (text[0] !== 's' && text[0] !== 'S')) {
    throw new SyntaxError(`${JSON.stringify(text)} is not a SLUID: expected 's' and 13 characters`);
  }
  let value = 0n;
  for (let i = 1; i < 14; i++) {
    const c = text[i].toUpperCase().replace('O', '0').replace(/[IL]/, '1');
    const digit = ALPHABET.indexOf(c);
    if (digit < 0 || (i === 1 && digit > 0xf)) {
      throw new SyntaxError(`${JSON.stringify(text)} is not a SLUID: bad character ${JSON.stringify(text[i])}`);
    }
    value = (value << 5n) | BigInt(digit);
  }
  if (value === 0n) throw new SyntaxError(`${JSON.stringify(text)} is not a SLUID: zero`);
  return value;
}

/** Mints from the wall clock; a new millisecond starts at a random sequence in the lower half. */
export class Generator {
  private clock: Clock;

  constructor(clusterId: number) {
    this.clock = newClock(clusterId);
  }

  next(): string {
    const [value, clock] = mint(this.clock, Date.now(), randomInt(512));
    this.clock = clock;
    return format(value);
  }
}
